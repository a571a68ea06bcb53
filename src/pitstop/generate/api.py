"""``pitstop.generate``: the fastest way to generate tokens with a causal LM here, the same tokens,
as a recipe (``pitstop optimize MODEL --generate N``; ``pitstop bench MODEL --generate N``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pitstop._env import environment
from pitstop._settings import with_options
from pitstop.errors import ModelRunError, SettingError, UsageError
from pitstop.generate.group import GenerateGroup, GenMeasurement, Prompts, policy_for
from pitstop.generate.recipe import generate_recipe, write_recipe
from pitstop.generate.result import GenerateReport
from pitstop.generate.search import GenerateSearch
from pitstop.generate.session import is_hf
from pitstop.generate.settings import GenerateSettings
from pitstop.generate.techniques import GenConfig


def optimize_generation(model: nn.Module | str, *, settings: GenerateSettings | None = None,
                        save: str | Path | None = None, json_path: Any = None,
                        on_event: Callable[[str, dict[str, Any]], None] | None = None,
                        **options: Any) -> GenerateReport:
    """Measure every generation technique on ``model`` (a spec ``zoo:NAME`` / ``file.py:build`` or
    a transformers causal LM) and return the report; ``save`` writes recipe.py (``apply(model)``
    and ``generate(model, input_ids, max_new_tokens)``) and recipe.json there.

    ``options`` are ``GenerateSettings`` fields: ``new_tokens``, ``prompt_len``, ``batch_sizes``,
    ``techniques``, ``time_budget_s``, ``tolerance``, ``gate_tokens``, ``prompts``, ``threads``,
    ``device``, ``seed``, ``replicas``, ``timeout_s``, ``allow_emulated``, ``bench_only``."""
    settings = with_options(GenerateSettings, settings, options, "optimize_generation").resolved()
    report = run_generation(model, settings, json_path=json_path, on_event=on_event)
    if report.outcome.interrupted:
        raise KeyboardInterrupt  # the partial report is in json_path
    if save is not None and not settings.bench_only:
        write_recipe(report, Path(save))
        if json_path:
            _sink(json_path)(report)
    return report


def run_generation(model: nn.Module | str, settings: GenerateSettings, *, json_path: Any = None,
                   on_event: Callable[[str, dict[str, Any]], None] | None = None) -> GenerateReport:
    """The search alone (the CLI prints its report even when interrupted)."""
    module, name, spec = _load(model, settings.seed)
    vocab = _vocab(module, name)
    prompt_rows = _read_prompts(settings, vocab)
    sink = _sink(json_path) if json_path else None
    env = environment(settings.resolved_threads, settings.seed)
    env["device"] = settings.device

    def prompts(batch: int) -> Prompts:
        return make_prompts(settings, vocab, batch, prompt_rows)

    search = GenerateSearch({}, prompts, settings, on_event)
    search.group.model = _model_part(module, spec, settings.seed, search.group.workdir)

    def report_of(outcome: Any) -> GenerateReport:
        report = GenerateReport(name, settings.to_dict(), env, outcome, vocab)
        report.recipe = generate_recipe(report, spec, settings, is_hf(module)) if outcome.complete else ""
        return report

    if sink:
        search.on_stage = lambda outcome: sink(report_of(outcome))
    outcome = search.run()
    report = report_of(outcome)
    ref = next((r for r in outcome.rows if r.variant == "inference_mode"), None)
    if ref is not None and not ref.measured and not outcome.interrupted:
        raise ModelRunError(f"model {name}: the reference generation failed: {ref.reason}")
    if sink:
        sink(report)
    return report


def measure_configs(model: nn.Module | str, configs: list[GenConfig], settings: GenerateSettings, *,
                    batch: int | None = None, on_event: Callable[[str, dict[str, Any]], None] | None = None,
                    ) -> list[GenMeasurement]:
    """``configs`` measured side by side in one interleaved group (``settings.replicas`` workers
    each, the whole ``time_budget_s``), gated on the same tokens: a hand grid to hold a choice against."""
    module, name, spec = _load(model, settings.seed)
    vocab = _vocab(module, name)
    rows_in = _read_prompts(settings, vocab)
    group = GenerateGroup({}, settings, on_event)
    rows: list[GenMeasurement] = []
    try:
        group.model = _model_part(module, spec, settings.seed, group.workdir)
        per = 0.35 * settings.time_budget_s / max(1, len(configs)) / settings.replicas
        group.run(make_prompts(settings, vocab, batch or settings.search_batch, rows_in), configs, rows,
                  stage="grid", policy=policy_for(per, rounds=3), replicas=settings.replicas,
                  deadline=time.monotonic() + settings.time_budget_s)
    finally:
        group.close()
    return rows


def _sink(json_path: Any) -> Callable[[GenerateReport], None]:
    from pitstop._io import result_file

    out = result_file(json_path)  # checked now, before minutes of measuring

    def sink(report: GenerateReport) -> None:
        out.write(report.to_dict())

    return sink


def _load(model: nn.Module | str, seed: int) -> tuple[nn.Module, str, Any]:
    if isinstance(model, str):
        from pitstop.models.spec import parse_model_spec

        spec = parse_model_spec(model)
        module, _ = spec.build(None, seed=seed)
        return module, model, spec
    if not isinstance(model, nn.Module):
        raise UsageError(f"model must be an nn.Module or a spec string, got {type(model).__name__}")
    return model, type(model).__name__, None


def _vocab(module: nn.Module, name: str) -> int:
    if not hasattr(module, "generate"):
        raise UsageError(f"model {name}: {type(module).__name__} has no generate(); generation is measured on causal "
                         "LMs: transformers' (*ForCausalLM) or a model with generate(input_ids, max_new_tokens=N)")
    lm: Any = module
    head = lm.get_output_embeddings() if hasattr(lm, "get_output_embeddings") else None
    if head is not None and isinstance(getattr(head, "weight", None), torch.Tensor):
        return int(head.weight.shape[0])
    vocab = getattr(getattr(module, "config", None), "vocab_size", None) or getattr(module, "vocab_size", None)
    if not isinstance(vocab, int):
        raise UsageError(f"model {name}: cannot tell its vocabulary size (no output embeddings, no config.vocab_size); "
                         "give the model a vocab_size attribute")
    return vocab


def _model_part(module: nn.Module, spec: Any, seed: int, workdir: Path) -> dict[str, Any]:
    """What the workers rebuild the model from: the spec plus the exact weights, or a pickle."""
    if spec is not None:
        weights = workdir / "weights.pt"
        torch.save(module.state_dict(), weights)
        return {"kind": "spec", "spec": spec.text, "seed": seed, "weights": str(weights), "hf": is_hf(module)}
    path = workdir / "model.pt"
    torch.save(module, path)
    return {"kind": "pickle", "path": str(path), "hf": is_hf(module)}


def _read_prompts(settings: GenerateSettings, vocab: int) -> list[list[int]] | None:
    """The user's prompts file: a JSON list of token-id lists, each at least ``prompt_len`` long."""
    if settings.prompts is None:
        return None
    try:
        rows = json.loads(Path(settings.prompts).read_text())
    except (OSError, ValueError) as exc:
        raise SettingError("prompts", f"{settings.prompts}: cannot read a JSON list of token-id lists "
                           f"({type(exc).__name__})") from None
    if not isinstance(rows, list) or not rows or not all(
            isinstance(r, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in r) for r in rows):
        raise SettingError("prompts", f"{settings.prompts}: expected a JSON list of lists of token ids")
    short = min(len(r) for r in rows)
    if short < settings.prompt_len:
        raise SettingError("prompts", f"{settings.prompts}: a prompt has {short} tokens, fewer than the prompt length "
                           f"{settings.prompt_len}; ask for a shorter prompt")
    if any(not 0 <= t < vocab for r in rows for t in r):
        raise SettingError("prompts", f"{settings.prompts}: token ids must be in 0 .. {vocab - 1} (the vocabulary)")
    return [r[:settings.prompt_len] for r in rows]


def make_prompts(settings: GenerateSettings, vocab: int, batch: int, rows: list[list[int]] | None = None) -> Prompts:
    """The timing batch and the fidelity batches (shaped like it) for ``batch`` sequences: seeded
    random token ids, or the user's prompts taken in order (cycled)."""
    count = batch * max(1, -(-settings.fidelity_prompts // batch))
    if rows is not None:
        ids = torch.tensor([rows[i % len(rows)] for i in range(count)], dtype=torch.long)
    else:
        gen = torch.Generator().manual_seed(settings.seed)
        ids = torch.randint(0, vocab, (count, settings.prompt_len), generator=gen)
    batches = list(ids.split(batch))
    return Prompts(batches[0], batches)
