"""Every check's ``state_dict()`` / ``load_state_dict()`` round-trips, after a real run has filled it."""

import weakref
from collections import deque

import pytest
import torch
from torch import nn

from pitstop.doctor import Doctor
from pitstop.doctor.checks import CHECKS, GradNormAnomaly, StaleGradients


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, weakref.ref):
        return isinstance(b, weakref.ref) and a() is b()
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple, deque)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a is b or a == b


def busy_run(steps=12):
    """A run that gives every check something to hold: dropout, a ReLU, a DataLoader, an
    evaluation forward, retained graphs and losses kept in a list."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader([(torch.randn(8), torch.randn(1)) for _ in range(4 * steps)], batch_size=4)
    kept = []
    with Doctor(model, opt) as dr:
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward(retain_graph=True)
            opt.step()
            kept.append(loss)
            with torch.no_grad():
                model(x)
    return dr, kept


@pytest.fixture(scope="module")
def watched():
    return busy_run()


@pytest.mark.parametrize("cls", CHECKS, ids=lambda c: c.__name__)
def test_state_dict_round_trips(cls, watched):
    check = next(c for c in watched[0].checks if type(c) is cls)
    state = check.state_dict()
    assert set(state) == set(vars(cls()))  # its own state, nothing the doctor bound to it
    fresh = cls()
    fresh.load_state_dict(state)
    assert same(fresh.state_dict(), state)
    for value in vars(fresh).values():  # containers are copies: the two checks go on independently
        if isinstance(value, (dict, list, set, deque)) and value:
            assert all(value is not v for v in vars(check).values())


def test_load_state_dict_names_an_unknown_key():
    with pytest.raises(ValueError, match="unknown key 'histroy'"):
        GradNormAnomaly().load_state_dict({"histroy": []})


def test_a_restored_check_carries_on_where_the_saved_one_stopped():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    data = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(13)]

    def steps(dr, batches, scale=1.0):
        with dr:
            for x, y in batches:
                opt.zero_grad()
                nn.functional.mse_loss(model(x), y * scale).backward()
                opt.step()

    first = GradNormAnomaly()
    steps(Doctor(model, opt, checks=[first]), data[:12])  # twelve ordinary steps: a running median
    restored, blank = GradNormAnomaly(), GradNormAnomaly()
    restored.load_state_dict(first.state_dict())
    with_history, without = Doctor(model, opt, checks=[restored]), Doctor(model, opt, checks=[blank])
    steps(with_history, data[12:], scale=1e4)
    assert [f.code for f in with_history.report()] == ["PIT107"]  # the spike, against the restored median
    steps(without, data[12:], scale=1e4)
    assert without.report().findings == []  # no history: no median to compare with
    assert StaleGradients().state_dict() == {"left": {}, "accumulated": {}, "cleared": set(), "held": None}
