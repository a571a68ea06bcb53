"""Each run-time code on a small real training loop with the bug, and the correct loop clean."""

import math

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

import pitstop
from pitstop.doctor import Doctor


def mlp(seed=0, dropout=0.0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 1))


def batches(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 8, generator=g), torch.randn(4, 1, generator=g)) for _ in range(n)]


def train(model, opt, steps=6, *, zero=True, keep=None, accumulate=1):
    for i, (x, y) in enumerate(batches(steps * accumulate)):
        loss = nn.functional.mse_loss(model(x), y) / accumulate
        loss.backward()
        if keep is not None:
            keep.append(loss)
        if (i + 1) % accumulate == 0:
            opt.step()
            if zero:
                opt.zero_grad()


def codes(dr):
    return {f.code for f in dr.report()}


def finding(dr, code):
    return next(f for f in dr.report() if f.code == code)


def test_a_correct_loop_is_clean():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        train(model, opt)
        model.eval()
        with torch.inference_mode():
            model(torch.randn(2, 8))
    assert codes(dr) == set()
    assert dr.report().steps == 6


def test_pit101_stale_gradients_and_intentional_accumulation_is_not():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Doctor(model, opt) as dr:
        train(model, opt, zero=False)
    f = finding(dr, "PIT101")
    assert f.step == 2 and f.count == 5 and "model.0.weight" in f.message and f.where == "SGD"

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Doctor(model, opt) as dr:
        train(model, opt, accumulate=4)  # four backward()s per step, zero_grad after the step
    assert codes(dr) == set()


def test_zero_grad_without_set_to_none_is_a_clear():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        for x, y in batches(5):
            opt.zero_grad(set_to_none=False)
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    assert codes(dr) == set()


def test_lbfgs_closures_are_clean():
    model = mlp()
    opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=3)
    with pitstop.doctor() as dr:
        for x, y in batches(4):
            def closure(x=x, y=y):
                opt.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                return loss

            opt.step(closure)
    assert codes(dr) == set() and dr.report().steps == 4


def test_pit102_losses_kept_in_a_list_or_a_running_total():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = []
    with pitstop.doctor() as dr:
        train(model, opt, keep=kept)
    f = finding(dr, "PIT102")
    assert f.step == 3 and "test_doctor.py" in f.where

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        total = 0.0
        for x, y in batches(6):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            total = total + loss  # the graph of every step, chained
    assert "PIT102" in codes(dr)

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        logged = []
        for x, y in batches(6):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            logged.append(loss.item())  # numbers: fine
            logged.append(loss.detach())
    assert codes(dr) == set()


def test_pit103_retain_graph_every_step_and_two_losses_retaining_on_the_first_only():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        for x, y in batches(5):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward(retain_graph=True)
            opt.step()
    assert finding(dr, "PIT103").step == 3

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        for x, y in batches(5):
            opt.zero_grad()
            out = model(x)
            nn.functional.mse_loss(out, y).backward(retain_graph=True)  # the second loss reuses the graph
            out.abs().mean().backward()
            opt.step()
    assert codes(dr) == set()


def test_pit103_a_hidden_state_carried_without_detach_and_truncated_bptt_with_it():
    def run(detach):
        torch.manual_seed(0)
        rnn, head = nn.RNN(4, 8, batch_first=True), nn.Linear(8, 1)
        opt = torch.optim.SGD(head.parameters(), lr=0.01)  # the RNN is not stepped: no in-place error
        h = torch.zeros(1, 2, 8)
        with pitstop.doctor(select=["PIT103"]) as dr:
            for _ in range(5):
                if detach:
                    h = h.detach()
                out, h = rnn(torch.randn(2, 3, 4), h)
                opt.zero_grad()
                head(out).pow(2).mean().backward(retain_graph=not detach)
                opt.step()
        return dr

    f = finding(run(detach=False), "PIT103")
    assert "keeps growing" in f.message
    assert codes(run(detach=True)) == set()


def test_pit103_explains_modified_by_an_inplace_operation():
    torch.manual_seed(0)
    rnn = nn.RNN(4, 8, batch_first=True)
    opt = torch.optim.SGD(rnn.parameters(), lr=0.01)
    h = torch.zeros(1, 2, 8)
    with pytest.raises(RuntimeError, match="inplace operation"):
        with pitstop.doctor() as dr:
            for _ in range(3):
                out, h = rnn(torch.randn(2, 3, 4), h)
                opt.zero_grad()
                out.pow(2).mean().backward(retain_graph=True)
                opt.step()
    assert "retain_graph" in finding(dr, "PIT103").message


