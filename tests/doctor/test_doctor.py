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


def test_pit105_sees_sparse_updates_that_leave_the_norm_as_it_was():
    """Issue 27: an embedding whose few touched rows move by a little keeps its float32 norm to the
    last digit (the Lightning transformer example: 1,292 of 11,300 rows changed, norm 1502.7182617);
    a norm comparison called that 'never changed' and failed CI. The exact comparison does not."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(20000, 64), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=1e-5)
    before = float(model[0].weight.norm())
    with Doctor(model, opt) as dr:
        for step in range(12):
            ids = torch.randint(0, 20000, (8,), generator=torch.Generator().manual_seed(step))
            opt.zero_grad()
            model(ids).pow(2).mean().backward()
            opt.step()
    assert float(model[0].weight.norm()) == before  # the norm did not move...
    assert "PIT105" not in codes(dr)  # ...and the rows that did are seen


def test_pit105_sees_a_sparse_update_made_before_its_first_comparison():
    """Only the first step touches the embedding (rows 0-7), every later step only the head: the
    change happened before the check's first read point (after 2 steps), so a copy taken there
    compares equal ever after; the fingerprint taken before the first update sees it."""
    torch.manual_seed(0)
    emb, head = nn.Embedding(20000, 64), nn.Linear(64, 4)
    opt = torch.optim.SGD([*emb.parameters(), *head.parameters()], lr=1e-5)
    before = emb.weight.detach().clone()
    with Doctor(nn.ModuleDict({"emb": emb, "head": head}), opt) as dr:
        for step in range(12):
            opt.zero_grad()
            if step == 0:
                head(emb(torch.arange(8))).pow(2).mean().backward()
            else:
                head(torch.randn(8, 64)).pow(2).mean().backward()  # no gradient for emb: SGD skips it
            opt.step()
    assert not torch.equal(emb.weight, before) and torch.equal(emb.weight[8:], before[8:])
    assert not [f for f in dr.report() if f.code == "PIT105" and "never changed" in f.message]


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


# -- clean loops: the same loops as above without the bug --------------------------------------


def test_pit104_clean_evaluation_under_no_grad_between_training_steps():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        for x, y in batches(3):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            model.eval()
            with torch.no_grad():
                model(x)
            model.train()
    assert codes(dr) == set()


def test_pit106_clean_a_log_of_positive_values():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Softplus(), LogOf(), nn.Linear(8, 1))  # log of a positive value
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Doctor(model, opt, guard=True) as dr:
        train(model, opt, steps=3)
    assert codes(dr) == set() and dr.report().skipped_steps == []


def test_pit107_clean_steady_gradients():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    with pitstop.doctor() as dr:
        train(model, opt, steps=16)
    assert codes(dr) == set()


def test_pit107_clean_a_noisy_norm_that_rises_as_training_goes_on():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    noise = torch.Generator().manual_seed(3)
    with pitstop.doctor() as dr:
        for i, (x, y) in enumerate(batches(120)):
            opt.zero_grad()
            scale = 1.08 ** i * (0.3 + 2.7 * torch.rand((), generator=noise).item())  # RL: longer episodes
            (nn.functional.mse_loss(model(x), y) * scale).backward()
            opt.step()
    assert "PIT107" not in codes(dr)


def test_pit108_clean_relu_units_that_fire():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        train(model, opt, steps=12)
    assert codes(dr) == set()


def test_pit110_clean_a_per_sample_loss_reduced_or_given_its_gradient():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        for i, (x, y) in enumerate(batches(4)):
            opt.zero_grad()
            per_sample = nn.functional.mse_loss(model(x), y, reduction="none")
            if i % 2:
                per_sample.mean().backward()
            else:
                per_sample.backward(gradient=torch.full_like(per_sample, 1 / per_sample.numel()))
            opt.step()
    assert codes(dr) == set()


def test_pit201_clean_evaluation_under_no_grad():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        train(model, opt, steps=3)
        model.eval()
        with torch.no_grad():
            preds = [model(x) for x, _ in batches(4)]
        del preds
    assert codes(dr) == set()


def test_pit402_clean_a_loader_that_keeps_up():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ready = [(torch.randn(64, 64), torch.randn(64, 1)) for _ in range(10)]
    loader = DataLoader(ready, batch_size=None)  # batches made in advance: fetching is a list lookup
    with pitstop.doctor() as dr:
        for x, y in loader:
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    assert "PIT402" not in codes(dr) and dr.report().data_share is not None


# -- the code table: every run-time code has a check, a buggy loop and a clean loop ------------

# code -> (a loop with the bug, the loop without it); one function holds both where it says so
LOOPS = {
    "PIT101": (test_pit101_stale_gradients_and_intentional_accumulation_is_not,
               test_pit101_stale_gradients_and_intentional_accumulation_is_not),
    "PIT102": (test_pit102_losses_kept_in_a_list_or_a_running_total,
               test_pit102_losses_kept_in_a_list_or_a_running_total),
    "PIT103": (test_pit103_retain_graph_every_step_and_two_losses_retaining_on_the_first_only,
               test_pit103_a_hidden_state_carried_without_detach_and_truncated_bptt_with_it),
    "PIT104": (test_pit104_training_forward_under_no_grad,
               test_pit104_clean_evaluation_under_no_grad_between_training_steps),
    "PIT105": (test_pit105_a_parameter_that_never_changes,
               test_pit105_model_rebuilt_after_the_optimizer_and_a_frozen_backbone_is_fine),
    "PIT106": (test_pit106_names_the_first_non_finite_module_in_forward_order_and_the_loss,
               test_pit106_clean_a_log_of_positive_values),
    "PIT107": (test_pit107_a_gradient_spike, test_pit107_clean_steady_gradients),
    "PIT108": (test_pit108_dead_relu_units, test_pit108_clean_relu_units_that_fire),
    "PIT109": (test_pit109_training_in_eval_mode_and_evaluating_in_train_mode,
               test_pit109_training_in_eval_mode_and_evaluating_in_train_mode),
    "PIT110": (test_pit110_non_scalar_backward_is_found_and_the_crash_explained,
               test_pit110_clean_a_per_sample_loss_reduced_or_given_its_gradient),
    "PIT201": (test_pit201_evaluation_forwards_recorded_by_autograd, test_pit201_clean_evaluation_under_no_grad),
    "PIT402": (test_pit402_input_stall_is_measured, test_pit402_clean_a_loader_that_keeps_up),
}


def test_every_run_time_code_has_a_check_a_buggy_loop_and_a_clean_loop():
    import inspect

    from pitstop.codes import CODES
    from pitstop.doctor.checks import CHECKS

    run_time = {code for code, entry in CODES.items() if "R" in entry.kinds}
    reported = {code for cls in CHECKS for code in cls.codes or (cls.code,)}
    assert run_time <= reported, f"run-time codes without a check: {sorted(run_time - reported)}"
    assert set(LOOPS) == run_time
    here = globals()
    for code, pair in LOOPS.items():
        for fn in pair:
            assert here.get(fn.__name__) is fn and fn.__name__.startswith("test_"), (code, fn)
        buggy, clean = (inspect.getsource(fn) for fn in pair)
        assert code in buggy, f"{code}: the buggy loop never asserts the code"
        assert "== set()" in clean or "not in codes" in clean, f"{code}: the clean loop asserts no cleanliness"


def test_a_rank_sends_rank_0_its_findings_not_its_series(tmp_path, monkeypatch):
    """Under torchrun every rank's report reaches rank 0 (issue 28: small summaries, never traces):
    the loss and gradient-norm series grow with the steps and are left out of what a rank sends."""
    import json

    from pitstop.doctor.result import merge_ranks

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Doctor(model, opt) as dr:
        train(model, opt, steps=400, keep=[])  # a finding (PIT102) and 400 steps of series
    report = dr.report()
    assert report.codes() == ["PIT102"] and len(report.timeline["loss"]) == 400
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("PITSTOP_DOCTOR_DIR", str(tmp_path))
    assert merge_ranks(report, rank=1) is report  # rank 1 reports nothing itself
    sent = (tmp_path / "rank1.json").read_text()
    assert json.loads(sent)["timeline"] == {} and [f["code"] for f in json.loads(sent)["findings"]] == ["PIT102"]
    assert len(sent) < 3000 < len(json.dumps(report.to_dict())), len(sent)
