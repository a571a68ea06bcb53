"""The source edits of ``pitstop train SCRIPT`` on real text: a keyword set on a call (added,
replaced, through ``**kwargs``), lines inserted before a statement or after the imports,
statements wrapped in a ``with`` (nested blocks, comments, non-ASCII), and the cases that are not
mechanical. Every result must parse; the diff must apply with ``git apply``."""

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

from pitstop.train.config import NAIVE, TrainConfig
from pitstop.train.script import edits
from pitstop.train.script.source_edit import NotMechanical, Where, insert_after_imports, insert_before, set_keyword
from pitstop.train.script.source_edit import wrap as wrap_statements

AUTOCAST = "with torch.autocast('cpu', dtype=torch.bfloat16):"


@pytest.mark.parametrize(("before", "after"), [
    ("opt = torch.optim.AdamW(params, lr=1e-3)\n", "opt = torch.optim.AdamW(params, lr=1e-3, fused=True)\n"),
    ("opt = torch.optim.AdamW(params, lr=1e-3, fused=False)\n",
     "opt = torch.optim.AdamW(params, lr=1e-3, fused=True)\n"),
    ("opt = torch.optim.AdamW(\n    params,\n    lr=1e-3,\n)\n",
     "opt = torch.optim.AdamW(\n    params,\n    lr=1e-3, fused=True,\n)\n"),
    ("opt = torch.optim.AdamW(groups, lr=lr, betas=betas, **extra_args)\n",
     "opt = torch.optim.AdamW(groups, lr=lr, betas=betas, **{**extra_args, 'fused': True})\n"),
    ("opt = AdamW()\n", "opt = AdamW(fused=True)\n"),
    ("x = 'ü'; opt = torch.optim.AdamW(p)  # ü\n", "x = 'ü'; opt = torch.optim.AdamW(p, fused=True)  # ü\n"),
])
def test_set_keyword(before, after):
    assert set_keyword(before, 1, "fused", "True", "AdamW") == after
    ast.parse(after)


def test_set_keyword_picks_the_named_call_on_the_line():
    text = "opt = make(torch.optim.SGD(model.parameters(), lr=0.1), log(x))\n"
    assert set_keyword(text, 1, "foreach", "True", "SGD") == \
        "opt = make(torch.optim.SGD(model.parameters(), lr=0.1, foreach=True), log(x))\n"


def test_insert_before_the_training_loop_inside_a_function():
    text = "def main():\n    model = Net()\n    # train\n    for x in data:\n        loss = model(x)\n"
    out = insert_before(text, Where("f.py", 5, 1, "main"), ["model.compile()"])
    assert out == "def main():\n    model = Net()\n    # train\n    model.compile()\n    for x in data:\n" \
                  "        loss = model(x)\n"


@pytest.mark.parametrize(("text", "line", "new", "after"), [
    # time_sequence_prediction's shape: the loop, and the model it trains, under `if __name__ == ...`
    ("import torch\nif __name__ == '__main__':\n    seq = Net()\n    for i in range(9):\n"
     "        def closure():\n            return seq(x)\n        opt.step(closure)\n", 7, "seq.compile()",
     "import torch\nif __name__ == '__main__':\n    seq = Net()\n    seq.compile()\n    for i in range(9):\n"),
    # inside `with` and `try`, before the outermost loop (not the inner one)
    ("with run():\n    model = Net()\n    try:\n        for e in range(2):\n            for x in data:\n"
     "                model(x)\n    finally:\n        pass\n", 6, "model.compile()",
     "with run():\n    model = Net()\n    try:\n        model.compile()\n        for e in range(2):\n"),
    # no loop: right before the statement (a Trainer's fit), inside the `if` block
    ("if __name__ == '__main__':\n    model = Net()\n    trainer.fit(model)\n", 3, "model.compile()",
     "if __name__ == '__main__':\n    model = Net()\n    model.compile()\n    trainer.fit(model)\n"),
])
def test_insert_before_the_loop_looks_inside_if_with_and_try_blocks(text, line, new, after):
    out = insert_before(text, Where("f.py", line, 0, "<module>"), [new])
    assert out.startswith(after), out
    ast.parse(out)


def test_insert_after_imports_adds_torch_when_missing():
    text = '"""doc"""\nimport os\nfrom x import y\n\nprint(1)\n'
    assert insert_after_imports(text, ["torch.set_num_threads(1)"]) == \
        '"""doc"""\nimport os\nfrom x import y\nimport torch\ntorch.set_num_threads(1)\n\nprint(1)\n'


