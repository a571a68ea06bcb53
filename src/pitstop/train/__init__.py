"""``pitstop train``: measure the training-step techniques on the user's model (precision,
compile, optimizer implementation, zero_grad, channels_last, threads, micro-batching,
checkpointing), keep the fastest one that still trains the same, and print it as a recipe.

Layers, bottom up: ``config`` (a training variant, every axis stated), ``variants/`` (one config
axis + handler per file; the handlers write the recipe, and the recipe is what runs), ``problem``
(the user's optimizer and loss as code), ``recipe`` (the module ``--save`` writes), ``fidelity``
(step-1 gradients, the loss trajectory against the fp32 seed spread, GradScaler skips), ``worker``/
``launch`` (a variant in its own process), ``group`` (variants timed interleaved), ``search``
(probe, prune, combine, finals), ``result``/``api``. ``pitstop.train(...)`` is ``pitstop.train.api.train``."""

from pitstop._callable import make_callable

make_callable(__name__, "pitstop.train.api:train")
