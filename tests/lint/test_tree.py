"""The lint's own tree walkers (pitstop.lint.tree) visit exactly what ``ast.walk`` and
``ast.iter_child_nodes`` visit, in the same order, less the Load/Store/Del context objects; on
every node kind Python 3.10 parses (match, walrus, f-strings, star-expressions, decorators, async)
and on real source (torch's own nn package)."""

from __future__ import annotations

import ast
from pathlib import Path

import torch

from pitstop.lint.analysis import Module
from pitstop.lint.tree import children, walk, walk_local

EVERY_KIND = '''
import os, sys as system
from . import sibling
from ..pkg import name as alias
from star import *
global_value: int = 3
@decorator(arg, key=1)
async def f(a, /, b: int = 2, *args, c, d=4, **kw) -> "T":
    global g
    async with ctx() as (x, y), other:
        async for i in aiter():
            await thing
    nonlocal_holder = lambda q, *r, **s: q + r[0]
    try:
        x = yield from gen()
    except (ValueError, TypeError) as err:
        raise RuntimeError("no") from err
    else:
        pass
    finally:
        del x, y[0], z.attr
    if (n := len(a)) > 1 and not b or c is None:
        return f"{a!r:>{b}} {c=}"
    assert a, "message"
    return [i for i in range(3) if i] + list({k: v for k, v in kw.items()}) + [*args, *{1, 2}]
class C(Base, metaclass=Meta):
    attr = 1
    def m(self):
        def inner():
            nonlocal attr
        match self.value:
            case [1, 2, *rest] if rest:
                pass
            case {"k": v, **others}:
                pass
            case Point(x=0, y=yy) | None as captured:
                pass
            case _:
                pass
        x[1:2, ::3] += -y ** 2 @ z
        while True:
            break
        else:
            continue
'''


def _standard(tree: ast.AST) -> list[ast.AST]:
    return [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]


def test_walk_matches_ast_walk_less_the_context_objects() -> None:
    sources = [EVERY_KIND] + [p.read_text() for p in sorted((Path(torch.__file__).parent / "nn").glob("*.py"))]
    for source in sources:
        tree = ast.parse(source)
        assert [id(n) for n in walk(tree)] == [id(n) for n in _standard(tree)]
        for node in ast.walk(tree):
            expected = [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr_context)]
            assert children(node) == expected


def test_no_context_object_is_visited_but_every_name_is() -> None:
    tree = ast.parse(EVERY_KIND)
    seen = list(walk(tree))
    assert not any(isinstance(n, ast.expr_context) for n in seen)
    assert {n.id for n in seen if isinstance(n, ast.Name)} >= {"decorator", "ctx", "gen", "err", "rest", "z"}
    assert any(isinstance(n, ast.MatchClass) for n in seen) and any(isinstance(n, ast.JoinedStr) for n in seen)


def test_walk_local_stays_out_of_nested_scopes_and_module_bodies_agree() -> None:
    tree = ast.parse(EVERY_KIND)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    method = cls.body[1]
    local = list(walk_local(method))
    inner = next(n for n in local if isinstance(n, ast.FunctionDef))
    assert inner.name == "inner" and not any(isinstance(n, ast.Nonlocal) for n in local)
    assert any(isinstance(n, ast.Nonlocal) for n in walk_local(method, into_defs=True))
    mod = Module.of(tree, EVERY_KIND)  # the one walk that fills every scope's body at once
    assert {id(n) for n in mod.body(method)} == {id(n) for n in walk_local(method)}
