"""A variant as a job of N ranks, as ``torchrun --standalone --nproc-per-node N`` starts them (the
launcher of torchrun jobs; train's script mode names the module its ranks run, ``MODULE``, in a
subclass). Every rank speaks the worker protocol with pitstop; ``TorchrunWorker`` sends each request to all ranks
and merges their answers: a step's time is the slowest rank's (every rank waits for it in the
all-reduce), the loss is rank 0's, a failure of any rank fails the variant (naming the rank).

Where the run's fork server can start them (``pitstop.engine.forkserver``), the ranks are its forks
with the environment torchrun gives its ranks (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``
and a free ``MASTER_PORT``, ``TORCHELASTIC_*``, one OpenMP thread unless set), rank 0 hosting the
rendezvous store; a rank that fails ends the others, as torchrun's agent does. A job start then costs
no interpreter and no torch import per rank (on 2 cores ~3 s of each variant's start, and the agent's
process). Otherwise (``PITSTOP_FORKSERVER=0``, a ``--worker-env`` a fork cannot honour) the job is
``torchrun --standalone --nproc-per-node N -m MODULE --connect ADDRESS``, each rank connecting to
pitstop's listener, on torchrun's own rendezvous."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pitstop.engine import forkserver
from pitstop.engine.launch import START_LIMIT_S, WorkerFailed, last_line_of
from pitstop.engine.scripts import import_path


class TorchrunWorker:
    """``nproc`` ranks of one variant, driven together; a subclass names the module each rank runs
    (``MODULE``: ``python -m MODULE --connect ADDRESS``, or the fork server's spawn of it)."""

    MODULE = ""

    def __init__(self, log_path: Path, nproc: int, extra_env: dict[str, str]) -> None:
        self.log_path, self.nproc = log_path, nproc
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(import_path()), **extra_env}
        self.conns: list[Connection] = []
        self.server: socket.socket | None = None  # torchrun's ranks connect to it (LOG.sock); forks need none
        with open(log_path, "wb") as log:
            self.proc: subprocess.Popen[bytes] | ForkedRanks
            forked = self._fork(env, log.fileno())
            if forked is not None:
                self.proc = forked
            else:
                address = str(log_path.with_suffix(".sock"))
                self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.server.bind(address)
                self.server.listen(nproc)
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
                     "-m", self.MODULE, "--connect", address],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.pending = ""
        self.sent_at = time.monotonic()

    def _fork(self, env: dict[str, str], log_fd: int) -> ForkedRanks | None:
        """The ranks as forks of the run's fork server, connected by socket pairs (ordered by rank),
        or None where they cannot be forks: then torchrun starts them."""
        envs = rank_envs(env, self.nproc)
        if not all(forkserver.usable(e) for e in envs) or (srv := forkserver.server()) is None:
            return None
        ranks: list[forkserver.ForkedProcess] = []
        try:
            for rank, rank_env in enumerate(envs):
                parent, child = socket.socketpair()
                try:
                    if rank == 0:
                        ranks.append(srv.spawn(self.MODULE, rank_env, log_fd, child.fileno()))
                    else:
                        with open(rank_log(self.log_path, rank), "wb") as log:
                            ranks.append(srv.spawn(self.MODULE, rank_env, log.fileno(),
                                                   child.fileno()))
                finally:
                    child.close()
                self.conns.append(Connection(parent.detach()))
        except OSError:
            ForkedRanks(ranks).kill()
            for conn in self.conns:
                conn.close()
            self.conns = []
            return None
        return ForkedRanks(ranks)

    def _connect(self, timeout_s: float) -> None:
        """Accept every rank's connection, ordered by rank."""
        if len(self.conns) == self.nproc or self.server is None:
            return
        server = self.server
        limit = max(START_LIMIT_S, timeout_s)
        deadline = time.monotonic() + limit
        ranked: dict[int, Connection] = {}
        while len(ranked) < self.nproc:
            server.settimeout(max(0.1, min(1.0, deadline - time.monotonic())))
            try:
                sock, _ = server.accept()
            except TimeoutError:
                sock = None
            if sock is not None:
                sock.settimeout(None)
                conn = Connection(sock.detach())
                _, rank = conn.recv()
                ranked[int(rank)] = conn
            elif self.proc.poll() is not None:
                self._raise_dead("start-up")
            if time.monotonic() > deadline:
                self.kill()
                raise WorkerFailed(f"the torchrun job's ranks did not all connect within {limit:.3g} s")
        self.conns = [ranked[r] for r in range(self.nproc)]

    def send(self, method: str, **kwargs: Any) -> None:
        """Start a request on every rank."""
        self._connect(float(kwargs.get("timeout_s", 300.0)) if method == "setup" else 300.0)
        self.pending, self.sent_at = method, time.monotonic()
        for rank, conn in enumerate(self.conns):
            try:
                conn.send((method, kwargs))
            except OSError:
                self._raise_dead(method, rank)

    def receive(self, timeout_s: float) -> Any:
        """Every rank's answer to the pending request, merged (``merge``)."""
        replies = [self._one(conn, rank, timeout_s) for rank, conn in enumerate(self.conns)]
        return merge(self.pending, replies)

    def _one(self, conn: Connection, rank: int, timeout_s: float) -> Any:
        deadline = self.sent_at + timeout_s
        while True:
            if conn.poll(0.05):
                try:
                    reply = conn.recv()
                except (EOFError, OSError):
                    self._raise_dead(self.pending, rank)
                if reply[0] == "ready":
                    continue
                if reply[0] == "ok":
                    return reply[1]
                self._raise_if_another_died(rank)  # the cause (a collective's peer gone) before its echo
                raise WorkerFailed(f"rank {rank}: {self.pending} raised {reply[1]}")
            if self.proc.poll() is not None:
                self._raise_dead(self.pending, rank)
            if time.monotonic() > deadline:
                self.kill()
                raise WorkerFailed(f"rank {rank} timed out after {timeout_s:.3g} s in {self.pending} (timeout_s)")

    def _raise_if_another_died(self, rank: int, within_s: float = 1.0) -> None:
        """A rank that raised in a collective (gloo's "Connection reset by peer") often only echoes
        another rank's death: where the ranks are forks, whose exits are seen one by one, a rank
        that ended within ``within_s`` is named as the failure instead."""
        if not isinstance(self.proc, ForkedRanks):
            return
        deadline = time.monotonic() + within_s
        while self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.proc.failed is not None and self.proc.failed != rank:
            self._raise_dead(self.pending)

    def _raise_dead(self, what: str, rank: int | None = None) -> None:
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a rank left and the others wait for it in a collective
            self.kill()
            code = self.proc.wait()
        if isinstance(self.proc, ForkedRanks) and self.proc.failed is not None:
            rank = self.proc.failed
        who = f"rank {rank} of " if rank is not None else ""
        own = rank if isinstance(self.proc, ForkedRanks) else None  # a forked rank above 0 writes its own log
        tail = last_line_of(rank_log(self.log_path, own) if own else self.log_path)
        raise WorkerFailed(f"{who}the torchrun job exited with code {code} during {what}"
                           + (f": {tail}" if tail else ""))

    def close(self) -> None:
        """Ask every rank to exit; kill the job if it does not."""
        for conn in self.conns:
            try:
                conn.send(("exit", {}))
            except OSError:
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        self._cleanup()

    def kill(self) -> None:
        """Kill the whole job now (torchrun and its ranks, or each forked rank, lead their own process group)."""
        if isinstance(self.proc, ForkedRanks):
            self.proc.kill()
        elif self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                self.proc.kill()
            self.proc.wait()
        self._cleanup()

    def _cleanup(self) -> None:
        for conn in self.conns:
            conn.close()
        self.conns = []
        if self.server is not None:
            self.server.close()


