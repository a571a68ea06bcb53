"""A training variant as edits of the user's own lines, from what the discovery run found: where
the optimizer is built (its fused / foreach flag), the statements from the forward to the loss
(wrapped in autocast), where the model is bound (``.compile()``, ``channels_last`` right before
the training starts), the ``zero_grad()`` calls, the imports (``torch.set_num_threads``); under
Lightning or the HF Trainer, their own arguments instead. ``plan(config, found)`` returns the
``Change`` list or raises ``NotMechanical`` (the variant is then skipped with that reason)."""

from __future__ import annotations

import difflib
import os
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pitstop.train.config import TrainConfig
from pitstop.train.script.source_edit import (
    NotMechanical,
    Where,
    deepest_shared,
    insert_after_imports,
    insert_before,
    set_keyword,
    statement_start,
    wrapped_start,
)
from pitstop.train.script.source_edit import wrap as wrap_statements

__all__ = ["Change", "NotMechanical", "apply", "diff", "kind_of", "plan"]


@dataclass(frozen=True)
class Change:
    """One edit: ``what`` (``keyword``, ``insert``, ``after-imports``, ``wrap``), where, and its text."""

    what: str
    file: str
    line: int
    text: str  # the keyword's "name=value", the inserted line(s), or the ``with`` header
    first_line: int = 0
    function: str = ""  # the function holding ``line`` ("<module>": the module)
    end_line: int = 0  # wrap: the backward's line
    callee: str | None = None
    why: str = ""  # the technique, for the report

    def describe(self, root: str) -> str:
        """``file.py:LINE: what changes`` for the report."""
        where = f"{os.path.relpath(self.file, root)}:{self.line}"
        if self.what == "keyword":
            return f"{where}: {self.callee or 'the call'}(..., {self.text})  [{self.why}]"
        if self.what == "wrap":
            return f"{where}: `{self.text}` around the forward and loss (to before line {self.end_line})  [{self.why}]"
        if self.what in ("scale", "scaler-step"):
            how = "the backward of `{0}.scale(loss)`" if self.what == "scale" else "the step as `{0}.step(optimizer)`"
            return f"{where}: {how.format(self.text)}  [{self.why}]"
        return f"{where}: add `{self.text}`  [{self.why}]"

    def to_dict(self, root: str) -> dict[str, Any]:
        return {"what": self.what, "file": os.path.relpath(self.file, root), "line": self.line, "text": self.text,
                "technique": self.why}


def kind_of(found: dict[str, Any]) -> str:
    """``plain`` (the script's own loop), ``lightning`` or ``hf`` (a Trainer runs the loop)."""
    kinds = {t["kind"] for t in found.get("trainers", [])}
    if "lightning" in kinds:
        return "lightning"
    if kinds & {"hf-trainer", "hf-arguments"}:
        return "hf"
    return "plain"


def plan(config: TrainConfig, found: dict[str, Any], device: str = "cpu") -> list[Change]:
    """The changes that make the script run ``config`` (naive: none)."""
    kind = kind_of(found)
    changes: list[Change] = []
    if config.precision != "fp32":
        changes += _precision(config, found, kind, device)
    if config.tf32 or config.cudnn_benchmark:
        changes += _fp32_math(config, found, kind)
    if config.compile:
        changes += _compile(config, found, kind)
    if config.optimizer != "for-loop":
        changes += _optimizer(config, found, kind)
    if config.zero_grad != "none":
        changes += _zero_grad(found, kind)
    if config.layout:
        changes += [_before_training(found, "{model}.to(memory_format=torch.channels_last)", "channels_last")]
    if config.ddp:
        changes += _ddp(config, found)
    if config.workers is not None:
        changes += _loader(config, found, kind, device)
    if config.cache:
        from pitstop.train.script import cache_edit

        changes += [Change(*change, why="item-cache") for change in cache_edit.plan(config, found)]
    if config.threads is not None:
        changes.append(Change("after-imports", found["script"], 1, f"torch.set_num_threads({int(config.threads)})",
                              why=f"threads{config.threads}"))
    if config.micro_batch is not None or config.checkpoint:
        raise NotMechanical("micro-batches and checkpointing change the script's data loop: not applied to scripts")
    return changes


