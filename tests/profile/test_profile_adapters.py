"""The profiler's Lightning and HF Trainer callbacks, the doctor and the profiler on one session,
and the notebook-style API (``with pitstop.profile() as prof``; ``prof.report``)."""

import types

import pytest
import torch
from torch import nn

import pitstop


def test_lightning_callback_profiles_a_fit(tmp_path):
    L = pytest.importorskip("lightning", reason="the lightning extra is part of dev")
    from pitstop.profile.adapters.lightning import ProfileCallback

    assert pitstop.profile.adapters.lightning.ProfileCallback is ProfileCallback  # as the docs page writes it

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))

        def training_step(self, batch, _):
            x, y = batch
            return nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    callback = ProfileCallback(verbose=False, drill_down=False)
    trainer = L.Trainer(max_epochs=1, callbacks=[callback], logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, accelerator="cpu",
                        default_root_dir=tmp_path)
    trainer.fit(Module(), torch.utils.data.DataLoader(data, batch_size=8))
    report = callback.report
    assert report.steps == 8 and len(report.timeline) == 8
    assert report.share("forward") > 0 and report.share("backward") > 0 and report.share("data") > 0


def test_hf_trainer_callback_attaches_and_reports():
    transformers = pytest.importorskip("transformers", reason="the zoo extra is part of make test")
    from pitstop.profile.adapters.hf import ProfileCallback

    assert issubclass(ProfileCallback, transformers.TrainerCallback)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    callback = ProfileCallback(verbose=False, drill_down=False)
    args = types.SimpleNamespace()  # TrainingArguments needs accelerate; the callback never reads it
    state, control = transformers.TrainerState(), transformers.TrainerControl()
    callback.on_train_begin(args, state, control, model=model, optimizer=opt)  # what Trainer calls
    for _ in range(4):
        model(torch.randn(4, 8)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    callback.on_train_end(args, state, control)
    assert callback.report.steps == 4 and callback.watcher is None
    assert torch.autograd.backward.__module__ == "torch.autograd"


def test_doctor_and_profiler_share_one_session():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr, pitstop.profile(session=dr.session, drill_down=False) as prof:
        for _ in range(5):
            model(torch.randn(4, 8)).pow(2).mean().backward()
            opt.step()  # no zero_grad: PIT101 for the doctor
    assert "PIT101" in dr.report().codes()
    assert prof.report.steps == 5 and prof.report.syncs == []  # the doctor's own reads are not the user's syncs
    assert prof.session is dr.session


def test_report_is_a_snapshot_while_attached_and_final_after():
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    prof = pitstop.profile(model, opt, drill_down=False).attach()
    for _ in range(3):
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
    assert prof.report.steps == 3
    prof.detach()
    assert prof.report is prof.report and prof.report.from_dict(prof.report.to_dict()).steps == 3
    assert "<svg" in prof.report._repr_html_()


@pytest.mark.parametrize("options, message", [({"wait": 0}, "wait: expected an integer >= 1"),
                                              ({"active": 20}, "active: at most 10 steps"),
                                              ({"physical_cores": 0}, "physical_cores: expected a positive")])
def test_settings_are_validated_naming_the_field(options, message):
    from pitstop.errors import SettingError

    with pytest.raises(SettingError, match=message) as bad:
        pitstop.profile(**options)
    assert bad.value.field == next(iter(options))


def test_a_run_without_optimizer_steps_says_so():
    model = nn.Linear(4, 1)
    with pitstop.profile(drill_down=False) as prof:
        model(torch.randn(2, 4)).sum().backward()
    assert prof.report.steps == 0 and prof.report.verdict == []
    assert "no optimizer step was measured" in str(prof.report)


def _lightning_fit_with_validation(tmp_path, callback, steps=24, every=8):
    """A Lightning fit whose validation (a slow validation_step) runs every ``every`` training
    batches, as Lightning's transformer example does: the callback's report after it."""
    import time

    L = pytest.importorskip("lightning", reason="the lightning extra is part of dev")

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(1000, 16)  # rows updated sparsely: the false PIT105
            self.head = nn.Linear(16, 1)

        def forward(self, ids):
            return self.head(self.embedding(ids).mean(1))

        def training_step(self, batch, _):
            ids, y = batch
            return nn.functional.mse_loss(self(ids), y)

        def validation_step(self, batch, _):
            ids, y = batch
            time.sleep(0.02)  # a validation forward far slower than a training step
            self.log("val_loss", nn.functional.mse_loss(self(ids), y))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    g = torch.Generator().manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randint(0, 1000, (8 * steps, 4), generator=g),
                                          torch.randn(8 * steps, 1, generator=g))
    val = torch.utils.data.TensorDataset(torch.randint(0, 1000, (40, 4), generator=g), torch.randn(40, 1, generator=g))
    trainer = L.Trainer(max_epochs=1, callbacks=[callback], logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, accelerator="cpu",
                        default_root_dir=tmp_path, val_check_interval=every, num_sanity_val_steps=0)
    trainer.fit(Module(), torch.utils.data.DataLoader(data, batch_size=8),
                torch.utils.data.DataLoader(val, batch_size=8))
    return callback


def test_lightning_validation_is_the_eval_line_not_the_training_forward(tmp_path):
    """Issue 27 item 1 on Lightning: each validation (5 slow forwards, ~100 ms) is reported as one
    eval occurrence between steps; the training step and its forward stay far below it."""
    pytest.importorskip("lightning", reason="the lightning extra is part of dev")
    from pitstop.profile.adapters.lightning import ProfileCallback

    report = _lightning_fit_with_validation(tmp_path, ProfileCallback(verbose=False, drill_down=False)).report
    assert report.steps == 24
    ev = report.evaluation
    assert ev is not None and ev["count"] == 3, ev  # after steps 8, 16 and 24 (the last one too)
    assert ev["median_ms"] >= 100  # 5 validation batches of >= 20 ms each
    forward = next(p["median_ms"] for p in report.phases if p["name"] == "forward")
    assert forward < 20 and report.step_ms["median"] < 50, (forward, report.step_ms)
    assert "eval (" in str(report)


def test_lightning_doctor_sees_sparse_embedding_updates_and_validation(tmp_path):
    """The issue's false PIT105 (an embedding's rows updated sparsely under SGD) and a validation
    between steps: the doctor finds nothing on this correct Lightning script."""
    pytest.importorskip("lightning", reason="the lightning extra is part of dev")
    from pitstop.doctor.adapters.lightning import DoctorCallback

    callback = _lightning_fit_with_validation(tmp_path, DoctorCallback(verbose=False))
    found = [f for f in callback.report.findings if f.severity in ("error", "warning")]
    assert not found, found