class ForkedRanks:
    """The forked ranks of one job, as ``subprocess.Popen`` of torchrun would be seen: ``poll()`` is
    None while every rank runs, a failed rank's exit code once one fails (the others are then killed,
    as torchrun's agent kills them; ``failed`` is its rank), 0 once all have exited cleanly."""

    def __init__(self, ranks: list[forkserver.ForkedProcess]) -> None:
        self.ranks = ranks
        self.returncode: int | None = None
        self.failed: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            codes = [r.poll() for r in self.ranks]
            bad = [(rank, code) for rank, code in enumerate(codes) if code not in (None, 0)]
            if bad:
                self.failed = bad[0][0]
                self.kill()
                self.returncode = bad[0][1]
            elif all(code == 0 for code in codes):
                self.returncode = 0
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("the forked ranks", timeout or 0.0)
            time.sleep(0.01)
        return code

    def kill(self) -> None:
        """Kill every rank that runs, with the processes it started (its own process group)."""
        for rank in self.ranks:
            if rank.poll() is None:
                try:
                    os.killpg(rank.pid, signal.SIGKILL)
                except OSError:
                    rank.kill()
        for rank in self.ranks:
            try:
                rank.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        if self.returncode is None:
            self.returncode = next((r.returncode for r in self.ranks if r.returncode), -signal.SIGKILL)


