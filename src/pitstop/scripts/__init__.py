"""The user's training script in a child process: the run discipline of ``pitstop doctor``,
``pitstop profile`` and ``pitstop train SCRIPT``.

pitstop's own process (``launch``) never runs the user's code: it checks the arguments and the
output paths, starts ``python -m pitstop.scripts.child``, sends it the job, collects the
documents the child sends (a snapshot every few seconds, then the final one) and writes the
outputs itself. The child (``child``) runs the script as ``__main__`` under the doctor's or the
profiler's hooks. A script that exits hard (``os._exit``, a segfault, the out-of-memory killer)
leaves its last snapshot; a script that changes directory cannot move pitstop's outputs; the
script's prints never reach a JSON stream on stdout."""
