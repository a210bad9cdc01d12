"""What can be known of a CEL readiness rule without the object: mistakes that compile.

cel-python parses without a type checker, so ``e.status == True`` (``True`` is not CEL's ``true``:
it reads a top-level field named True), ``exists(e, ...) && e.status`` (``e`` exists only inside its
macro), ``.exist(`` (no such macro) or ``status.conditions.map(c, c.type)`` (a list, never a
boolean) all compile, and every evaluation then says "not there yet" until ``wait_timeout``.
``problem`` walks the parsed expression (celpy's lark tree) once, at the check before the first
request, and names the first such mistake with a caret under it, as a parse error is named.

Which identifiers exist: the object's top-level fields and ``self``. Flux declares none of them
(kustomize-controller's status evaluator: "not all CRDs follow the standard five top-level
fields"), so for ``health_check_exprs`` any lower-case name may be a field of a custom resource; a
capitalised one cannot be (Kubernetes field names are lowerCamelCase). An annotation sits on the
object it judges: only that manifest's own top-level fields, ``status`` and ``self`` exist.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

# The macros that bind their first argument as a variable for the others (CEL language definition, "Macros").
BINDING_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
# Global macros: has(field), dyn(value).
GLOBAL_MACROS = frozenset({"has", "dyn"})
STANDARD_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec", "status", "self"})
# Calls whose result is never a boolean, as the expression's last step.
_NOT_BOOLEAN_CALLS = frozenset({"size", "int", "uint", "double", "string", "bytes", "duration", "timestamp",
                                "type", "list", "map", "filter", "getDate", "getDayOfMonth", "getDayOfWeek",
                                "getDayOfYear", "getFullYear", "getHours", "getMilliseconds", "getMinutes",
                                "getMonth", "getSeconds"})
# The rule nodes celpy's grammar wraps every expression in, one inside the other.
_WRAPPERS = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication",
                       "unary", "member", "primary", "paren_expr"})


@functools.lru_cache(maxsize=1)
def functions() -> frozenset[str]:
    """The functions cel-python knows by name (its standard library), macros aside."""
    import celpy.evaluation

    return frozenset(name for name in celpy.evaluation.base_functions if name.isidentifier())


def problem(tree: Any, text: str, fields: frozenset[str] | None = None) -> str | None:
    """The first mistake in the parsed expression ``tree`` of ``text`` that is known without the
    object, with a caret line under ``text``; None when there is none. ``fields``: the top-level
    fields the object has (an annotation's manifest), None when any lower-case name may be one."""
    bound_anywhere = {name for name, _token in _bindings(tree)}
    found = _walk(tree, frozenset(), bound_anywhere, fields)
    if found is None:
        found = _not_boolean(tree)
    if found is None:
        return None
    why, token = found
    return f"{why} (line {token.line}, column {token.column}):\n{_caret(text, token)}"


def _is_tree(node: object) -> bool:
    """A node of celpy's parse tree (a lark Tree; its tokens are strings with a position)."""
    return hasattr(node, "data") and hasattr(node, "children")


def _caret(text: str, token: Any) -> str:
    line = text.splitlines()[token.line - 1] if text.splitlines() else text
    return f"{line}\n{' ' * (token.column - 1)}^"


def _bindings(tree: Any) -> Iterator[tuple[str, Any]]:
    """Every macro variable in ``tree``: ``(name, token)``."""
    for node in tree.iter_subtrees():
        if node.data == "member_dot_arg" and len(node.children) > 2 and str(node.children[1]) in BINDING_MACROS:
            variable = _bare_identifier(node.children[2].children[0]) if node.children[2].children else None
            if variable is not None:
                yield str(variable), variable


def _bare_identifier(tree: Any) -> Any:
    """The identifier token ``tree`` is (an ``expr`` that is only a name), or None."""
    node = tree
    while _is_tree(node) and len(node.children) == 1 and node.data in _WRAPPERS:
        node = node.children[0]
    if _is_tree(node) and node.data == "ident" and node.children:
        return node.children[0]
    return None


def _walk(node: Any, scope: frozenset[str], bound_anywhere: set[str], fields: frozenset[str] | None) -> tuple[str, Any] | None:
    if not _is_tree(node):
        return None
    if node.data == "ident":
        return _undeclared(node.children[0], scope, bound_anywhere, fields)
    if node.data == "member_dot":
        return _walk(node.children[0], scope, bound_anywhere, fields)  # the field name is no identifier
    if node.data in ("member_dot_arg", "ident_arg"):
        return _call(node, scope, bound_anywhere, fields)
    for child in node.children:
        found = _walk(child, scope, bound_anywhere, fields)
        if found:
            return found
    return None


def _call(node: Any, scope: frozenset[str], bound_anywhere: set[str],
          fields: frozenset[str] | None) -> tuple[str, Any] | None:
    method = node.data == "member_dot_arg"
    name_token = node.children[1] if method else node.children[0]
    name = str(name_token)
    args = [c for c in node.children[(2 if method else 1):] if _is_tree(c)]
    arguments = args[0].children if args and args[0].data == "exprlist" else args
    known = (BINDING_MACROS if method else GLOBAL_MACROS) | functions()
    if name not in known:
        suggestion = _closest(name, known)
        hint = f"; did you mean {suggestion}()?" if suggestion else ""
        return f"calls {name}(), which CEL does not have{hint}", name_token
    inner = scope
    if method and name in BINDING_MACROS:
        variable = _bare_identifier(arguments[0]) if arguments else None
        if variable is None or len(arguments) < 2:
            return f"{name}() takes a variable and an expression, as {name}(c, c.type == 'Ready')", name_token
        inner = scope | {str(variable)}
        arguments = arguments[1:]
    if method:
        found = _walk(node.children[0], scope, bound_anywhere, fields)
        if found:
            return found
    for argument in arguments:
        found = _walk(argument, inner, bound_anywhere, fields)
        if found:
            return found
    return None


def _undeclared(token: Any, scope: frozenset[str], bound_anywhere: set[str],
                fields: frozenset[str] | None) -> tuple[str, Any] | None:
    name = str(token)
    if name in scope or name in STANDARD_FIELDS:
        return None
    if name in bound_anywhere:
        return (f"uses {name} outside the macro that declares it ({name} exists only inside that macro's "
                "arguments)"), token
    if name in ("True", "False", "TRUE", "FALSE", "None", "NULL", "Null"):
        return f"uses {name}, which is not declared: CEL writes true, false and null in lower case", token
    if fields is not None:
        if name in fields:
            return None
        return (f"uses {name}, which is not declared: the object has no top-level field {name} "
                f"(did you mean status.{name}?)"), token
    if name[:1].islower():
        return None  # may be a top-level field of a custom resource
    return f"uses {name}, which is not declared (Kubernetes field names start in lower case)", token


def _closest(name: str, known: Iterable[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    return close[0] if close else None


def _not_boolean(tree: Any) -> tuple[str, Any] | None:
    """Why the expression's result can never be a boolean, with the token it starts at, or None."""
    node = tree
    while _is_tree(node) and len(node.children) == 1 and node.data in _WRAPPERS:
        node = node.children[0]
    if not _is_tree(node):
        return None
    first = next(node.scan_values(lambda v: isinstance(v, str)), None)
    if first is None:
        return None
    gives = None
    if node.data == "literal" and first.type != "BOOL_LIT":
        gives = f"a {first.type.removesuffix('_LIT').lower()} literal"
    elif node.data in ("list_lit", "map_lit"):
        gives = f"a {node.data.removesuffix('_lit')}"
    elif node.data in ("addition", "multiplication") and len(node.children) == 2:
        gives = "a number (or text) computed with + - * / %"
    elif node.data == "unary" and _is_tree(node.children[0]) and node.children[0].data == "unary_neg":
        gives = "a negated number"
    elif node.data in ("member_dot_arg", "ident_arg"):
        name = str(node.children[1] if node.data == "member_dot_arg" else node.children[0])
        if name in _NOT_BOOLEAN_CALLS:
            gives = f"the result of {name}()"
    if gives is None:
        return None
    return (f"gives {gives}, not a boolean (a rule must be true or false: compare it, or end a list "
            "with .all(...) or .exists(...))"), first
