"""``python -m pitstop`` (e.g. under ``torchrun -m pitstop doctor train.py``)."""

import sys

from pitstop.cli import entry

sys.exit(entry())
