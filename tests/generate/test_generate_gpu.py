"""Generation on CUDA: the workers time generate calls with the device synchronised, reduce-overhead
(CUDA graphs) and fp16 are offered there, and the lossless ones keep the reference's tokens."""

from __future__ import annotations

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def test_generation_on_cuda_offers_cuda_graphs_and_fp16_and_keeps_the_tokens():
    pytest.importorskip("transformers")
    from pitstop.generate import optimize_generation

    report = optimize_generation("zoo:gpt2-tiny", new_tokens=8, prompt_len=16, device="cuda", replicas=1,
                                 techniques=("cache", "compile", "precision"), time_budget_s=90)
    doc = report.to_dict()
    rows = {(r["variant"], r["stage"]): r for r in doc["results"]}
    probe = {v: r for (v, s), r in rows.items() if s == "probe"}
    assert "static-cache+compile-reduce-overhead" in probe and probe["fp16"]["status"] != "skipped", probe.keys()
    assert probe["inference_mode"]["prefill_ms"]["median"] > 0 and probe["inference_mode"]["tokens_per_s"]["total"] > 0
    for row in doc["results"]:
        if row["status"] == "ok" and row["config"]["dtype"] == "fp32":
            assert row["fidelity"]["identical"] == row["fidelity"]["prompts"], row["variant"]
