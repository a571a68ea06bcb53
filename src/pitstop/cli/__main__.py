"""``python -m pitstop.cli``: the same as ``pitstop``."""

import sys

from pitstop.cli import entry

sys.exit(entry())
