"""Issue 18 item 7: ``pitstop data`` runs the dataset in a child process with a deadline; a dataset
that exits or hangs ends the run with one line (exit 2); an infinite budget is refused."""

import pytest
from reliability_helpers import F, cli, one_line_error

from pitstop.data import LoaderSettings
from pitstop.data.isolated import tune_isolated
from pitstop.errors import SettingError, UsageError

FAST = LoaderSettings(batch_size=8, time_budget_s=0.5, max_workers=1, batches_per_trial=8,
                      candidates=({"num_workers": 0},))


def test_a_dataset_that_exits_is_one_line(capsys):
    code, _, err = cli(capsys, "data", f"{F}:rows_exit", "--batch-size", "8", "--time-budget-s", "0.5",
                       "--max-workers", "1", "--batches", "8")
    assert code == 2
    assert "its process exited with code 9 during round 1: num_workers=0" in one_line_error(err)


def test_a_dataset_that_hangs_is_stopped_at_the_deadline():
    """A real child that hangs (only a process can be stopped from outside). 6 s: the child is in
    round 1 about a second after its start on this machine; the hang is waited for that long, no more."""
    with pytest.raises(UsageError, match=r"no result after 6 s \(stuck in round 1: num_workers=0\); it hangs"):
        tune_isolated(f"{F}:rows_hang", FAST, timeout_s=6)


def test_a_good_dataset_is_measured_in_the_child():
    choice = tune_isolated(f"{F}:rows", FAST)
    assert choice.trials[0].status == "ok" and len(choice.trials[0].batch_s) >= 3


@pytest.mark.parametrize("value", ["inf", "nan", "-1"])
def test_an_infinite_budget_is_refused(capsys, value):
    code, _, err = cli(capsys, "data", f"{F}:rows", "--time-budget-s", value)
    assert code == 2 and "--time-budget-s" in one_line_error(err)


def test_the_api_refuses_an_infinite_budget_too():
    with pytest.raises(SettingError, match="time_budget_s: must be a finite number, got inf"):
        LoaderSettings(time_budget_s=float("inf"))
