"""Generation's decisions as units, on real (tiny, random-weight) transformers causal LMs and on
plain values: the token gate, the techniques and their recipe source, the finalists, the
prompts, the settings. No worker process: what only a process proves is in test_generate_cli."""

from __future__ import annotations

import copy
import json

import pytest
import torch

pytest.importorskip("transformers")

from pitstop.errors import SettingError
from pitstop.generate.api import _read_prompts, make_prompts
from pitstop.generate.group import GenMeasurement
from pitstop.generate.search import candidates, slot
from pitstop.generate.session import generate_once
from pitstop.generate.settings import GenerateSettings
from pitstop.generate.techniques import REFERENCE, GenConfig, apply, gate, recipe_source, singles
from pitstop.generate.tokens import compare_tokens, judge
from pitstop.models.spec import parse_model_spec

NEW, P = 8, 12


@pytest.fixture(scope="module")
def lm():
    model, _ = parse_model_spec("zoo:gpt2-tiny").build(None, seed=0)
    ids = torch.randint(0, 2048, (3, P), generator=torch.Generator().manual_seed(0))
    ref_model, kwargs = apply(REFERENCE, copy.deepcopy(model))
    ref = generate_once(ref_model, ids, NEW, kwargs, logits=True)
    return model, ids, ref


def _run(model, ids, config):
    fast, kwargs = apply(config, copy.deepcopy(model))
    return generate_once(fast, ids, NEW, kwargs, logits=True)


def _compare(ref, out):
    return compare_tokens(ref.sequences, list(ref.logits), out.sequences, list(out.logits), P)


def test_a_lossless_technique_gives_the_same_tokens_and_passes(lm):
    model, ids, ref = lm
    fid = _compare(ref, _run(model, ids, GenConfig(cache="static")))  # the static cache, applied by the recipe text
    assert fid["identical"] == 3 and fid["agreement"] == 1.0 and fid["first_divergence"] == [None] * 3
    assert fid["rel_err"] < 1e-4
    assert judge(fid, True, 16, 2e-2) == (None, None)


def test_the_token_gate_rejects_a_variant_made_to_diverge(lm):
    """A copy whose weights were pushed off (as a broken quantization would): its tokens part from the
    reference's where the reference was sure (margin beyond the variant's noise), and it is rejected
    as lossy and as lossless alike."""
    model, ids, ref = lm
    broken = copy.deepcopy(model)
    with torch.no_grad():
        for p in broken.parameters():
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(1)) * 0.5 * p.std())
    fid = _compare(ref, _run(broken, ids, REFERENCE))
    assert fid["identical"] < 3 and fid["agreement"] < 1.0
    lossy, _ = judge(fid, False, NEW, 2e-2)
    assert lossy is not None and ("diverges at new token" in lossy or "rel err" in lossy), lossy
    lossless, _ = judge(fid, True, NEW, 2e-2)
    assert lossless is not None and "a lossless technique must give the same tokens" in lossless


def test_a_flip_between_near_tied_logits_is_excused_and_counted():
    """Prompt 1 flips at token 2 where the reference's top two logits are 0.001 apart and the
    variant moved them by 0.01: numeric noise chose, not the model. Prompt 0 stays."""
    vocab, n = 5, 4
    ref_logits = [torch.tensor([[5.0, 1, 0, 0, 0], [5.0, 1, 0, 0, 0]]) for _ in range(n)]
    var_logits = [x.clone() for x in ref_logits]
    ref_logits[2][1] = torch.tensor([3.0, 2.999, 0, 0, 0])
    var_logits[2][1] = torch.tensor([2.99, 3.009, 0, 0, 0])
    ref_seq = torch.tensor([[9, 9, 0, 0, 0, 0], [9, 9, 0, 0, 0, 0]])
    var_seq = torch.tensor([[9, 9, 0, 0, 0, 0], [9, 9, 0, 0, 1, 1]])
    fid = compare_tokens(ref_seq, ref_logits, var_seq, var_logits, 2)
    assert fid["first_divergence"] == [None, 2] and fid["near_tie"] == [None, True]
    reason, note = judge(fid, False, 4, 1e-1)
    assert reason is None and "1 of 2 prompt(s) diverged at a near tie" in note
    assert judge(fid, True, 4, 1e-1)[0] is not None  # a lossless technique gets no excuse
    var_logits[2][1] = torch.tensor([0.0, 9.0, 0, 0, 0])  # a confident flip: the variant's error is large, but
    ref_logits[2][1] = torch.tensor([9.0, 0.0, 0, 0, 0])  # so was the reference's margin... and the noise too
    fid = compare_tokens(ref_seq, ref_logits, var_seq, var_logits, 2)
    assert judge(fid, False, 4, 1e-1)[0] is not None  # rel err of the logits before it gives it away
    assert len(ref_logits) == n and vocab == 5