def _precision(config: TrainConfig, found: dict[str, Any], kind: str, device: str) -> list[Change]:
    """Autocast around each forward and loss; fp16 also with a GradScaler (``amp``); under Lightning or
    the HF Trainer their own mixed-precision flag."""
    fp16 = config.precision == "fp16-autocast"
    if kind == "lightning":
        flag = "16-mixed" if fp16 else "bf16-mixed"
        return [_trainer_keyword(found, "lightning", f'precision="{flag}"', flag)]
    if kind == "hf":
        flag = "fp16" if fp16 else "bf16"
        arguments = _trainer_keyword(found, "hf-arguments", f"{flag}=True", flag)
        if not fp16 and device == "cpu":  # transformers 5 refuses bf16=True without a GPU unless use_cpu=True
            return [arguments, replace(arguments, text="use_cpu=True")]  # (kept if the call has it already)
        return [arguments]
    sites = found.get("sites") or {}
    pairs = sites.get("pairs") or ([{"forward": sites["forward"]["stack"], "backward": sites["backward"]["stack"]}]
                                   if sites.get("forward") and sites.get("backward") else [])
    if not pairs:
        raise NotMechanical("the forward or the backward of the training step was not seen in your files")
    header = f"with torch.autocast({device.split(':')[0]!r}, dtype=torch.{'float16' if fp16 else 'bfloat16'}):"
    changes: list[Change] = []
    for pair in pairs:  # each backward of a step, with the forwards that led to it (a GAN has three)
        f, b = _common(pair["forward"], pair["backward"])
        change = Change("wrap", f["file"], f["line"], header, first_line=f["first_line"], function=f["function"],
                        end_line=b["line"], why=config.precision)
        if change not in changes:
            changes.append(change)
    if fp16:
        from pitstop.train.script import amp

        changes += amp.scaler_changes(found, device, lambda what, file, line, text: Change(
            what, file, line, text, why="fp16-autocast"))
    return changes


