"""``pitstop optimize``: search the inference techniques of ``pitstop.bench.variants`` on the user's
model within a time budget (``search``, under ``settings.OptimizeSettings``), apply the winner (``api``: ``optimize``,
``OptimizedModel``) and write it as a recipe that runs without pitstop (``recipe``).
``pitstop.optimize(...)`` is ``pitstop.optimize.api.optimize``."""

from pitstop._callable import make_callable

make_callable(__name__, "pitstop.optimize.api:optimize")
