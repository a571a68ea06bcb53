"""The input pipeline: DataLoader settings chosen by measurement, the share of each step spent
waiting for data, and length-bucketed batching.

    best = pitstop.data.tune_loader(dataset, batch_size=32)
    loader = DataLoader(dataset, batch_size=32, **best.kwargs)
    sampler = pitstop.data.LengthBucketSampler(lengths, batch_size=32, shuffle=True, seed=0)
    print(pitstop.data.padding_waste(lengths, sampler))
"""

from __future__ import annotations

from pitstop.data.bucketing import LengthBucketSampler, padding_waste
from pitstop.data.stall import StallReport, stall_share
from pitstop.data.tuning import LoaderChoice, LoaderSettings, Trial, tune_loader

__all__ = ["LengthBucketSampler", "LoaderChoice", "LoaderSettings", "StallReport", "Trial", "padding_waste",
           "stall_share", "tune_loader"]
