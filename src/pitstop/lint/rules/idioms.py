"""Training idioms that run a forward with autograd on whose graph no backward uses, by convention
rather than by mistake: acting in an environment, a target network's value, a GAN's fake batch
detached into the discriminator. PIT201 leaves them alone inside code that trains. Also what makes a
forward record nothing: frozen models, autograd off for the whole file, and files that test autograd."""

from __future__ import annotations

import ast

from pitstop.lint.analysis import Module, dotted, names_in, walk_local
from pitstop.lint.flow import carried
from pitstop.lint.tree import walk


def in_env_loop(mod: Module, call: ast.Call) -> bool:
    """Acting in an environment while training (reinforcement learning): a loop around the forward
    calls ``env.step(action)``; the action is chosen with the policy as it stands."""
    for loop in mod.enclosing_loops(call):
        for n in walk_local(loop):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step" \
                    and "env" in (dotted(n.func.value) or "").rsplit(".", 1)[-1].lower():
                return True
    return False


def target_network(call: ast.Call) -> bool:
    """A target network's forward in a function that trains (``self.target_qnet(s2)``, ``critic_target(s)``):
    the value a loss is trained towards, by convention detached rather than run under no_grad."""
    return "target" in (dotted(call.func) or "").lower()


def detached_into_forward(mod: Module, scope: ast.AST, call: ast.Call, calls: list[ast.Call]) -> bool:
    """``fake = G(z)`` then ``D(fake.detach())`` (or ``z_perm = permute(z).detach()``, ``D(z_perm)``):
    the forward's value, detached, is another model's input in a scope that trains, as a GAN's
    discriminator step takes it. The generator's graph is dropped, but the idiom is the usual one."""
    bound = bound_by(mod, call)
    inline = mod.parents.get(id(call))
    detached: list[ast.Call] = []
    at = (call.lineno, call.col_offset)
    for n in mod.body(scope):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "detach" \
                and (n.lineno, n.col_offset) >= at and (
                n.func.value is call or (inline is not None and n.func.value is inline)
                or bound & set(carried(n.func.value))):
            detached.append(n)
    if not detached:
        return False
    fed = {x for d in detached for x in bound_by(mod, d)}
    first = min((d.lineno, d.col_offset) for d in detached)
    for other in calls:
        if other is call or (other.end_lineno or 0, other.end_col_offset or 0) < first:
            continue  # (the next iteration's forward reads a detached state: not this)
        args = [*other.args, *(k.value for k in other.keywords)]
        if any(d in walk(a) for a in args for d in detached) or fed & {x for a in args for x in carried(a)}:
            return True
    return False


def bound_by(mod: Module, node: ast.AST) -> set[str]:
    """Names the statement holding ``node`` binds."""
    cur = mod.parents.get(id(node))
    while cur is not None and not isinstance(cur, ast.stmt):
        cur = mod.parents.get(id(cur))
    if isinstance(cur, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = cur.targets if isinstance(cur, ast.Assign) else [cur.target]
        return {n for t in targets for n in names_in(t)}
    return set()


def frozen_models(mod: Module) -> set[str]:
    """Models whose parameters are frozen (``m.requires_grad_(False)``, ``for p in m.parameters():
    p.requires_grad = False``): their forwards record nothing from the weights."""
    found = set()
    for call in mod.calls:
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr == "requires_grad_" and call.args \
                and isinstance(call.args[0], ast.Constant) and call.args[0].value is False:
            if (d := dotted(f.value)) is not None:
                found.add(d)
    for loop in mod.loop_nodes:
        if isinstance(loop, (ast.For, ast.AsyncFor)) and isinstance(loop.iter, ast.Call) \
                and isinstance(loop.iter.func, ast.Attribute) and loop.iter.func.attr in ("parameters",):
            if any(isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value is False
                   and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in n.targets)
                   for n in walk_local(loop)):  # ``p.requires_grad = True`` unfreezes: not this
                if (d := dotted(loop.iter.func.value)) is not None:
                    found.add(d)
    return found


def receiver_frozen(call: ast.Call, frozen: set[str]) -> bool:
    return isinstance(call.func, ast.Attribute) and dotted(call.func.value) in frozen


def grad_disabled_globally(mod: Module) -> bool:
    """``torch.set_grad_enabled(False)`` as a statement at module level, or anywhere in a file that
    trains nothing and never turns autograd back on (an inferer's constructor turns it off for the
    process): the script runs without autograd."""
    if any(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and mod.is_no_grad(s.value)
           for s in mod.tree.body):
        return True
    switches = [c for c in mod.calls if isinstance(mod.parents.get(id(c)), ast.Expr)
                and (mod.qualname(c.func) or "").endswith("set_grad_enabled")]
    return bool(switches) and not mod.trains and all(
        c.args and isinstance(c.args[0], ast.Constant) and c.args[0].value is False for c in switches)


def tests_autograd(mod: Module) -> bool:
    """A file that runs gradcheck: its forwards build graphs on purpose, to test them."""
    return any((mod.qualname(c.func) or "").rsplit(".", 1)[-1] in ("gradcheck", "gradgradcheck") for c in mod.calls)