def test_pit103_explains_backward_through_the_graph_a_second_time():
    torch.manual_seed(0)
    rnn = nn.RNN(4, 8, batch_first=True)
    opt = torch.optim.SGD(rnn.parameters(), lr=0.01)
    h = torch.zeros(1, 2, 8)
    with pytest.raises(RuntimeError, match="second time"):
        with pitstop.doctor() as dr:
            for _ in range(3):
                out, h = rnn(torch.randn(2, 3, 4), h)
                opt.zero_grad()
                out.pow(2).mean().backward()
                opt.step()
    f = finding(dr, "PIT103")
    assert "detach" in f.message and dr.report().exit["status"] == "crashed"


def test_pit104_training_forward_under_no_grad():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pytest.raises(RuntimeError, match="does not require grad"):
        with pitstop.doctor() as dr:
            for x, y in batches(3):
                opt.zero_grad()
                with torch.no_grad():
                    loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
    f = finding(dr, "PIT104")
    assert "model" in f.message and "autograd off" in f.message


def test_pit104_step_with_no_gradients_after_an_inference_mode_forward():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        for x, _ in batches(3):
            opt.zero_grad()
            with torch.inference_mode():
                model(x)
            opt.step()
    assert finding(dr, "PIT104").where == "model"


def test_pit105_model_rebuilt_after_the_optimizer_and_a_frozen_backbone_is_fine():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model = mlp(seed=1)  # rebuilt: opt still holds the first model's tensors
    with pitstop.doctor() as dr:
        train(model, opt, steps=3)
    messages = [f.message for f in dr.report() if f.code == "PIT105"]
    assert any("in no optimizer" in m and "rebuilt" in m for m in messages)
    assert any("never received a non-zero gradient" in m for m in messages)

    model = mlp()
    for p in model[0].parameters():
        p.requires_grad_(False)  # frozen on purpose, and out of the optimizer
    opt = torch.optim.SGD(model[3].parameters(), lr=0.01)
    with Doctor(model, opt) as dr:
        train(model, opt, steps=3)
    assert codes(dr) == set()


def test_pit105_a_parameter_that_never_changes():
    model = mlp()
    opt = torch.optim.SGD([{"params": model[0].parameters(), "lr": 0.0},
                           {"params": model[3].parameters(), "lr": 0.01}])
    with Doctor(model, opt) as dr:
        train(model, opt, steps=3)
    f = finding(dr, "PIT105")
    assert "never changed" in f.message and "model.0.weight" in f.message


class LogOf(nn.Module):
    def forward(self, x):
        return torch.log(x)  # NaN for negative inputs


