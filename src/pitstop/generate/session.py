"""The generation session: one variant of a causal LM in its own worker process.

``python -m pitstop.generate.session FD`` serves a ``GenerateSession`` with bench's protocol
(``engine.worker.serve``): set up (model, prompts, the reference's greedy tokens and logits),
prepare (apply the variant; the first call carries compile), fidelity, memory, warm-up, then
timed calls. A timed call is one whole ``generate`` of ``new_tokens`` tokens for the batch; a
logits processor stamps each new token, which splits it into the prefill (time to the first
token) and the per-token decode steps."""

from __future__ import annotations

import copy
import sys
import time
from typing import Any

import torch

from pitstop.engine.peak import peak_bytes
from pitstop.engine.timer import CallTimer, TimingPolicy
from pitstop.generate.techniques import REFERENCE, GenConfig, apply
from pitstop.generate.tokens import compare_tokens


def load_model(payload: dict[str, Any]) -> torch.nn.Module:
    """The parent's model: rebuilt from its spec with the parent's exact weights, or unpickled."""
    if payload["kind"] == "pickle":
        return torch.load(payload["path"], weights_only=False)  # noqa: PIT501 (our own file, written by the parent)
    from pitstop.models.spec import parse_model_spec

    module, _ = parse_model_spec(payload["spec"]).build(None, seed=payload["seed"])
    module.load_state_dict(torch.load(payload["weights"], weights_only=True))
    return module


class _Stamps:
    """A logits processor that notes when each new token's logits are ready."""

    def __init__(self, cuda: bool) -> None:
        self.at: list[float] = []
        self.cuda = cuda

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.cuda:
            torch.cuda.synchronize()
        self.at.append(time.perf_counter())
        return scores


def is_hf(model: Any) -> bool:
    """A transformers generator (``generate`` with a ``generation_config``), else the model's own ``generate``."""
    return hasattr(model, "generation_config")


class _Own:
    """What a model's own ``generate`` gives: the sequences, no logits."""

    def __init__(self, sequences: torch.Tensor) -> None:
        self.sequences, self.logits = sequences, ()


def generate_once(model: Any, ids: torch.Tensor, new_tokens: int, kwargs: dict[str, Any],
                  stamps: _Stamps | None = None, logits: bool = False) -> Any:
    """One greedy generation of exactly ``new_tokens`` tokens (EOS held off) under inference_mode;
    a model's own ``generate(input_ids, max_new_tokens=N)`` is called as it is (no stamps, no logits)."""
    if not is_hf(model):
        with torch.inference_mode():
            out = model.generate(ids, max_new_tokens=new_tokens)
        return _Own(out) if logits else out
    from transformers import LogitsProcessorList

    config = model.generation_config
    pad = config.pad_token_id if config.pad_token_id is not None else config.eos_token_id
    pad = pad[0] if isinstance(pad, list) else pad
    extra = {"output_logits": True, "return_dict_in_generate": True} if logits else {}
    with torch.inference_mode():
        return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                              min_new_tokens=new_tokens, pad_token_id=0 if pad is None else pad,
                              logits_processor=LogitsProcessorList([stamps] if stamps else []),
                              **kwargs, **extra)


def cache_bytes(cache: Any) -> int | None:
    """Bytes of a transformers KV cache's key and value tensors (``layers[i].keys/values``, or the
    legacy tuples of tensors); None when there is no cache to read."""
    if cache is None:
        return None
    if hasattr(cache, "layers"):
        tensors = [t for layer in cache.layers for t in (getattr(layer, "keys", None), getattr(layer, "values", None))]
    elif isinstance(cache, tuple | list):
        tensors = [t for pair in cache for t in (pair if isinstance(pair, tuple | list) else (pair,))]
    else:
        return None
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