def test_techniques_name_gate_and_recipe():
    assert REFERENCE.name == "inference_mode" and REFERENCE.lossless
    c = GenConfig(cache="static", compile="default").combined(GenConfig(dtype="bf16"))
    assert c.name == "bf16+static-cache+compile" and not c.lossless and c.size == 3
    assert GenConfig.from_dict(c.to_dict(2), run_threads=2) == c
    assert "CUDA only" in gate(GenConfig(cache="static", compile="reduce-overhead"), "cpu", 1)
    assert "static KV cache" in gate(GenConfig(compile="default"), "cpu", 1)
    assert "batch 1 only" in gate(GenConfig(lookup=True), "cpu", 4)
    assert gate(GenConfig(lookup=True), "cpu", 1) is None
    assert "overflow a static cache" in gate(GenConfig(lookup=True, cache="static"), "cpu", 1)
    assert "--allow-emulated" in gate(GenConfig(dtype="fp16"), "cpu", 1)
    assert gate(GenConfig(dtype="fp16"), "cpu", 1, allow_emulated=True) is None
    assert "CPU only" in gate(GenConfig(quant="int8-dynamic"), "cuda", 1)
    src = recipe_source(GenConfig(quant="int8-weight-only", cache="static", compile="max-autotune-no-cudagraphs"))
    assert "quantize_(model, Int8WeightOnlyConfig())" in src and 'mode="max-autotune-no-cudagraphs"' in src
    assert "'cache_implementation': 'static'" in src and "disable_compile" not in src
    names = {x.name for x in singles(("cache", "compile", "lookup", "threads"), "cpu", 2)}
    assert names == {"static-cache", "static-cache+compile", "static-cache+compile-max-autotune-no-cudagraphs",
                     "prompt-lookup", "threads1"}
    assert "static-cache+compile-reduce-overhead" in {x.name for x in singles(("compile",), "cuda", 8)}


def _row(config: GenConfig, ms: float, status: str = "ok", spread: float = 0.001) -> GenMeasurement:
    row = GenMeasurement(config.name, config.to_dict(), 1, status, gen_config=config, stage="probe")
    row.replica_samples_s = [[ms / 1e3 * (1 + spread * (i - 6)) for i in range(12)]]
    return row


def test_finalists_combine_the_best_of_each_slot_that_paid():
    rows = [_row(REFERENCE, 100), _row(GenConfig(cache="static"), 90), _row(GenConfig(dtype="bf16"), 80),
            _row(GenConfig(quant="int8-weight-only"), 85), _row(GenConfig(attention="eager"), 99, spread=0.05),
            _row(GenConfig(lookup=True), 70), _row(GenConfig(quant="int8-dynamic"), 50, "rejected")]
    found = candidates(rows)
    assert found[0] == GenConfig(dtype="bf16", lookup=True)  # int8-dynamic was rejected; lookup beat the cache
    assert found[1] == GenConfig(lookup=True)  # the best single technique
    assert slot(GenConfig(quant="int8-dynamic")) == slot(GenConfig(dtype="bf16")) == "weights"
    assert slot(GenConfig(lookup=True)) == slot(GenConfig(cache="static")) == "decoding"
    rows[-2] = _row(GenConfig(lookup=True), 95)
    rows.append(_row(GenConfig(threads=1), 92))
    assert candidates(rows)[:2] == [GenConfig(dtype="bf16", cache="static", threads=1),
                                    GenConfig(dtype="bf16", cache="static")]  # without its weakest part
    noisy = _row(GenConfig(cache="static"), 97, spread=0.05)  # 3% faster, within noise: nothing
    assert candidates([_row(REFERENCE, 100, spread=0.05), noisy]) == []
    steady = _row(GenConfig(cache="static"), 97)  # 3% faster beyond noise: it pays
    assert candidates([_row(REFERENCE, 100), steady]) == [GenConfig(cache="static")]
    compiled = GenConfig(cache="static", compile="default")  # bf16 did not pay alone, but compiled it may
    found = candidates([_row(REFERENCE, 100), _row(compiled, 80), _row(GenConfig(dtype="bf16"), 99, spread=0.05),
                        _row(GenConfig(quant="int8-weight-only"), 104)])
    assert found == [compiled, GenConfig(dtype="bf16", cache="static", compile="default")]
    tuned = GenConfig(cache="static", compile="max-autotune-no-cudagraphs")  # fastest in the probe's process
    found = candidates([_row(REFERENCE, 100), _row(compiled, 80), _row(tuned, 78),
                        _row(GenConfig(dtype="bf16"), 99, spread=0.05)])
    assert found == [tuned, compiled, GenConfig(dtype="bf16", cache="static", compile="max-autotune-no-cudagraphs"),
                     GenConfig(dtype="bf16", cache="static", compile="default")]
    assert tuned.size == compiled.size + 1  # the default mode is the simpler one: preferred within noise
    alone = [_row(REFERENCE, 100, spread=0.05), _row(compiled, 100, spread=0.05), _row(tuned, 99, spread=0.05),
             _row(GenConfig(dtype="bf16"), 97, spread=0.05)]  # neither paid alone (OPT-style): compiled bf16 may
    assert candidates(alone) == [GenConfig(dtype="bf16", cache="static", compile="default"), compiled]
    # no admitted weights and nothing paid (Mistral-style on a CPU without bf16): the compiled step is still tried
    assert candidates([_row(REFERENCE, 100, spread=0.05), _row(compiled, 99, spread=0.05)]) == [compiled]


