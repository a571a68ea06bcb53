"""A fork server for worker processes: torch is imported once per run, and each worker is a fork of
that process instead of a new interpreter that imports torch again.

A new Python process spends 1.4-1.6 s (on the 2-core dev machine) importing torch before a worker
can take its first request; a search starts dozens of workers (replicas, stages, variants), and on
two cores that import competes with the worker being timed. The server (``python -m
pitstop.engine.forkserver FD``, started at the first worker and ended with its parent) imports
torch and pitstop's worker modules, runs no torch operation (no thread pool exists to be copied
into a fork), and forks on request. The child does what ``python -m MODULE ARGS`` would: its own
session (``setsid``), the log as stdout and stderr, the request's working directory, environment
and import path, numpy's global generator drawn again, ``OMP_NUM_THREADS`` as the thread count, and
the module run as ``__main__`` with a normal interpreter exit (``atexit`` handlers run).

The server reports each child's exit status (it is the parent that can wait for them);
``ForkedProcess`` gives the launcher what it used from ``subprocess.Popen``: ``pid``, ``poll()``,
``wait()``, ``kill()``. A request whose environment names a variable that only takes effect when a
process starts (anything outside ``FORKABLE_ENV``'s additions, e.g. a user's ``--worker-env``), a
platform without ``fork``, or ``PITSTOP_FORKSERVER=0`` starts a plain new process instead."""

from __future__ import annotations

import atexit
import gc
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from typing import Any

# read after start-up: by the child, inductor, pitstop, and torch.distributed at init_process_group
RANK_ENV = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
                      "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT",
                      "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
                      "TORCHELASTIC_SIGNALS_TO_HANDLE", "TORCH_NCCL_ASYNC_ERROR_HANDLING"})
FORKABLE_ENV = frozenset({"OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONPATH", "TORCHINDUCTOR_CACHE_DIR",
                          "PITSTOP_VARIANT"}) | RANK_ENV
PRELOAD = ("torch", "pitstop.bench.worker", "pitstop.train.worker", "pitstop.train.script.child",
           "pitstop.generate.session")
_MAX = 1 << 20  # the largest request (an environment and an import path)


def _enabled() -> bool:
    """Forks can run here: Linux, and not turned off (``PITSTOP_FORKSERVER=0``)."""
    return sys.platform == "linux" and os.environ.get("PITSTOP_FORKSERVER", "1") != "0"


def usable(env: dict[str, str]) -> bool:
    """Whether a worker with environment ``env`` may be a fork: on Linux, not turned off, and every
    variable that differs from this process's is one read after start-up."""
    if not _enabled():
        return False
    changed = {k for k in set(env) | set(os.environ) if env.get(k) != os.environ.get(k)}
    return changed <= FORKABLE_ENV


