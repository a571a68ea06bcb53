"""``pitstop data``."""

from __future__ import annotations

import argparse
from typing import Any

from pitstop.cli._args import _positive, flag_errors
from pitstop.cli._output import Output, unmarked
from pitstop.cli._resolve import _resolve

DATA_EPILOG = """\
examples:
  pitstop data my_data.py:make_dataset --batch-size 32
  pitstop data my_data.py:make_dataset --batch-size 64 --time-budget-s 120 --json loader.json

The factory returns a Dataset, or (dataset, collate_fn). Settings tried: num_workers 0 (the
default), 1, 2, 4, ... up to 2x the cores with persistent workers; prefetch_factor 4 and
non-persistent workers at the largest count; pin_memory=True too when CUDA is present. Each
round runs every setting for --batches batches, interleaved; batches/s counts the batches after
each pass's first (the first batch's time is shown apart). A setting is recommended only when
its speed-up interval over num_workers=0 excludes 1; among those, the fewest workers within
noise of the fastest. Otherwise: keep the defaults. A dataset that cannot be pickled is noted
(workers need the fork start method) and worker errors mark a setting failed. The dataset runs
in a process of its own: one that exits or hangs (past twice --time-budget-s plus 30 s) ends the
run with a one-line error.
Exit codes: 0 ok, 2 usage error (a factory that fails, a dataset that cannot be loaded)."""


def _add_data(sub: Any) -> None:
    data = sub.add_parser("data", help="measure DataLoader settings on your dataset and recommend the best",
                          description="Measure DataLoader settings (workers, persistence, prefetch, pinning) on "
                                      "your dataset, interleaved, and recommend the fastest that is faster "
                                      "beyond noise.",
                          epilog=DATA_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    data.add_argument("dataset", help="path/to/file.py:factory or package.module:factory (returns a Dataset)")
    data.add_argument("--batch-size", type=_positive(int), default=32, help="default: 32")
    data.add_argument("--time-budget-s", type=_positive(float), default=60.0, help="default: 60")
    data.add_argument("--max-workers", type=_positive(int), help="largest num_workers tried (default: 2x cores)")
    data.add_argument("--batches", type=_positive(int), default=20, help="batches per setting per round (default: 20)")
    data.add_argument("--json", metavar="FILE", help="write the JSON report ('-' = stdout)")
    data.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    data.set_defaults(func=_data)


def _data(args: argparse.Namespace) -> int:
    from pitstop._env import environment
    from pitstop.data import LoaderSettings
    from pitstop.data.isolated import tune_isolated

    output = Output(args.json, args.html)
    with flag_errors({"batches_per_trial": "--batches"}):
        settings = LoaderSettings(batch_size=args.batch_size, time_budget_s=args.time_budget_s,
                                  max_workers=args.max_workers, batches_per_trial=args.batches)
    spec = _resolve(args.dataset, "dataset", resolve=False).text  # a bad spec fails here, before any process
    with output.console.status("measuring loader settings") as status:  # the dataset runs in a child process
        choice = tune_isolated(spec, settings, on_event=lambda text: status.update(unmarked(text)))
    doc = choice.to_dict()
    doc["environment"], doc["dataset"], doc["batch_size"] = environment(), args.dataset, args.batch_size
    output.finish(doc)
    return 0