def test_pit106_names_the_first_non_finite_module_in_forward_order_and_the_loss():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), LogOf(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        train(model, opt, steps=3)
    found = {f.where: f for f in dr.report() if f.code == "PIT106"}
    assert "model.1" in found and "this module produced it" in found["model.1"].message
    assert found["model.1"].step == 1
    assert "loss" in found and "nan" in found["loss"].message


def test_pit106_gradient_first_in_backward_order_and_guard_keeps_weights_clean():
    class Sqrt(nn.Module):
        def forward(self, x):
            return (x - x.detach()).sqrt() + x  # value x, gradient inf at 0

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), Sqrt(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Doctor(model, opt, guard=True) as dr:
        train(model, opt, steps=3)
    f = next(f for f in dr.report() if f.code == "PIT106" and f.where != "loss")
    assert f.where == "model.0.bias" and "guard" in f.message  # model.2 gets finite grads; model.0 comes after
    assert dr.report().skipped_steps == [1, 2, 3]
    assert all(torch.isfinite(p).all() for p in model.parameters())

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), Sqrt(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Doctor(model, opt) as dr:  # default mode never skips
        train(model, opt, steps=2)
    assert dr.report().skipped_steps == [] and not all(torch.isfinite(p).all() for p in model.parameters())


def test_pit107_a_gradient_spike():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    with pitstop.doctor() as dr:
        for i, (x, y) in enumerate(batches(16)):
            opt.zero_grad()
            scale = 1e4 if i == 12 else 1.0  # one batch far off the others
            nn.functional.mse_loss(model(x), y * scale).backward()
            opt.step()
    f = finding(dr, "PIT107")
    assert f.step == 13 and "running median" in f.message


def test_pit108_dead_relu_units():
    model = mlp()
    with torch.no_grad():
        model[0].bias.fill_(-100.0)  # every pre-activation negative: the ReLU never fires
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        train(model, opt, steps=12)
    f = finding(dr, "PIT108")
    assert f.where == "model.1" and "100.0%" in f.message


def test_pit109_training_in_eval_mode_and_evaluating_in_train_mode():
    model = mlp(dropout=0.5)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model.eval()
    with pitstop.doctor() as dr:
        train(model, opt, steps=3)
    assert finding(dr, "PIT109").where == "model"

    model = mlp(dropout=0.5)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        for _epoch in range(2):
            model.train()
            train(model, opt, steps=3)
            with torch.no_grad():  # evaluation, but still in train mode
                model(torch.randn(4, 8))
    assert finding(dr, "PIT109").where == "model (evaluation)"

    model = mlp(dropout=0.5)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        for _epoch in range(2):
            model.train()
            train(model, opt, steps=3)
            model.eval()
            with torch.no_grad():
                model(torch.randn(4, 8))
    assert codes(dr) == set()


def test_pit110_non_scalar_backward_is_found_and_the_crash_explained():
    model = mlp()
    with pytest.raises(RuntimeError, match="scalar outputs"):
        with pitstop.doctor() as dr:
            x, y = batches(1)[0]
            nn.functional.mse_loss(model(x), y, reduction="none").backward()
    f = finding(dr, "PIT110")
    assert "(4, 1)" in f.message and "test_doctor.py" in f.where


def test_pit201_evaluation_forwards_recorded_by_autograd():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        train(model, opt, steps=3)
        model.eval()
        preds = [model(x) for x, _ in batches(4)]  # no no_grad(): four graphs for nothing
        del preds
    f = finding(dr, "PIT201")
    assert f.where == "model" and f.count == 4


class Slow(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        import time

        time.sleep(0.01)
        return torch.randn(8), torch.randn(1)


def test_pit402_input_stall_is_measured():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Slow(), batch_size=4)  # 40 ms per batch in the main process, ~1 ms of compute
    with pitstop.doctor() as dr:
        for x, y in loader:
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    report = dr.report()
    f = finding(dr, "PIT402")
    assert report.data_share > 0.5 and f"{report.data_share:.0%}" in f.message


def test_a_gan_with_two_optimizers_is_clean_and_counts_iterations():
    torch.manual_seed(0)
    gen, disc = nn.Sequential(nn.Linear(4, 8), nn.Tanh()), nn.Sequential(nn.Linear(8, 1))
    opt_g, opt_d = torch.optim.Adam(gen.parameters(), 1e-3), torch.optim.Adam(disc.parameters(), 1e-3)
    bce = nn.BCEWithLogitsLoss()
    with pitstop.doctor() as dr:
        for _ in range(5):
            real, z = torch.randn(4, 8), torch.randn(4, 4)
            fake = gen(z)
            opt_d.zero_grad()
            d_loss = bce(disc(real), torch.ones(4, 1)) + bce(disc(fake.detach()), torch.zeros(4, 1))
            d_loss.backward()
            opt_d.step()
            opt_g.zero_grad()
            bce(disc(fake), torch.ones(4, 1)).backward()
            opt_g.step()
    assert codes(dr) == set() and dr.report().steps == 5


def test_detach_restores_every_hook_and_a_failing_check_never_breaks_training():
    from torch.nn.modules import module as m
    from torch.optim import optimizer as o

    before = (torch.autograd.backward, len(m._global_forward_hooks), len(o._global_optimizer_pre_hooks))

    class Broken(pitstop.doctor.Check):
        code = "PIT999"

        def on_step(self, optimizer):
            raise ValueError("boom")

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dr = Doctor(model, opt, checks=[Broken()]).attach()
    assert torch.autograd.backward is not before[0]
    train(model, opt, steps=3)
    dr.detach()
    after = (torch.autograd.backward, len(m._global_forward_hooks), len(o._global_optimizer_pre_hooks))
    assert after == before
    assert any("boom" in n for n in dr.report().internal)
    assert all(math.isfinite(p.sum().item()) for p in model.parameters())
