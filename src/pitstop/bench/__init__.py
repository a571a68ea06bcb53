"""``pitstop bench``: measure variants of a model (grad modes first) on this machine, interleaved,
each checked for fidelity against the fp32 eager reference.

Layers, bottom up: ``variants/`` (each technique as a config and the handler that applies it),
``timer``/``fidelity``/``result`` (how one variant is timed and judged; the values), ``source``/
``worker``/``launch`` (a model rebuilt and run in an isolated process), ``group`` (variants run
interleaved across workers), ``settings`` (``RunSettings``, ``BenchSettings``: validated once,
passed down whole), ``runner``/``api`` (a whole bench run). ``pitstop.bench(...)`` is
``pitstop.bench.api.bench``."""

from pitstop._callable import make_callable

make_callable(__name__, "pitstop.bench.api:bench")
