"""Every technique as a typed config (``config.VariantConfig``) and the handler that applies it to a
model and prints it as code (``handlers``, ``code``)."""
