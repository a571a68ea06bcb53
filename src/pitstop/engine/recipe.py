"""What every recipe writer shares (optimize's, train's, generate's): generated source checked to
parse before it runs or is written, executed as if it were a file (tracebacks show its lines), a
docstring literal that no user string can end, and the ``factory()`` / ``build()`` code that
rebuilds the user's model without pitstop."""

from __future__ import annotations

import ast
import linecache
from pathlib import Path
from typing import Any

from pitstop._optional import quiet_torchao
from pitstop.engine.fingerprint import CHECK_SOURCE, check_call
from pitstop.engine.source import SpecSource
from pitstop.models.zoo import ZOO

__all__ = ["build", "checked", "docstring_literal", "factory_code"]


def checked(source: str) -> str:
    """Generated code is parsed before it is executed or written: a string that escaped its quotes
    would surface here as a bug, not as code run in the user's process."""
    try:
        ast.parse(source)
    except SyntaxError as exc:
        raise RuntimeError(f"pitstop generated a recipe that does not parse (line {exc.lineno}): "
                           f"{exc.msg}; please report it") from None
    return source


def build(source: str, path: Path, name: str = "pitstop_recipe") -> dict[str, Any]:
    """Execute recipe source as if it were the file ``path`` (tracebacks show its lines)."""
    filename = str(path)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": name, "__file__": filename}
    quiet_torchao()  # an int8 recipe imports torchao
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def docstring_literal(text: str) -> str:
    """A docstring literal for ``text``: triple-quoted where that is safe, else ``repr`` (a model
    spec with quotes, backslashes or control characters must not end the string or inject code)."""
    plain = '"""' not in text and "\\" not in text and not text.endswith('"') \
        and text.replace("\n", "").isprintable()
    return f'"""{text}"""' if plain else repr(text)


def factory_code(source: SpecSource, measured_on: dict[str, str] | None = None,
                 takes_batch_size: bool | None = None) -> str | None:
    """``factory()`` (the user's factory, called as pitstop called it) and ``build()`` (the model
    alone) as code, every user string through ``repr``; with ``measured_on`` (the file's
    fingerprint) ``factory()`` first warns when the file changed. A zoo model embeds its own
    definitions; None where there is no code to write."""
    spec = source.spec
    if spec.kind == "zoo":
        recipe_build = ZOO[spec.target].recipe_build
        return recipe_build() if recipe_build else None
    takes = spec.takes_batch_size() if takes_batch_size is None else takes_batch_size
    args = "batch_size=BATCH_SIZE" if takes else ""
    check = check_call(measured_on)
    if spec.kind == "file":
        path = measured_on["path"] if measured_on and measured_on.get("path") else str(Path(spec.target).resolve())
        load = (f"    import importlib.util\n\n{check}"
                f"    module_spec = importlib.util.spec_from_file_location('user_model', {path!r})\n"
                f"    module = importlib.util.module_from_spec(module_spec)\n"
                f"    module_spec.loader.exec_module(module)\n")
    else:
        load = f"    import importlib\n\n{check}    module = importlib.import_module({spec.target!r})\n"
    return ((CHECK_SOURCE.lstrip("\n") + "\n\n" if measured_on else "") +
            f'def factory():\n    """The factory pitstop measured: a model, or (model, inputs, ...)."""\n{load}'
            f"    return getattr(module, {spec.factory!r})({args})\n\n\n"
            "def build():\n"
            '    """The model alone."""\n'
            "    value = factory()\n"
            "    return value[0] if isinstance(value, (tuple, list)) else value\n")
