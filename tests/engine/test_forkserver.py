"""The fork server (``pitstop.engine.forkserver``): a worker forked from it is what ``python -m
MODULE FD`` would have been (its module as ``__main__``, its environment, working directory, import
path, thread count, a fresh numpy draw, its own session), its end is reported (an exit code, a
signal), and a worker whose environment a fork cannot honour starts as a new process. Processes:
only a real fork shows what the child inherits and how its end reaches the parent."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from pitstop.engine import forkserver

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the fork server runs on Linux")

PROBE = """
import json, os, sys
from multiprocessing.connection import Connection
import numpy, torch
conn = Connection(int(sys.argv[1]))
conn.send(json.dumps({"name": __name__, "cwd": os.getcwd(), "path0": sys.path[0], "env": os.environ.get("PROBE_ENV"),
                      "threads": torch.get_num_threads(), "draw": float(numpy.random.rand()), "sid": os.getsid(0),
                      "pid": os.getpid(), "comm": open("/proc/self/comm").read().strip(),
                      "preloaded": "xml.dom.minidom" in sys.modules}))
code = conn.recv()
print("probe says goodbye", flush=True)
if code == "raise":
    raise RuntimeError("boom")
sys.exit(code)
"""


@pytest.fixture(scope="module")
def probe_module(tmp_path_factory):
    """A module on the import path the parent gives its workers (PYTHONPATH), as a model file is."""
    root = tmp_path_factory.mktemp("probe")
    (root / "fs_probe.py").write_text(PROBE)
    return root


def _fork(server: forkserver.ForkServer, root: Path, cwd: Path, log: Path, **env: str):
    mine, theirs = socket.socketpair()
    full = {**os.environ, "PYTHONPATH": str(root), **env}
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with open(log, "wb") as out:
            proc = server.spawn("fs_probe", full, out.fileno(), theirs.fileno())
    finally:
        os.chdir(old)
    theirs.close()
    conn = Connection(mine.detach())
    assert conn.poll(60), log.read_text()
    return proc, conn, json.loads(conn.recv())


def test_a_fork_is_what_python_dash_m_would_have_been(probe_module, tmp_path):
    server = forkserver.ForkServer()
    try:
        a, conn_a, seen_a = _fork(server, probe_module, tmp_path, tmp_path / "a.log", OMP_NUM_THREADS="1",
                                  PROBE_ENV="a", PITSTOP_VARIANT="zero-grad-zeros-and-more")
        b, conn_b, seen_b = _fork(server, probe_module, probe_module, tmp_path / "b.log", OMP_NUM_THREADS="2")
        assert seen_a["name"] == "__main__" and seen_a["cwd"] == str(tmp_path) and seen_a["path0"] == str(tmp_path)
        assert seen_a["env"] == "a" and seen_b["env"] is None  # the request's environment, not the server's
        assert (seen_a["threads"], seen_b["threads"]) == (1, 2)  # OMP_NUM_THREADS, read when the fork begins
        assert seen_a["draw"] != seen_b["draw"]  # numpy's global generator drawn afresh, as in a new process
        assert seen_a["sid"] == seen_a["pid"] == a.pid  # its own session: the launcher kills its group
        assert seen_a["comm"] == "zero-grad-zeros"  # named after its variant (15 characters)
        assert a.poll() is None
        conn_a.send(3)
        assert a.wait(30) == 3 and "probe says goodbye" in (tmp_path / "a.log").read_text()
        conn_b.send("raise")
        assert b.wait(30) == 1 and "RuntimeError: boom" in (tmp_path / "b.log").read_text()
        assert not seen_a["preloaded"]
        server.preload(["xml.dom.minidom", "no_such_module_here"])  # one that fails is the workers' to fail
        c, _conn_c, seen_c = _fork(server, probe_module, tmp_path, tmp_path / "c.log")
        assert seen_c["preloaded"]  # imported once, in the server, before this fork
        c.kill()
        assert c.wait(30) == -9  # killed: the signal, as Popen reports it
    finally:
        server.close()
    assert server.proc.returncode == 0  # the server ends when its parent closes the socket


def test_a_worker_env_that_only_a_new_process_honours_is_not_forked(monkeypatch):
    base = dict(os.environ)
    assert forkserver.usable({**base, "OMP_NUM_THREADS": "1", "PITSTOP_VARIANT": "naive", "PYTHONPATH": "/x"})
    assert not forkserver.usable({**base, "LD_PRELOAD": "libjemalloc.so"})  # a user's --worker-env
    assert not forkserver.usable({k: v for k, v in base.items() if k != "HOME"} if "HOME" in base
                                 else {**base, "HOME": "/elsewhere"})  # removed, or added: changed either way
    monkeypatch.setenv("PITSTOP_FORKSERVER", "0")
    assert not forkserver.usable(dict(os.environ))


def test_a_dead_server_loses_its_workers_and_the_next_worker_gets_a_new_one(probe_module, tmp_path):
    first = forkserver.server()
    assert first is not None
    proc, _conn, _ = _fork(first, probe_module, tmp_path, tmp_path / "d.log")
    first.proc.kill()
    first.proc.wait()
    proc.kill()  # the worker outlived its server; once it is gone, its end is known without the server
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.returncode == -9
    second = forkserver.server()
    assert second is not None and second is not first and second.proc.poll() is None
    second.close()
