"""The core says what its dictionaries hold (issue 46): no parameter, return or annotated variable
of the core is a bare ``dict``, ``Mapping`` or ``MutableMapping``. An object is
``object_meta.KubeObject``, its metadata ``ObjectMeta``, a condition ``Condition``; anything else
names its key and value types (``dict[ObjectId, Member]``, ``Mapping[str, object]`` ...) or a
TypedDict of the shape it has."""

from __future__ import annotations

import ast
from pathlib import Path

import applyset

CORE = Path(applyset.__file__).parent
BARE = frozenset({"dict", "Mapping", "MutableMapping"})


def _annotations(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    yield node.lineno, arg.annotation
            if node.returns is not None:
                yield node.lineno, node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.lineno, node.annotation


def _bare_names(annotation: ast.expr) -> list[str]:
    """The bare mapping names in ``annotation`` (one in quotes included); ``dict[str, int]`` has none."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return _bare_names(ast.parse(annotation.value, mode="eval").body)
    parameterised = {id(node.value) for node in ast.walk(annotation) if isinstance(node, ast.Subscript)}
    found = []
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id in BARE and id(node) not in parameterised:
            found.append(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node is not annotation:
            found += _bare_names(ast.parse(node.value, mode="eval").body)
    return found


def test_no_annotation_of_the_core_is_a_bare_mapping():
    bare = [f"{path.relative_to(CORE)}:{line}: {ast.unparse(annotation)}"
            for path in sorted(CORE.rglob("*.py"))
            for line, annotation in _annotations(ast.parse(path.read_text()))
            if _bare_names(annotation)]
    assert not bare, "say what the mapping holds (object_meta.KubeObject, ObjectMeta, dict[K, V] ...):\n" + "\n".join(bare)


def test_the_check_sees_bare_mappings_and_passes_typed_ones():
    def bare(text: str) -> list[str]:
        return _bare_names(ast.parse(text, mode="eval").body)

    assert bare("dict") == ["dict"] and bare("dict | None") == ["dict"] and bare("list[Mapping]") == ["Mapping"]
    assert bare("'dict | None'") == ["dict"]
    assert not bare("dict[str, int]") and not bare("Mapping[ObjectId, KubeObject] | None") and not bare("KubeObject")
