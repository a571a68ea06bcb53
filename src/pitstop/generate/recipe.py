"""The generation recipe: ``apply(model)`` (the measured set-up), ``GENERATE_KWARGS`` and
``generate(model, input_ids, max_new_tokens)``, plus ``build()`` and a runnable ``__main__`` where
the model came from a spec; written with recipe.json by ``--save``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pitstop.engine.recipe import checked
from pitstop.generate.techniques import recipe_source

if TYPE_CHECKING:
    from pitstop.generate.result import GenerateReport
    from pitstop.generate.settings import GenerateSettings

GENERATE = '''

def generate(model, input_ids, max_new_tokens):
    """The prompt followed by the new token ids, as model.generate returns them (greedy)."""
    with torch.inference_mode():
        return model.generate(input_ids, attention_mask=torch.ones_like(input_ids),
                              max_new_tokens=max_new_tokens, **GENERATE_KWARGS)
'''


OWN_GENERATE = '''

def generate(model, input_ids, max_new_tokens):
    """The prompt followed by the new token ids: the model's own generate(), as pitstop measured it."""
    with torch.inference_mode():
        return model.generate(input_ids, max_new_tokens=max_new_tokens)
'''


def generate_recipe(report: GenerateReport, spec: Any, settings: GenerateSettings, hf: bool = True) -> str:
    """The recipe module's text for the report's winner (``hf=False``: the model's own ``generate``)."""
    config = report.outcome.winner
    header = (f'"""pitstop recipe for {report.model}: {config.name} (generate {settings.new_tokens} tokens after '
              f"{settings.prompt_len}, batch {settings.search_batch}, {settings.resolved_threads} threads, "
              f'{settings.device}), greedy"""\n\nimport torch\n\n\n')
    text = header + recipe_source(config) + (GENERATE if hf else OWN_GENERATE)
    build = _build(spec, settings.seed)
    if build is None:
        return checked(text)
    return checked(
        f"{text}\n\n# -- the model pitstop measured (seed {settings.seed}) --\n\n{build}\n\n"
        f'if __name__ == "__main__":\n'
        f"    import time\n\n"
        f"    torch.manual_seed({settings.seed})  # the same random weights pitstop measured\n"
        f"    model = apply(build())\n"
        f"    ids = torch.randint(0, {report.vocab}, ({settings.search_batch}, {settings.prompt_len}), "
        f"generator=torch.Generator().manual_seed({settings.seed}))\n"
        f"    generate(model, ids, {settings.new_tokens})  # the first call compiles where the recipe compiles\n"
        f"    start = time.perf_counter()\n"
        f"    out = generate(model, ids, {settings.new_tokens})\n"
        f"    seconds = time.perf_counter() - start\n"
        f'    print(f"{{out.shape[1] - ids.shape[1]}} new tokens x {{out.shape[0]}} in {{seconds:.3f}} s: '
        f'{{out.shape[0] * (out.shape[1] - ids.shape[1]) / seconds:.1f}} tokens/s")\n'
        f'    print("tokens:", out[0, ids.shape[1]:].tolist())\n')


def _build(spec: Any, seed: int) -> str | None:
    if spec is None:
        return None
    from pitstop.engine.fingerprint import spec_fingerprint
    from pitstop.engine.recipe import factory_code
    from pitstop.engine.source import SpecSource

    return factory_code(SpecSource(spec, None, seed), spec_fingerprint(spec))


def write_recipe(report: GenerateReport, folder: Path) -> None:
    """recipe.py and recipe.json as the folder ``folder``, written whole or not at all."""
    from pitstop._io import write_folder

    doc = report.to_dict()
    meta = {"kind": "generate-recipe", "model": report.model, "winner": doc["winner"],
            "settings": report.settings, "environment": report.environment}
    written = write_folder(folder, {"recipe.py": report.recipe, "recipe.json": json.dumps(meta, indent=2)})
    report.saved = {"recipe": written[0], "json": written[1]}
