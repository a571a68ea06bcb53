"""A script variant as a torchrun job: ``torchrun --standalone --nproc-per-node N -m
pitstop.train.script.child --connect ADDRESS SCRIPT``. Every rank connects to pitstop's listener
and speaks the worker protocol; ``TorchrunWorker`` sends each request to all ranks and merges their
answers: a step's time is the slowest rank's (every rank waits for it in the all-reduce), the loss
is rank 0's, a failure of any rank fails the variant (naming the rank). The job runs on torchrun's
own rendezvous on localhost: no launcher or port of pitstop's."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pitstop.bench.launch import START_LIMIT_S, WorkerFailed, last_line_of
from pitstop.scripts.launch import import_path


class TorchrunWorker:
    """``nproc`` ranks of one variant, driven together."""

    def __init__(self, log_path: Path, nproc: int, extra_env: dict[str, str]) -> None:
        self.log_path, self.nproc = log_path, nproc
        address = str(log_path.with_suffix(".sock"))
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(address)
        self.server.listen(nproc)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(import_path()), **extra_env}
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
                 "-m", "pitstop.train.script.child", "--connect", address],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.conns: list[Connection] = []
        self.pending = ""
        self.sent_at = time.monotonic()

    def _connect(self, timeout_s: float) -> None:
        """Accept every rank's connection, ordered by rank."""
        if len(self.conns) == self.nproc:
            return
        limit = max(START_LIMIT_S, timeout_s)
        deadline = time.monotonic() + limit
        ranked: dict[int, Connection] = {}
        while len(ranked) < self.nproc:
            self.server.settimeout(max(0.1, min(1.0, deadline - time.monotonic())))
            try:
                sock, _ = self.server.accept()
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
                raise WorkerFailed(f"rank {rank}: {self.pending} raised {reply[1]}")
            if self.proc.poll() is not None:
                self._raise_dead(self.pending, rank)
            if time.monotonic() > deadline:
                self.kill()
                raise WorkerFailed(f"rank {rank} timed out after {timeout_s:.3g} s in {self.pending} (timeout_s)")

    def _raise_dead(self, what: str, rank: int | None = None) -> None:
        code = self.proc.wait(timeout=30)
        who = f"rank {rank} of " if rank is not None else ""
        tail = last_line_of(self.log_path)
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
        """Kill the whole job now (torchrun and its ranks lead their own process group)."""
        if self.proc.poll() is None:
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
        self.server.close()


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
