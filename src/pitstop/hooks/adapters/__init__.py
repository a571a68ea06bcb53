"""The one adapter base for training frameworks, under the doctor's and the profiler's callbacks:
``base.Watching`` (a watcher's run over a framework's training), and each framework's side of it,
``lightning.WatchingCallback`` and ``hf.WatchingCallback`` (imported on first use; each needs its
framework installed). A capability's callback subclasses one and says how to make its watcher."""