class ForkedProcess:
    """A worker forked by the server: ``pid``, ``poll()``, ``wait(timeout)``, ``kill()``, ``returncode``."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server, self.pid = server, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            time.sleep(0.01)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, 9)
            except OSError:
                pass


class ForkServer:
    """The parent's handle on its server: ``spawn()`` a worker, ``status()`` of one, ``close()``."""

    def __init__(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen([sys.executable, "-m", __name__, str(theirs.fileno())],
                                     pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        theirs.close()
        self.started_env = {k: v for k, v in os.environ.items() if k not in FORKABLE_ENV}
        self.sock, self.lock = mine, threading.Lock()
        self.exited: dict[int, int] = {}
        self.requests = 0

    def spawn(self, module: str, env: dict[str, str], log_fd: int, conn_fd: int,
              timeout_s: float = 120.0) -> ForkedProcess:
        """Fork a worker running ``python -m module FD``, its stdout and stderr ``log_fd``, FD its
        copy of ``conn_fd`` (as ``pass_fds`` would give it). Raises ``OSError`` when the server is gone."""
        with self.lock:
            self.requests += 1
            request = {"id": self.requests, "module": module, "env": env, "cwd": os.getcwd()}
            socket.send_fds(self.sock, [pickle.dumps(request)], [log_fd, conn_fd])
            deadline = time.monotonic() + timeout_s
            while True:
                reply = self._read(deadline - time.monotonic())
                if reply is None:
                    raise OSError("the fork server did not answer")
                if reply[0] == "started" and reply[1] == request["id"]:
                    return ForkedProcess(self, reply[2])
                if reply[0] == "failed" and reply[1] == request["id"]:
                    raise OSError(f"the fork server could not start a worker: {reply[2]}")

    def preload(self, modules: list[str], timeout_s: float = 120.0) -> None:
        """Import ``modules`` in the server (each one that fails is left to the workers): a run that
        learns its workers will import a heavy library (transformers under an HF Trainer script,
        Lightning) pays for it once. Raises ``OSError`` when the server is gone."""
        with self.lock:
            self.requests += 1
            ident = self.requests
            self.sock.send(pickle.dumps({"id": ident, "preload": list(modules)}))
            deadline = time.monotonic() + timeout_s
            while True:
                reply = self._read(deadline - time.monotonic())
                if reply is None:
                    raise OSError("the fork server did not answer")
                if reply[0] == "preloaded" and reply[1] == ident:
                    return

    def status(self, pid: int) -> int | None:
        """The exit code of a finished worker (negative: the signal), or None while it runs."""
        with self.lock:
            while self._read(0.0) is not None:
                pass
            if pid in self.exited:
                return self.exited[pid]
            if self.proc.poll() is not None:  # the server died: a worker that is gone is lost
                try:
                    os.kill(pid, 0)
                except OSError:
                    return self.exited.setdefault(pid, -9)
            return None

    def _read(self, timeout: float) -> tuple[Any, ...] | None:
        """One message from the server (exit statuses recorded as they come), or None."""
        self.sock.settimeout(max(timeout, 0.0))
        try:
            data = self.sock.recv(_MAX)
        except (TimeoutError, BlockingIOError, InterruptedError):
            return None
        except OSError:
            return None
        if not data:
            return None
        reply = pickle.loads(data)
        if reply[0] == "exit":
            self.exited[reply[1]] = reply[2]
        return reply

    def close(self) -> None:
        """End the server (its live workers are the launcher's to end)."""
        try:
            self.sock.close()
        finally:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_SERVER: ForkServer | None = None
_SERVER_LOCK = threading.Lock()


def server() -> ForkServer | None:
    """This process's fork server, started at the first call; None where it cannot run."""
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is not None and (_SERVER.proc.poll() is not None or _SERVER.started_env != {
                k: v for k, v in os.environ.items() if k not in FORKABLE_ENV}):
            _SERVER.close()  # it died (killed from outside), or this process's environment changed
            _SERVER = None
        if _SERVER is None:
            try:
                _SERVER = ForkServer()
            except OSError:
                return None
            atexit.register(_SERVER.close)
        return _SERVER


def preload(modules: list[str]) -> None:
    """Have this process's fork server import ``modules`` before its next forks (nothing where no
    server can run): for a library every worker of the run will import."""
    if not _enabled():
        return
    srv = server()
    if srv is not None:
        try:
            srv.preload(modules)
        except OSError:
            pass


# ----- the server's side ---------------------------------------------------------------------------


def _serve(sock: socket.socket) -> dict[str, Any] | None:
    """Answer requests until the parent goes; returns only in a forked child (its request). The
    server sleeps until a request or a child's end (SIGCHLD, through the wake-up pipe): no polling
    wakes it while a worker is timed."""
    import select
    import signal

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        _reap(sock)
        ready, _, _ = select.select([sock.fileno(), wake_r], [], [], 5.0)
        if wake_r in ready:
            os.read(wake_r, 512)
        if sock.fileno() not in ready:
            continue
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, _MAX, 2)
        except OSError:
            return None
        if not data:
            return None
        request = pickle.loads(data)
        if "preload" in request:
            _import(request["preload"])
            sock.send(pickle.dumps(("preloaded", request["id"])))
            continue
        gc.freeze()  # what the server holds is never collected in a fork: no pass touches (copies) its pages
        try:
            pid = os.fork()
        except OSError as exc:
            sock.send(pickle.dumps(("failed", request["id"], str(exc))))
            for fd in fds:
                os.close(fd)
            continue
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (wake_r, wake_w):
                os.close(fd)
            sock.close()
            request["fds"] = fds
            return request
        for fd in fds:
            os.close(fd)
        sock.send(pickle.dumps(("started", request["id"], pid)))


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        try:
            sock.send(pickle.dumps(("exit", pid, os.waitstatus_to_exitcode(status))))
        except OSError:
            return


def _become(request: dict[str, Any]) -> None:
    """In the forked child: become ``python -m MODULE ARGS`` as the request describes, and run it."""
    import importlib
    import runpy
    import warnings

    os.setsid()
    log_fd, conn_fd = request["fds"]
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(devnull)
    os.close(log_fd)
    os.chdir(request["cwd"])
    env = request["env"]
    os.environ.clear()
    os.environ.update(env)
    base = [p for p in sys.path if p not in _START_PATH]
    sys.path[:] = [request["cwd"], *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p], *base]
    importlib.invalidate_caches()
    _name(env.get("PITSTOP_VARIANT", ""))
    if "numpy" in sys.modules:  # a fresh process seeds numpy's global generator from the OS; so does a fork
        sys.modules["numpy"].random.seed()
    threads = env.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:  # libgomp read it when the server started, not now
        import torch

        torch.set_num_threads(int(threads))
    sys.argv = [request["module"], str(conn_fd)]
    # preloaded here, the module is run again as __main__ (as `python -m` runs it beside any import of it)
    warnings.filterwarnings("ignore", r".* found in sys\.modules after import of package", RuntimeWarning)
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)


_START_PATH: list[str] = []


def _name(variant: str) -> None:
    """Name the process after its variant (/proc/PID/comm, what ``ps -L`` and ``top`` show): a fork's
    /proc environment is the server's, so its ``PITSTOP_VARIANT`` cannot be read there."""
    if not variant:
        return
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, variant.encode()[:15], 0, 0, 0)  # 15 = PR_SET_NAME
    except (OSError, AttributeError):
        pass


def _import(names: tuple[str, ...] | list[str]) -> None:
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # a module that cannot load here loads (and fails) in the worker
            pass


def main(argv: list[str]) -> None:
    """The server: ``python -m pitstop.engine.forkserver FD``."""

    _START_PATH[:] = [p for p in sys.path[:1] + os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    _import(PRELOAD)
    request = _serve(socket.socket(fileno=int(argv[1])))
    if request is not None:
        _become(request)


if __name__ == "__main__":
    main(sys.argv)
