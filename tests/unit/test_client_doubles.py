"""Every client double of the unit tests is checked against ``kube.api.KubeApi``, the interface the core
takes its client as: each request method a double defines accepts every call the interface allows
(the same parameters, by position and by keyword, with their defaults), so a double cannot drift
from ``KubeClient`` unseen. ``KubeClient`` itself implements every member of it.

Doubles are found by reading the test files (any class that defines one of the interface's methods),
so a new one is checked without being registered; the urllib3 pool doubles below stand in for the
connection pool under a real ``KubeClient``, not for the client."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from applyset.kube.api import KubeApi
from applyset.kube.client import KubeClient

UNIT = Path(__file__).resolve().parent
METHODS = {name for name, value in vars(KubeApi).items() if inspect.isfunction(value) and not name.startswith("_")}
# urllib3 PoolManager doubles: their `request` is urllib3's, under a real KubeClient.
POOL_DOUBLES = {"FakeApi", "Canned", "SlowPool", "Recorder", "Stalling"}


def client_doubles() -> list[tuple[str, str, ast.FunctionDef]]:
    """(where, class, method) for each interface method a test class defines."""
    found = []
    for path in sorted(UNIT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name not in POOL_DOUBLES:
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name in METHODS:
                        found.append((f"{path.relative_to(UNIT)}:{item.lineno}", node.name, item))
    return found


def refusals(double: ast.FunctionDef, declared: inspect.Signature) -> list[str]:
    """The calls the interface allows that ``double`` would refuse."""
    args = double.args
    positional = [a.arg for a in args.posonlyargs + args.args][1:]  # without self
    defaults_from = len(positional) - len(args.defaults)
    keyword_only = {a.arg: d is not None for a, d in zip(args.kwonlyargs, args.kw_defaults)}
    problems = []
    for index, (name, param) in enumerate(list(declared.parameters.items())[1:]):
        optional = param.default is not inspect.Parameter.empty
        if name in positional:
            at = positional.index(name)
            if param.kind is param.POSITIONAL_OR_KEYWORD and at != index and not args.vararg:
                problems.append(f"{name} is parameter {at + 1}, the interface's {index + 1}")
            if optional and at < defaults_from:
                problems.append(f"{name} has no default; the interface's may be left out")
        elif name in keyword_only:
            if param.kind is param.POSITIONAL_OR_KEYWORD and not optional:
                problems.append(f"{name} is keyword-only; the interface passes it by position")
            if optional and not keyword_only[name]:
                problems.append(f"{name} has no default; the interface's may be left out")
        elif not args.kwarg and not (param.kind is param.POSITIONAL_OR_KEYWORD and args.vararg):
            problems.append(f"{name} is not accepted")
    # Parameters beyond the interface's own places, without a default: no call of it fills them.
    beyond = len(declared.parameters) - 1
    required = [name for at, name in enumerate(positional) if beyond <= at < defaults_from]
    required += [name for name, has_default in keyword_only.items() if not has_default]
    problems += [f"{name} is required; the interface never passes it"
                 for name in required if name not in declared.parameters]
    return problems


DOUBLES = client_doubles()


def test_the_doubles_are_found():
    classes = {cls for _where, cls, _method in DOUBLES}
    assert {"StubClient", "LostResponseClient", "FakeClient", "ListingClient"} <= classes, classes


@pytest.mark.parametrize("where,cls,method", DOUBLES, ids=[f"{cls}.{m.name}" for _w, cls, m in DOUBLES])
def test_each_client_double_accepts_every_call_the_interface_allows(where, cls, method):
    declared = inspect.signature(getattr(KubeApi, method.name))
    problems = refusals(method, declared)
    assert not problems, f"{where}: {cls}.{method.name} differs from KubeApi.{method.name}{declared}: {problems}"


def test_the_client_implements_the_whole_interface():
    def shape(function):
        return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]

    for name in METHODS:
        assert shape(getattr(KubeClient, name)) == shape(getattr(KubeApi, name)), name
    for name in KubeApi.__annotations__:
        assert name in KubeClient.__init__.__code__.co_names or hasattr(KubeClient, name), name
    assert isinstance(KubeClient.round_trips, property)


def test_the_check_refuses_a_double_that_drifted():
    source = "class C:\n    def list(self, res, namespace, *, label_selector):\n        pass\n"
    method = ast.parse(source).body[0].body[0]
    problems = refusals(method, inspect.signature(KubeApi.list))
    assert "namespace has no default; the interface's may be left out" in problems
    assert "label_selector has no default; the interface's may be left out" in problems
    assert "metadata_only is not accepted" in problems
