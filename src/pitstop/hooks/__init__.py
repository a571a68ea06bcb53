"""The run-time session under the doctor and the profiler: ``session`` installs PyTorch's global
hooks (module forward, optimizer step, autograd backward, DataLoader ``next``) once and removes them,
and dispatches their events to ``Consumer`` objects (``consumer``); ``steps`` counts training steps,
``sites`` names the user's source line behind an event, ``watch`` follows a DataLoader's worker
processes. It imports no capability: the doctor's checks and the profiler's phases are consumers."""