class GenerateSession:
    """One variant of one causal LM at one batch size: set up, then measured on request."""

    def setup(self, payload_path: str, config: dict[str, Any], threads: int, device: str,
              policy: dict[str, Any], **_: Any) -> dict[str, Any]:
        """Load the model and prompts; generate the reference (fp32, the run's threads) greedily."""
        payload = torch.load(payload_path, weights_only=True)
        torch.set_num_threads(payload["reference_threads"])
        self.device = torch.device(device)
        self.model = load_model(payload).to(self.device).eval()
        if not hasattr(self.model, "generate"):
            raise TypeError(f"{type(self.model).__name__} has no generate(): pitstop measures causal LMs that generate")
        self.new_tokens = int(payload["new_tokens"])
        self.prompt_len = int(payload["prompts"].shape[1])
        self.prompts = payload["prompts"].to(self.device)
        self.more = [p.to(self.device) for p in payload["fidelity"]]
        ref_model, kwargs = apply(REFERENCE, copy.deepcopy(self.model))
        self.reference = [generate_once(ref_model, p, self.new_tokens, kwargs, logits=True) for p in self.more]
        self.reference = [(r.sequences, list(r.logits)) for r in self.reference]
        del ref_model
        torch.set_num_threads(threads)
        self.config = GenConfig.from_dict(config)
        self.policy = TimingPolicy(**policy)
        return {"threads": torch.get_num_threads()}

    def prepare(self) -> dict[str, Any]:
        """Apply the variant and make the first call (compile happens there): timed together."""
        start = time.perf_counter()
        self.fast, self.kwargs = apply(self.config, copy.deepcopy(self.model))
        generate_once(self.fast, self.prompts, self.new_tokens, self.kwargs)
        _sync(self.device)
        weights = sum(t.numel() * t.element_size() for t in self.fast.state_dict().values()
                      if isinstance(t, torch.Tensor))
        return {"first_call_s": time.perf_counter() - start,
                "details": {"generate_kwargs": self.kwargs, "state_dict_bytes": weights}}

    def fidelity(self) -> dict[str, Any]:
        """The variant's greedy tokens and logits on the fidelity prompts against the reference's."""
        outs = [generate_once(self.fast, p, self.new_tokens, self.kwargs, logits=True) for p in self.more]
        ref_seq = torch.cat([s for s, _ in self.reference])
        ref_logits = [torch.cat([lg[t] for _, lg in self.reference]) for t in range(len(self.reference[0][1]))]
        seq = torch.cat([o.sequences for o in outs])
        logits = [torch.cat([o.logits[t] for o in outs]) for t in range(len(outs[0].logits))]
        return compare_tokens(ref_seq.cpu(), [x.float().cpu() for x in ref_logits], seq.cpu(),
                              [x.float().cpu() for x in logits], self.prompt_len)

    def memory(self) -> dict[str, Any]:
        """Peak memory of one generate call above what was in use before it (the KV cache included),
        and the KV cache's own bytes at the end of a call (its key and value tensors)."""
        peak, method = peak_bytes(lambda: generate_once(self.fast, self.prompts, self.new_tokens, self.kwargs),
                                  self.device)
        out = generate_once(self.fast, self.prompts, self.new_tokens, self.kwargs, logits=True)
        return {"peak_memory_bytes": peak, "peak_memory_method": method, "activation_bytes": None,
                "kv_cache_bytes": cache_bytes(getattr(out, "cache", None) or getattr(out, "past_key_values", None))}

    def _once(self) -> list[float]:
        """One timed generate: [total, prefill, decode per token, *token intervals]."""
        stamps = _Stamps(self.device.type == "cuda")
        _sync(self.device)
        start = time.perf_counter()
        generate_once(self.fast, self.prompts, self.new_tokens, self.kwargs, stamps)
        _sync(self.device)
        end = time.perf_counter()
        if not stamps.at:  # a model's own generate(): the whole call only (prefill and decode not split)
            return [end - start, -1.0, -1.0]
        first = stamps.at[0]
        steps = [b - a for a, b in zip(stamps.at, stamps.at[1:], strict=False)]
        exact = len(stamps.at) == self.new_tokens and not self.config.lookup
        return [end - start, first - start, (end - first) / max(1, self.new_tokens - 1), *(steps if exact else [])]

    def warmup(self) -> dict[str, Any]:
        """Generate until the call times settle."""
        return vars(CallTimer(self._once).warmup(self.policy))

    def run(self, n: int) -> dict[str, Any]:
        """``n`` timed generate calls: their seconds, prefill seconds, decode seconds per token
        (each call's mean) and every decode step's seconds (when each token was stamped)."""
        calls = [self._once() for _ in range(n)]
        return {"times": [c[0] for c in calls], "prefill": [c[1] for c in calls],
                "decode": [c[2] for c in calls], "steps": [t for c in calls for t in c[3:]], "page_faults": 0}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main(argv: list[str]) -> None:
    """Entry point of a worker process: ``python -m pitstop.generate.session FD``."""
    from multiprocessing.connection import Connection

    from pitstop._exit import collect_and_freeze
    from pitstop.engine.worker import serve

    serve(Connection(int(argv[1])), GenerateSession())
    collect_and_freeze()


if __name__ == "__main__":
    main(sys.argv)
