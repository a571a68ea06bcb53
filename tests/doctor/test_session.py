"""The session alone (no checks): a bare consumer sees a real training step's events in order,
a consumer that raises is turned off, and detach restores every hook."""

import torch
from torch import nn
from torch.nn.modules import module as torch_module
from torch.optim import optimizer as torch_optimizer
from torch.utils.data import DataLoader
from torch.utils.data import dataloader as torch_dataloader

from pitstop.hooks.session import Consumer, Session


class Recorder(Consumer):
    def __init__(self):
        self.events = []

    def on_data_start(self):
        self.events.append("data_start")

    def on_data(self, wait_s):
        assert wait_s >= 0
        self.events.append("data")

    def on_root_forward_start(self, module):
        self.events.append("forward_start")

    def on_root_forward(self, module, output, grad_enabled):
        self.events.append("forward" if grad_enabled else "forward(no grad)")

    def on_backward(self, tensors, gradients, retain_graph, site):
        assert "test_session.py" in site
        self.events.append("backward")

    def on_backward_done(self, tensors, retain_graph, site):
        self.events.append("backward_done")

    def on_step_start(self, optimizer):
        self.events.append("step_start")

    def on_step(self, optimizer):
        self.events.append("step")

    def on_step_done(self, optimizer):
        self.events.append("step_done")

    def on_iteration(self, step):
        self.events.append(f"iteration {step}")

    def on_finish(self):
        self.events.append("finish")


def hooks_state(model):
    return (torch.autograd.backward, torch_dataloader._BaseDataLoaderIter.__next__,
            len(torch_module._global_forward_pre_hooks), len(torch_module._global_forward_hooks),
            len(torch_optimizer._global_optimizer_pre_hooks), len(torch_optimizer._global_optimizer_post_hooks),
            [len(p._post_accumulate_grad_hooks or {}) for p in model.parameters()])


def test_a_bare_consumer_sees_each_phase_start_and_end_in_order_and_detach_restores_every_hook():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader([(torch.randn(4), torch.randn(1)) for _ in range(4)], batch_size=2)
    before = hooks_state(model)
    session, recorder = Session(model, opt), Recorder()
    session.subscribe(recorder)
    session.attach()
    assert hooks_state(model) != before
    for x, y in loader:
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    session.detach()
    step = ["data_start", "data", "forward_start", "forward", "backward", "backward_done",
            "step_start", "step", "step_done"]
    assert recorder.events == [*step, "iteration 1", *step, "iteration 2", "data_start", "data", "finish"]
    assert hooks_state(model) == before
    assert session.counter.completed() == 2 and session.name_of(model[2].weight) == "model.2.weight"


def test_events_nobody_overrides_are_not_dispatched_and_a_raising_consumer_is_turned_off():
    class Grads(Consumer):
        def __init__(self):
            self.seen = 0

        def on_grad(self, param):
            self.seen += 1

    class Broken(Consumer):
        def on_step(self, optimizer):
            raise ValueError("boom")

    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    session, grads = Session(model, opt), Grads()
    session.subscribe(grads)
    session.subscribe(Broken())
    assert session.wants("on_grad") and not session.wants("on_data") and not session.wants("on_root_forward")
    with torch.no_grad():
        weight = model.weight.clone()
    session.attach()
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
    session.detach()
    assert grads.seen == 6  # weight and bias, three steps
    assert len(session.internal) == 1 and "boom" in session.internal[0]
    assert not session.wants("on_step") and not torch.equal(model.weight, weight)  # training went on
    session.unsubscribe(grads)
    assert not session.wants("on_grad")


def test_a_closure_step_reports_its_step_after_the_closure_ran():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=2)
    session, recorder = Session(model, opt), Recorder()
    session.subscribe(recorder)
    session.attach()
    x, y = torch.randn(8, 4), torch.randn(8, 1)

    def closure():
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    opt.step(closure)
    session.detach()
    events = recorder.events
    assert events[0] == "step_start" and events.index("backward") < events.index("step")
    assert events[-3:] == ["step_done", "iteration 1", "finish"] and events.count("step") == 1


def test_a_check_of_its_own_reports_through_the_doctor_old_style_and_new():
    import pitstop

    class BigBatch(pitstop.doctor.Check):
        code = "PIT402"

        def on_root_forward(self, module, output, grad_enabled):
            if output.shape[0] > 2:
                self.found(self.code, self.name_of(module), "a big batch")

    class OldStyle(pitstop.doctor.Check):
        code = "PIT110"

        def on_step(self, optimizer):
            self.doctor.found(self.code, self.doctor.name_of(optimizer), "a step")

    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.Doctor(model, opt, checks=[BigBatch(), OldStyle()]) as dr:
        for _ in range(2):
            opt.zero_grad()
            model(torch.randn(3, 4)).sum().backward()
            opt.step()
    found = {(f.code, f.where, f.count) for f in dr.report()}
    assert found == {("PIT402", "model", 2), ("PIT110", "SGD", 2)}


def test_sync_every_must_be_a_positive_number_of_steps():
    import pytest

    import pitstop

    with pytest.raises(ValueError, match="sync_every: expected a positive number of steps, got 0"):
        pitstop.Doctor(sync_every=0)
