"""Where a script's inference runs apart from its training: a test-only branch of a training script,
a test() method only test scripts call, a module-level test() entry and the callers of a function
followed up to a script's entry point (PIT202); whether anything in a file trains (``file_trains``,
PIT201, PIT202 and PIT401) and whether every caller of a function sits in such files up to a
script's top level (``callers_never_train``, PIT201)."""

from __future__ import annotations

import ast
import re

from pitstop.lint.analysis import dotted, is_backward, is_step
from pitstop.lint.project import FnId, Project
from pitstop.lint.project_facts import Site
from pitstop.lint.rules.base import Context
from pitstop.lint.tree import walk


def only_called_apart(project: Project, name: str) -> bool:
    """A method the call graph cannot place (``model = create_model(opt)``, a factory outside the project)
    that some project files call by name (``model.test(z)``), none of which trains, nor calls by name a
    project method that does (``model.optimize_parameters()``): a test script's."""
    callers = [i for i, f in enumerate(project.files) if name in f.attr_calls]
    return bool(callers) and not any(file_trains(project, i) for i in callers)


def file_trains(project: Project, i: int) -> bool:
    """Something in file ``i`` trains: a backward or step in it, in one of its functions or in a project
    function its top level calls, or a project method of a name it calls on anything
    (``model.optimize_parameters()`` on what a factory outside the project made)."""
    key = ("file_trains", (i, ""))
    if key in project._memo:  # once per file: a large tree asks for each file many times
        return project._memo[key]
    f = project.files[i]

    def trains(fid: FnId | None) -> bool:
        return project.fact("backward", fid) or project.fact("step", fid)

    found = f.trains or any(trains((i, k)) for k in f.functions) \
        or any(trains(project.resolve(i, s.ref)) for s in project.sites_in(i, None)) \
        or any(trains(m) for a in f.attr_calls for m in project.methods.get(a, ()))
    project._memo[key] = found
    return found


# what names a test-only run in a branch's condition: ``if args.test:``, ``if args.do_test:``, ``mode == 'test'``
TEST_FLAG = re.compile(r"^(test|do_test|test_only|testing|eval_only|evaluate_only|predict|do_predict|inference|"
                        r"do_inference|infer)$")
EXITS = {"quit", "exit", "sys.exit", "os._exit"}


def test_flag(test: ast.expr) -> bool:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(test_flag(v) for v in test.values)
    if isinstance(test, (ast.Name, ast.Attribute)):
        return bool(TEST_FLAG.match(test.id if isinstance(test, ast.Name) else test.attr))
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.In)):
        found = [test.left, *test.comparators]
        found += [e for c in found if isinstance(c, (ast.Tuple, ast.List, ast.Set)) for e in c.elts]
        return any(isinstance(c, ast.Constant) and isinstance(c.value, str) and bool(TEST_FLAG.match(c.value))
                   for c in found)
    return False


def test_branch(ctx: Context, node: ast.AST) -> bool:
    """The block sits in the body of a test-only branch (``if args.test:``, ``if args.do_test:``) that runs
    no backward or step and after which nothing trains: it ends the run (``quit()``, ``return``), or
    nothing after it in its function (or script) trains. Its tensors never meet autograd."""
    mod, view = ctx.mod, ctx.project
    child, cur = node, mod.parents.get(id(node))
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        if isinstance(cur, ast.If) and any(s is child for s in cur.body) and test_flag(cur.test):
            break
        child, cur = cur, mod.parents.get(id(cur))
    if not isinstance(cur, ast.If) or view is None:
        return False

    def trains(calls: list[ast.AST]) -> bool:
        return any(isinstance(c, ast.Call) and (is_backward(c) or is_step(c, mod) or view.runs("backward", c)
                                                or view.runs("step", c)) for c in calls)

    branch = [n for s in cur.body for n in walk(s)]
    if trains(branch):
        return False
    last = cur.body[-1]
    if isinstance(last, (ast.Return, ast.Raise)) or (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
                                                     and dotted(last.value.func) in EXITS):
        return True
    scope = mod.enclosing_function(cur)
    end = cur.end_lineno or cur.lineno
    if mod.enclosing_loops(cur):
        return False
    return not trains([n for n in mod.body(scope) if getattr(n, "lineno", 0) > end])


# a module-level function named as a test or prediction entry point, that no project code calls
TEST_ENTRY = re.compile(r"^((test|testing|predict|prediction|inference|infer)(_[a-z]+)?|run_test|do_test)$")


def used_in_training_loops(project: Project, fid: FnId) -> bool:
    """A call in a loop that trains uses the result (``action = agent.act(state)`` beside
    ``agent.learn()``), not a statement whose value is dropped (``exp.test(setting)`` after ``exp.train()``)."""
    for i, site in project.sites_of(fid):
        caller = project.files[i].functions.get(site.caller) if site.caller is not None else None
        trains = (caller is not None and (caller.backward or caller.step)) or (site.loop and (
            (caller is None and project.files[i].trains) or loop_trains(project, i, site)))
        if trains and site.result_used:
            return True
    return False


def callers_apart(project: Project, fid: FnId, depth: int, every: bool = True) -> bool:
    """Every call of the function (``every=False``: some call) comes down from a script's entry point
    (a top level that does not train, or does so only in its loops: a call outside them) through
    callers that run no backward or step themselves and call it in no loop that also trains
    (``agent.act(s)`` beside ``agent.learn()``); unknown callers (a framework's) do not count. Some
    call: ``else: exp.test(setting)`` of a test-only run beside ``exp.train(); exp.test()``."""
    sites = project.sites_of(fid)
    if not sites or depth > 3:
        return False
    for i, site in sites:
        caller = project.files[i].functions.get(site.caller) if site.caller is not None else None
        if caller is None:  # a top level: apart unless in a training script's loop
            apart = not (site.loop and (project.files[i].trains or loop_trains(project, i, site)))
        else:  # its caller comes down from an entry point, or is one (an uncalled ``test_net()``)
            apart = not (caller.backward or caller.step or (site.loop and loop_trains(project, i, site))) \
                and (callers_apart(project, (i, caller.key), depth + 1, every) or (
                    "." not in caller.key and bool(TEST_ENTRY.match(caller.key))
                    and not project.sites_of((i, caller.key)) and not project.fact("backward", (i, caller.key))))
        if apart != every:  # every: the first call that is not apart decides; some: the first that is
            return apart
    return every


def loop_trains(project: Project, i: int, site: Site) -> bool:
    return any(project.fact("backward", f) or project.fact("step", f)
               for f in (project.resolve(i, r) for r in site.loop_refs))


def callers_never_train(project: Project, fid: FnId, depth: int = 0) -> bool:
    """Every call of the function sits in a file where nothing trains (``file_trains``), and every
    caller that uses its result is called so in turn, up to a script's top level: a decoding script's
    ``self.beam_search(batch)``, whose beams become words and files. Not a model's method, nor one a
    model's method calls (``model(x)`` calls its forward unseen)."""
    sites = project.sites_of(fid)
    owner = fid[1].rpartition(".")[0]
    if not sites or depth > 4 or (owner and (fid[0], owner) in project.module_classes):
        return False
    for i, s in sites:
        if s.result_trains or file_trains(project, i):
            return False
        if s.result_used and s.caller is not None and not callers_never_train(project, (i, s.caller), depth + 1):
            return False
    return True
