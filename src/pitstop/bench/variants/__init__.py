"""Every technique as a typed config and the handler that applies it to a model and prints it as
code, as torchao's ``quantize_(model, Config())`` with one registered handler:

- ``config.py``: ``VariantConfig`` (every axis stated; its name joins the non-default parts),
  ``parse_variant`` (user text only), ``prepare`` (the plain eager call of the references);
- one file per axis, each with the axis's values and its handler (gate + recipe code):
  ``grad.py``, ``precision.py``, ``compile.py``, ``quant.py``, ``layout.py``, ``threads.py``,
  ``runtime.py`` (ONNX Runtime); ``base.py`` holds what they share (``Target``, ``Code``,
  ``Technique``);
- ``handlers.py``: the registry and the verbs: ``gate``, ``recipe_source``, ``build``, ``apply``;
- ``code.py``: the recipe module's text."""
