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
