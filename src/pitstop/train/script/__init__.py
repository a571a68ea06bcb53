"""``pitstop train SCRIPT``: the training-step techniques measured inside the user's own script.

Each variant is the script with the technique's edits applied (``edits``: autocast around the
forward and loss statements, ``.compile()`` of the model, the optimizer's fused / foreach flag,
``zero_grad(set_to_none=False)``, ``channels_last``, ``torch.set_num_threads``; under Lightning or
the HF Trainer, their own flags), run in its own process (``child``) on the script's own data,
loss, parameter groups and schedule. The child pauses at optimizer-step boundaries and runs the
steps pitstop asks for (the worker protocol of ``pitstop.bench``), so variants are profiled one
at a time and timed in interleaved rounds like any other training variant. A first run of the
unmodified script (``discover``) finds the training step: the optimizer constructions, the
forward and backward call sites, the model's binding, the Trainer; its step-1 gradients are the
reference. The winner is delivered as the exact edit: a unified diff (``--patch``)."""