def test_wrap_the_forward_and_loss_in_a_nested_block():
    text = ("for step in range(10):\n"
            "    optimizer.zero_grad()\n"
            "    with ctx:\n"
            "        logits, loss = model(X, Y)  # the forward\n"
            "\n"
            "    # prefetch\n"
            "    X, Y = get_batch('train')\n"
            "    loss.backward()\n")
    out = wrap_statements(text, Where("f.py", 4, 0), Where("f.py", 8, 0), AUTOCAST)
    assert out == ("for step in range(10):\n"
                   "    optimizer.zero_grad()\n"
                   f"    {AUTOCAST}\n"
                   "        with ctx:\n"
                   "            logits, loss = model(X, Y)  # the forward\n"
                   "\n"
                   "        # prefetch\n"
                   "        X, Y = get_batch('train')\n"
                   "    loss.backward()\n")
    ast.parse(out)


@pytest.mark.parametrize(("text", "lines", "needle"), [
    ("for x in d:\n    loss_fn(model(x), y).backward()\n", (2, 2), "are one statement"),
    ("for x in d:\n    out = model(x)\n    s = '''a\nb'''\n    out.sum().backward()\n", (2, 5), "a string spans"),
    ("if a:\n    out = model(x)\nelse:\n    out.sum().backward()\n", (2, 4), "one statement"),
])
def test_what_is_not_mechanical_says_why(text, lines, needle):
    with pytest.raises(NotMechanical, match=needle):
        wrap_statements(text, Where("f.py", lines[0], 0), Where("f.py", lines[1], 0), AUTOCAST)


PLAIN = Path(__file__).parent / "scripts" / "plain_loop.py"


def _found(tmp_path: Path) -> dict:
    """What the discovery run finds in plain_loop.py (its lines, as data)."""
    script = tmp_path / "train.py"
    shutil.copy(PLAIN, script)
    text = script.read_text().splitlines()
    line = lambda needle: next(i + 1 for i, t in enumerate(text) if needle in t)  # noqa: E731
    main = {"file": str(script), "function": "main", "first_line": line("def main")}
    return {"script": str(script), "trainers": [],
            "sites": {"optimizers": [{"class": "AdamW", "flags": ["foreach", "fused"],
                                      "site": {**main, "line": line("optimizer = torch.optim")}}],
                      "zero_grad": [{**main, "line": line("optimizer.zero_grad()")}],
                      "forward": {"stack": [{**main, "line": line("logits = model(")}], "input_dims": [2]},
                      "backward": {"stack": [{**main, "line": line("loss.backward()")}]},
                      "model": {**main, "line": line("logits = model("), "expression": "model"}}}


def test_a_full_variant_edits_every_site_and_the_diff_applies(tmp_path):
    found = _found(tmp_path)
    config = TrainConfig(precision="bf16-autocast", compile="default", optimizer="fused", zero_grad="zeros", threads=1)
    assert edits.plan(NAIVE, found) == []
    edited = edits.apply(edits.plan(config, found))
    text = edited[found["script"]]
    ast.parse(text)
    assert "lr=args.lr, fused=True)" in text and "optimizer.zero_grad(set_to_none=False)" in text
    assert "    model.compile()\n    for step in range(args.iters):" in text
    assert f"        {AUTOCAST}\n            logits = model(" in text
    assert "torch.set_num_threads(1)" in text
    patch = edits.diff(edited, str(tmp_path))
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply", "--check", "-"], cwd=tmp_path, input=patch, text=True, check=True)


def test_an_optimizer_that_already_runs_fused_is_not_a_variant(tmp_path):
    """The HF Trainer's default optim is adamw_torch_fused on torch >= 2.8: the fused variant would
    be the unmodified script measured twice (a difference there is noise), so it is not planned."""
    found = _found(tmp_path)
    found["sites"]["optimizers"][0]["set"] = {"foreach": None, "fused": True}
    with pytest.raises(NotMechanical, match="AdamW already runs with fused=True"):
        edits.plan(TrainConfig(optimizer="fused"), found)
    with pytest.raises(NotMechanical, match="foreach cannot be added"):  # torch refuses both flags
        edits.plan(TrainConfig(optimizer="foreach"), found)
    found["sites"]["optimizers"][0]["set"] = {"foreach": None, "fused": None}
    assert edits.plan(TrainConfig(optimizer="fused"), found)  # not set: edited