def rank_log(log_path: Path, rank: int) -> Path:
    """Where forked rank ``rank`` (> 0) writes its output; rank 0 writes the variant's log."""
    return log_path.with_name(f"{log_path.name}.rank{rank}")


def rank_envs(env: dict[str, str], nproc: int) -> list[dict[str, str]]:
    """Each rank's environment, as ``torchrun --standalone`` sets it, except that rank 0 hosts the
    rendezvous store on a free port (no agent holds one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    shared = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(nproc),
              "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_NAME": "default",
              "ROLE_WORLD_SIZE": str(nproc), "TORCHELASTIC_RUN_ID": uuid.uuid4().hex,
              "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
              "TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGTERM,SIGINT,SIGHUP,SIGQUIT", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
    threads = {} if "OMP_NUM_THREADS" in env or nproc == 1 else {"OMP_NUM_THREADS": "1"}  # torchrun's default
    return [{**env, **threads, **shared, "RANK": str(r), "LOCAL_RANK": str(r), "ROLE_RANK": str(r)}
            for r in range(nproc)]


def merge(method: str, replies: list[Any]) -> Any:
    """One answer from every rank's: step times are the slowest rank's, the rest rank 0's."""
    first = replies[0]
    if method in ("run", "trajectory") and isinstance(first, dict) and "times" in first:
        width = min(len(r["times"]) for r in replies)
        times = [max(r["times"][i] for r in replies) for i in range(width)]
        merged = {**first, "times": times}
        for key in ("cpu_times", "optimizer_times", "data_times"):
            if all(key in r for r in replies):
                width = min(len(r[key]) for r in replies)
                merged[key] = [max(r[key][i] for r in replies) for i in range(width)]
        if method == "trajectory":
            tail = sorted(times[-5:])
            merged["per_call_s"] = tail[len(tail) // 2] if tail else first.get("per_call_s")
        return merged
    if method == "prepare" and isinstance(first, dict):
        return {**first, "first_call_s": max(r.get("first_call_s") or 0.0 for r in replies),
                "details": {**(first.get("details") or {}), "before_first_step_s": max(
                    (r.get("details") or {}).get("before_first_step_s") or 0.0 for r in replies)}}
    if method == "warmup" and isinstance(first, dict):
        return {**first, "per_call_s": max(r["per_call_s"] for r in replies)}
    if method == "memory" and isinstance(first, dict):
        return {**first, "peak_memory_bytes": max(r.get("peak_memory_bytes") or 0 for r in replies)}
    return first