def _common(fwd: list[dict[str, Any]], bwd: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The deepest frame the forward's and the backward's stacks share: that frame's lines of each."""
    common = deepest_shared(fwd, bwd)
    if common is None:
        raise NotMechanical("the forward and the backward run in different places of your code")
    return common


def _compile(config: TrainConfig, found: dict[str, Any], kind: str) -> list[Change]:
    """``model.compile()`` (with its mode: max-autotune-no-cudagraphs, reduce-overhead) before the
    training loop; the HF Trainer's ``torch_compile`` (and ``torch_compile_mode``)."""
    from pitstop.train.variants.compile import MODES

    if config.compile not in ("default", *MODES):
        raise NotMechanical(f"{config.compile} is not edited into scripts (it needs a context around the backward)")
    why, mode = next(p for p in config.parts if p.startswith("compile")), MODES.get(str(config.compile))
    if kind == "hf":
        return [_trainer_keyword(found, "hf-arguments", "torch_compile=True", why)] + (
            [_trainer_keyword(found, "hf-arguments", f'torch_compile_mode="{mode}"', why)] if mode else [])
    return [_before_training(found, "{model}.compile(" + (f'mode="{mode}"' if mode else "") + ")", why)]


def _fp32_math(config: TrainConfig, found: dict[str, Any], kind: str) -> list[Change]:
    """TF32 (the HF Trainer's ``tf32=True``, else the torch precision API after the imports) and
    ``cudnn.benchmark`` (Lightning's ``Trainer(benchmark=True)``, else after the imports)."""
    from pitstop.train.variants.fp32_math import BENCHMARK, TF32

    changes = []
    if config.tf32:
        changes.append(_trainer_keyword(found, "hf-arguments", "tf32=True", "tf32") if kind == "hf" else
                       Change("after-imports", found["script"], 1, "\n".join(TF32), why="tf32"))
    if config.cudnn_benchmark:
        changes.append(_trainer_keyword(found, "lightning", "benchmark=True", "cudnn-benchmark")
                       if kind == "lightning" else
                       Change("after-imports", found["script"], 1, BENCHMARK[0], why="cudnn-benchmark"))
    return changes


def _before_training(found: dict[str, Any], line: str, why: str) -> Change:
    model = (found.get("sites") or {}).get("model")
    if not model:
        raise NotMechanical("the model that trains is not bound to a name in your files")
    return Change("insert", model["file"], model["line"], line.format(model=model["expression"]),
                  first_line=model["first_line"], function=model["function"], why=why)


def _optimizer(config: TrainConfig, found: dict[str, Any], kind: str) -> list[Change]:
    seen = (found.get("sites") or {}).get("optimizers", [])
    sites = [o for o in seen if o.get("site")]
    flag = "fused" if config.optimizer == "fused" else "foreach"
    if seen and all((o.get("set") or {}).get(flag) for o in seen):  # the HF Trainer's default optim is fused
        raise NotMechanical(f"the script's {', '.join(sorted({o['class'] for o in seen}))} already runs with "
                            f"{flag}=True: the unmodified script is this variant")
    fused = sorted({o["class"] for o in seen if (o.get("set") or {}).get("fused")})
    if flag == "foreach" and fused:  # torch refuses both flags on one optimizer
        raise NotMechanical(f"the script's {', '.join(fused)} already runs with fused=True (foreach cannot be added "
                            "to it)")
    if not sites and kind == "hf" and flag == "fused":
        return [_trainer_keyword(found, "hf-arguments", 'optim="adamw_torch_fused"', "fused")]
    if not sites:
        raise NotMechanical("the optimizer is not built in your files")
    missing = [o["class"] for o in sites if flag not in o["flags"]]
    if missing:
        raise NotMechanical(f"{', '.join(sorted(set(missing)))} has no {flag} implementation")
    return [Change("keyword", o["site"]["file"], o["site"]["line"], f"{flag}=True", callee=o["class"], why=flag)
            for o in _unique(sites)]


def _unique(sites: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen, out = set(), []
    for o in sites:
        key = (o["site"]["file"], o["site"]["line"])
        if key not in seen:
            seen.add(key)
            out.append(o)
    return out


def _ddp(config: TrainConfig, found: dict[str, Any]) -> list[Change]:
    """The knob as a keyword of the DDP construction, or of every ``fully_shard`` call (FSDP2)."""
    from pitstop.train.variants.ddp import KEYWORDS

    knob = str(config.ddp)
    fsdp = knob.startswith("fsdp-")
    sites = [d for d in (found.get("sites") or {}).get("fsdp" if fsdp else "ddp", []) if d.get("site")]
    if not sites:
        raise NotMechanical(f"{'fully_shard is not called' if fsdp else 'the DistributedDataParallel is not built'} "
                            "in your files")
    return [Change("keyword", s["site"]["file"], s["site"]["line"], KEYWORDS[knob],
                   callee="fully_shard" if fsdp else "DistributedDataParallel|DDP", why=knob if fsdp else f"ddp-{knob}")
            for s in (_unique(sites) if fsdp else sites[:1])]


def _loader(config: TrainConfig, found: dict[str, Any], kind: str, device: str) -> list[Change]:
    """The training DataLoader with ``config.workers`` persistent worker processes (and pinned memory
    on CUDA): keywords of its construction in the user's files, or of TrainingArguments under the
    HF Trainer (which builds the loader itself)."""
    sites = found.get("sites") or {}
    index = sites.get("train_loader")
    if index is None:
        raise NotMechanical("the training loop reads no torch DataLoader")
    loader = sites["loaders"][index]
    n, cuda = int(config.workers or 0), device.startswith("cuda")
    if loader.get("cannot_use_workers"):
        raise NotMechanical(f"the training DataLoader cannot use worker processes: {loader['cannot_use_workers']}")
    if loader["num_workers"] == n and loader["persistent_workers"] and (loader["pin_memory"] or not cuda) \
            and config.prefetch in (None, loader.get("prefetch_factor")):
        raise NotMechanical(f"the training DataLoader already runs {n} persistent workers: the unmodified script is "
                            "this variant")
    why = "+".join(p for p in config.parts if p.startswith(("workers", "prefetch")))
    if loader.get("site") is None:
        if kind != "hf":
            raise NotMechanical("the training DataLoader is built by a library, not in your files")
        keywords = [f"dataloader_num_workers={n}", "dataloader_persistent_workers=True"]
        if config.prefetch:
            keywords.append(f"dataloader_prefetch_factor={config.prefetch}")
        if cuda:
            keywords.append("dataloader_pin_memory=True")
        return [_trainer_keyword(found, "hf-arguments", k, why) for k in keywords]
    from pitstop.train.script.loaders import LOADER_ARGS, companions  # (imports torch: this module does not)

    if loader.get("positional", 0) >= len(LOADER_ARGS):
        raise NotMechanical("the training DataLoader is given num_workers by position: pitstop edits keywords")
    keywords = [f"num_workers={n}", "persistent_workers=True"]
    if config.prefetch:
        keywords.append(f"prefetch_factor={config.prefetch}")
    if cuda:
        keywords.append("pin_memory=True")
    changes = [Change("keyword", x["site"]["file"], x["site"]["line"], k, callee="DataLoader", why=why)
               for x in (loader, *companions(found)) for k in keywords]  # and the evaluation's, same Dataset
    if cuda:  # from pinned memory the batch's copies to the GPU need not wait
        copies = _unique([{"site": s} for s in sites.get("batch_copies") or []])
        changes += [Change("keyword", c["site"]["file"], c["site"]["line"], "non_blocking=True", callee="to|cuda",
                           why=why) for c in copies]
    return changes


def _zero_grad(found: dict[str, Any], kind: str) -> list[Change]:
    sites = (found.get("sites") or {}).get("zero_grad", [])
    if not sites:
        raise NotMechanical("zero_grad() is not called in your files")
    return [Change("keyword", s["file"], s["line"], "set_to_none=False", callee="zero_grad", why="zero-grad-zeros")
            for s in sites]


def _trainer_keyword(found: dict[str, Any], kind: str, keyword: str, why: str) -> Change:
    made = [t for t in found.get("trainers", []) if t["kind"] == kind and t.get("site")]
    if not made:
        raise NotMechanical(f"the {'Trainer' if kind == 'lightning' else 'TrainingArguments'} is not built in "
                            "your files")
    site = made[-1]["site"]
    return Change("keyword", site["file"], site["line"], keyword, callee=made[-1]["class"], why=why)


# -- applying -----------------------------------------------------------------------------------

def apply(changes: list[Change], read: Any = None) -> dict[str, str]:
    """``{file: edited text}``: each file's changes applied from the bottom up (lines stay valid)."""
    read = read or (lambda path: Path(path).read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for file in sorted({c.file for c in changes}):
        text = read(file)
        mine = [c for c in changes if c.file == file]
        anchored = [(anchor(text, c), c) for c in mine]  # where each lands in the original text
        for line, change in sorted(anchored, key=lambda p: (-p[0], p[1].what)):
            text = _one(text, replace(change, line=line) if change.what == "insert" else change)
        if any(c.what == "wrap" or "torch." in c.text for c in mine if c.what != "after-imports"):
            text = _with_torch(text)  # last: the lines above were located before it moved them
        out[file] = text
    return out


def anchor(text: str, c: Change) -> int:
    """The first line a change touches in ``text``: an insertion's statement start, a wrap's first
    statement, a keyword's call, 0 after the imports. Changes apply from the bottom up by it, so each
    one's lines are still those of the original text when its turn comes."""
    if c.what == "insert":
        return statement_start(text, _where(c))
    if c.what == "wrap":
        return wrapped_start(text, _where(c), _where(c, c.end_line))
    if c.what == "after-imports":
        return 0
    return c.line


def _where(c: Change, line: int | None = None) -> Where:
    return Where(c.file, c.line if line is None else line, c.first_line, c.function)


def _one(text: str, c: Change) -> str:
    if c.what == "keyword":
        name, _, value = c.text.partition("=")
        return set_keyword(text, c.line, name, value, c.callee)
    if c.what == "insert":
        return insert_before(text, _where(c), [c.text])
    if c.what == "after-imports":
        return insert_after_imports(text, [c.text], needs_torch="torch" in c.text)
    if c.what == "after-class":
        from pitstop.train.script.cache_edit import after_class

        return after_class(text, c.line, c.text)
    if c.what == "wrap":
        return wrap_statements(text, _where(c), _where(c, c.end_line), c.text)
    if c.what in ("scale", "scaler-step", "before", "after"):
        from pitstop.train.script import amp

        if c.what in ("before", "after"):
            return amp.beside(text, c.line, c.text, after=c.what == "after")
        return (amp.scale if c.what == "scale" else amp.step)(text, c.line, c.text)
    raise ValueError(f"unknown change {c.what}")


def _with_torch(text: str) -> str:
    import ast

    from pitstop.train.script.source_edit import binds_torch

    return text if binds_torch(ast.parse(text)) else insert_after_imports(text, [], needs_torch=True)


def root_of(script: str) -> str:
    """Where patch paths start: the git work tree holding the script, else the working directory."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=os.path.dirname(os.path.abspath(script)),
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return os.getcwd()
    return top.stdout.strip() if top.returncode == 0 and top.stdout.strip() else os.getcwd()


def diff(edited: dict[str, str], root: str) -> str:
    """A unified diff of every edited file, paths relative to ``root`` (``git apply`` takes it)."""
    parts = []
    for file, new in sorted(edited.items()):
        old = Path(file).read_text(encoding="utf-8")
        rel = os.path.relpath(file, root)
        if rel.startswith(".."):
            raise NotMechanical(f"{file} lies outside {root}: a patch cannot reach it")
        parts.append(_unified(old, new, rel))
    return "".join(parts)


def _unified(old: str, new: str, rel: str) -> str:
    a, b = old.splitlines(True), new.splitlines(True)
    out = []
    for line in difflib.unified_diff(a, b, f"a/{rel}", f"b/{rel}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return f"diff --git a/{rel} b/{rel}\n" + "".join(out) if out else ""
