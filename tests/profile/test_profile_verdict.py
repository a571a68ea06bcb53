"""The causes' rules on given facts (the hardware-dependent ones included: CUDA, core counts), and
the ranking by expected saving."""

import torch
from torch import nn

from pitstop.hooks.session import Session
from pitstop.profile.observe import Observations, describe_optimizer
from pitstop.profile.verdict import CAUSES, Facts, verdict

SHARES = {"data": None, "h2d": None, "forward": 0.4, "backward": 0.4, "optimizer": 0.1, "sync": 0.0, "other": 0.1}


def facts(observed, cores=4, benchmark=False, native=False, **shares):
    return Facts({**SHARES, **shares}, [], observed, native, cores, benchmark, 10.0)


def test_cudnn_benchmark_off_needs_cuda_convs_and_fixed_shapes():
    observed = Observations(Session())
    observed.device, observed.has_conv, observed.shapes = "cuda", True, {((8, 3, 32, 32),)}
    assert "cudnn-benchmark-off" in [v["cause"] for v in verdict(facts(observed))]
    assert "cudnn-benchmark-off" not in [v["cause"] for v in verdict(facts(observed, benchmark=True))]
    observed.shapes.add(((4, 3, 32, 32),))  # shapes vary: benchmark would re-tune each time
    assert "cudnn-benchmark-off" not in [v["cause"] for v in verdict(facts(observed))]


def test_threads_times_workers_over_the_cores():
    observed = Observations(Session())
    observed.threads, observed.workers = 2, 4
    found = verdict(facts(observed, cores=4))
    assert found[0]["cause"] == "threads-oversubscribed" and "2 threads x 4 process(es) on 4" in found[0]["evidence"]
    observed.threads = 1
    assert [v["cause"] for v in verdict(facts(observed, cores=4))] == ["compute-bound"]


def test_ranked_by_expected_saving_and_every_cause_catalogued():
    observed = Observations(Session())
    observed.params["fp32"], observed.anomaly = 1000, True
    found = verdict(facts(observed, native=True, data=0.3, forward=0.3, backward=0.3, optimizer=0.05, other=0.05))
    assert [v["cause"] for v in found] == ["debug-mode", "input-bound", "compute-fp32"]  # 0.3, 0.27, 0.18
    assert all(v["cause"] in CAUSES for v in found)
    assert [v["saves"] for v in found] == sorted((v["saves"] for v in found), reverse=True)


def test_optimizer_implementation_as_torch_optim_picks_it():
    params = [nn.Parameter(torch.zeros(4)) for _ in range(20)]
    assert describe_optimizer(torch.optim.Adam(params), "Adam")["impl"] == "for-loop"  # CPU tensors: for-loop
    assert describe_optimizer(torch.optim.Adam(params, foreach=True), "Adam")["impl"] == "foreach"
    assert describe_optimizer(torch.optim.LBFGS(params), "LBFGS")["impl"] == "unknown"


def test_the_verdict_hands_over_a_runnable_train_command():
    """profile has seen the script: its next action is `pitstop train SCRIPT ARGS`, the same arguments."""
    observed = Observations(Session())
    observed.params["fp32"] = 1000
    command = "pitstop train train.py --epochs 1 --data 'my dir'"
    found = verdict(Facts({**SHARES, "forward": 0.5, "backward": 0.4}, [], observed, True, 4, False, 10.0, command))
    actions = [v["action"] for v in found if v["cause"] in ("compute-fp32", "compute-bound")]
    assert actions and all(f"`{command}`" in a for a in actions)


def test_input_bound_asks_whether_workers_have_cores_of_their_own():
    """Issue 27 item 4: a data wait is an input-bound cause either way, but loader workers are only
    the fix when cores are left over at the measured thread count; a TensorDataset read a sample
    at a time gets the cheaper batched indexing first, workers or not."""
    observed = Observations(Session())
    observed.dataset, observed.batch_size, observed.workers = "ImageFolder", 64, 0
    observed.threads = 2
    crowded = next(v for v in verdict(facts(observed, cores=2, data=0.3)) if v["cause"] == "input-bound")
    assert "workers have no core of their own here" in crowded["action"]
    assert "torch computes on 2 threads of 2 physical cores" in crowded["evidence"]
    roomy = next(v for v in verdict(facts(observed, cores=8, data=0.3)) if v["cause"] == "input-bound")
    assert "num_workers" in roomy["action"] and roomy["saves"] > crowded["saves"]
    observed.dataset = "TensorDataset"
    batched = next(v for v in verdict(facts(observed, cores=8, data=0.3)) if v["cause"] == "input-bound")
    assert "BatchSampler(RandomSampler(dataset), batch_size=64" in batched["action"]


def test_every_input_bound_verdict_ends_with_the_train_command_that_varies_the_loader():
    """Issue 44: the loop closed: each branch of input-bound names `pitstop train SCRIPT ARGS`, whose
    search varies the training DataLoader's workers inside the script."""
    observed = Observations(Session())
    observed.dataset, observed.batch_size, observed.workers, observed.threads = "ImageFolder", 64, 0, 2
    command = "pitstop train train.py --epochs 1"
    for cores, dataset in ((2, "ImageFolder"), (8, "ImageFolder"), (8, "TensorDataset")):
        observed.dataset = dataset
        shares = {**SHARES, "data": 0.3}
        found = verdict(Facts(shares, [], observed, False, cores, False, 10.0, command))
        entry = next(v for v in found if v["cause"] == "input-bound")
        assert f"`{command}`" in entry["action"] and "worker" in entry["action"], entry["action"]


def test_a_scripts_own_option_named_like_pitstops_goes_after_a_double_dash():
    """`pitstop profile slow_loader.py --steps 20`: --steps is the script's; after the path of
    `pitstop train` it would be pitstop's (the planned run length), so the command puts it after `--`."""
    from pitstop.cli import build_parser
    from pitstop.profile.api import Profiler

    profiler = Profiler()
    profiler.command = ["slow_loader.py", "--steps", "20"]
    command = profiler.train_command()
    assert command == "pitstop train slow_loader.py -- --steps 20"
    args = build_parser().parse_args(command.split()[1:])
    assert args.args == ["--steps", "20"] and args.steps is None
    profiler.command = ["train.py", "--epochs", "1"]
    assert profiler.train_command() == "pitstop train train.py --epochs 1"
