"""The measurement core: variants, timing, statistics, memory, fidelity, workers, the bench run.

Implementation package; the public entry points are ``pitstop.bench`` and the CLI."""