def test_prompts_are_seeded_and_shaped_like_the_timing_batch(tmp_path):
    s = GenerateSettings(new_tokens=4, prompt_len=6, fidelity_prompts=5, seed=3)
    a, b = make_prompts(s, 100, 2), make_prompts(s, 100, 2)
    assert a.timing.shape == (2, 6) and [t.shape for t in a.fidelity] == [(2, 6)] * 3
    assert torch.equal(a.timing, b.timing) and torch.equal(a.fidelity[0], a.timing)
    file = tmp_path / "p.json"
    file.write_text(json.dumps([[1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13]]))
    rows = _read_prompts(GenerateSettings(new_tokens=4, prompt_len=6, prompts=str(file)), 100)
    assert rows == [[1, 2, 3, 4, 5, 6], [8, 9, 10, 11, 12, 13]]
    assert make_prompts(s, 100, 1, rows).timing.tolist() == [[1, 2, 3, 4, 5, 6]]
    for text, message in [("[[1, 2]]", "fewer than the prompt length 6"), ("{}", "a JSON list of lists"),
                          ("[[1, 2, 3, 4, 5, 600]]", "must be in 0 .. 99"), ("nope", "cannot read")]:
        file.write_text(text)
        with pytest.raises(SettingError, match=message):
            _read_prompts(GenerateSettings(new_tokens=4, prompt_len=6, prompts=str(file)), 100)


@pytest.mark.parametrize("options,field", [
    ({"new_tokens": 1}, "new_tokens"), ({"prompt_len": 0}, "prompt_len"), ({"batch_sizes": (1, 0)}, "batch_sizes"),
    ({"techniques": ("x",)}, "techniques"), ({"time_budget_s": 5}, "time_budget_s"), ({"tolerance": 0}, "tolerance")])
def test_settings_name_the_bad_field(options, field):
    with pytest.raises(SettingError) as err:
        GenerateSettings(**options)
    assert err.value.field == field


class OwnLM(torch.nn.Module):
    """A causal LM with its own greedy ``generate`` (no transformers): embedding, GRU, head."""

    vocab_size = 64

    def __init__(self):
        super().__init__()
        self.embed, self.rnn = torch.nn.Embedding(64, 32), torch.nn.GRU(32, 32, batch_first=True)
        self.head = torch.nn.Linear(32, 64)

    def generate(self, input_ids, max_new_tokens):
        out, h = self.rnn(self.embed(input_ids))
        ids = [input_ids]
        for _ in range(max_new_tokens):
            token = self.head(out[:, -1]).argmax(-1, keepdim=True)
            ids.append(token)
            out, h = self.rnn(self.embed(token), h)
        return torch.cat(ids, 1)


def test_a_model_with_its_own_generate_is_measured_on_whole_calls_and_tokens(tmp_path):
    """The worker's session, in process, on a model that is not transformers': transformers'
    options are skipped with the reason, calls are timed whole (prefill not split), lossless
    variants keep the tokens, and the recipe calls the model's own generate()."""
    from pitstop.generate.api import _model_part, _vocab
    from pitstop.generate.recipe import OWN_GENERATE
    from pitstop.generate.session import GenerateSession, is_hf

    torch.manual_seed(0)
    model = OwnLM()
    assert not is_hf(model) and _vocab(model, "own") == 64
    part = _model_part(model, None, 0, tmp_path)
    assert part["hf"] is False
    settings = GenerateSettings(new_tokens=NEW, prompt_len=P)
    prompts = make_prompts(settings, 64, 2)
    torch.save({**part, "prompts": prompts.timing, "fidelity": prompts.fidelity, "new_tokens": NEW,
                "reference_threads": 1}, tmp_path / "payload.pt")
    assert "its own generate()" in gate(GenConfig(cache="static"), "cpu", 1, hf=False)
    assert gate(GenConfig(quant="int8-dynamic"), "cpu", 1, hf=False) is None
    session = GenerateSession()
    policy = {"budget_s": 0.5, "min_samples": 3}
    session.setup(str(tmp_path / "payload.pt"), GenConfig(threads=1).to_dict(), 1, "cpu", policy)
    session.prepare()
    fid = session.fidelity()
    assert fid["identical"] == fid["prompts"] == 4 and fid["logits"] is False and fid["rel_err"] is None
    assert judge(fid, True, 4, 2e-2) == (None, None)
    timed = session.run(3)
    assert len(timed["times"]) == 3 and timed["prefill"] == [-1.0] * 3 and timed["steps"] == []
    broken = dict(fid, first_divergence=[1, None, None, None], identical=3, near_tie=[None] * 4,
                  margin_at_divergence=[None] * 4)
    assert "no near tie can excuse it" in judge(broken, False, 4, 2e-2)[0]
    assert "return model.generate(input_ids, max_new_tokens=max_new_tokens)" in OWN_GENERATE
