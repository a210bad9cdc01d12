"""CEL over one Kubernetes object: compile once, evaluate to True, False or "not there yet".

The readiness rules users write (``wait_rules.health_check_exprs``, the ready-when and
failed-when annotations) are CEL, as Flux's ``healthCheckExprs`` are: the object's top-level
fields are the variables (``status.conditions.exists(c, c.type == 'Ready')``), and ``self`` is
the whole object (as in Flux's ``readyExpr``). The runtime is ``cel-python`` (imports as
``celpy``): pure Python, so it installs from PyPI on every Python the collection supports
without a compiler; Google's ``cel-expr-python`` is 60 times faster but ships native wheels for
Python 3.11 and later only (docs/user-guide.md, "Readiness rules", has the comparison). It is
imported on first use, so that runs without CEL rules do not need it.

Unlike Flux, a field that is not there yet (no ``status`` at all, no ``conditions``) is not an
error: ``evaluate`` says None, "cannot tell yet", and the caller keeps waiting.
"""

from __future__ import annotations

import functools
from typing import Any

from ..object_meta import KubeObject
from ..errors import InputError
from . import cel_check

# cel-python has no optional-field syntax (`status.?conditions.orValue([])`); Flux users write it
# only to survive missing fields, which need no guard here.
_OPTIONAL_SYNTAX = (".?", "orValue(", "optional.")
_FIX_SYNTAX = ("write the expression as a CEL boolean over the object's fields, for example "
               "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')")


class CelError(Exception):
    """An expression that does not compile; ``where`` says at which line and column, with a caret."""

    def __init__(self, message: str, where: str = ""):
        super().__init__(message)
        self.where = where


def _celpy(what: str) -> Any:
    try:
        import celpy
    except ImportError:
        raise InputError(
            f"{what} needs the Python package 'cel-python' (imports as celpy)",
            obj=what, fix="pip install cel-python (it is listed in the collection's requirements.txt)",
        ) from None
    return celpy


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    return _celpy("a CEL readiness rule").Environment()


@functools.lru_cache(maxsize=512)
def compile_expression(text: str) -> Any:
    """The program for the CEL expression ``text``, compiled once per text (cached).

    Raises:
        CelError: the expression does not parse (``where`` has the position), or uses the optional
            field syntax, which cel-python does not have.
        InputError: cel-python is not installed.
    """
    return _environment().program(parse(text))


@functools.lru_cache(maxsize=512)
def parse(text: str) -> Any:
    """The parsed CEL expression ``text`` (celpy's tree), once per text (cached); raises as
    ``compile_expression``."""
    celpy = _celpy("a CEL readiness rule")
    if any(token in text for token in _OPTIONAL_SYNTAX):
        raise CelError("the optional-field syntax (.?field, orValue(), optional.of) is not supported; a field "
                       "that is not there yet already means 'in progress' here, so no guard is needed")
    try:
        ast = _environment().compile(text)
    except celpy.CELParseError as err:
        line, column = getattr(err, "line", None), getattr(err, "column", None)
        at = f"at line {line}, column {column}" if line and column else "where marked"
        caret = str(err.args[0]).rstrip("\n") if err.args else ""
        raise CelError(f"does not parse {at}", where=caret) from None
    return ast


def check(text: object, fields: frozenset[str] | None = None) -> str | None:
    """Why ``text`` is not a usable CEL expression, or None: not a string, empty, does not compile,
    or a mistake that compiles but can be known without the object (``cel_check``: an identifier
    that is not declared, a function CEL does not have, a result that cannot be boolean).
    ``fields``: the top-level fields of the object judged, when known (an annotation's manifest)."""
    if not isinstance(text, str) or not text.strip():
        return "must be a non-empty CEL expression (a string)"
    try:
        compile_expression(text)
    except CelError as err:
        # The caret line under the expression shows where it fails: keep it on lines of its own.
        return f"{err}:\n{err.where}" if err.where else str(err)
    return cel_check.problem(parse(text), text, fields)


class Activation:
    """The variables of one object, converted to CEL values once and shared by its expressions."""

    def __init__(self, obj: KubeObject):
        self.obj = obj
        self._values: dict[str, Any] | None = None  # each top-level field and ``self``, as CEL values

    def values(self) -> dict[str, Any]:
        if self._values is None:
            celpy = _celpy("a CEL readiness rule")
            values = {key: celpy.json_to_cel(value) for key, value in self.obj.items() if isinstance(key, str)}
            values["self"] = celpy.json_to_cel(self.obj)
            self._values = values
        return self._values


def evaluate(text: str, activation: Activation) -> tuple[bool | None, str]:
    """Evaluate the expression ``text`` (checked already) on the object of ``activation``.

    Returns ``(True or False, "")``, or ``(None, why)`` when it cannot tell yet: a field it reads
    is not there, or the value is not a boolean, or it failed at run time (the why says which).
    """
    celpy = _celpy("a CEL readiness rule")
    try:
        result = compile_expression(text).evaluate(activation.values())
    except celpy.CELEvalError as err:
        return None, _eval_error(err)
    if isinstance(result, celpy.CELEvalError):
        return None, _eval_error(result)
    if isinstance(result, celpy.celtypes.BoolType) or isinstance(result, bool):
        return bool(result), ""
    return None, f"is not a boolean (it gave {type(result).__name__})"


def _eval_error(err: Exception) -> str:
    args: tuple = tuple(getattr(err, "args", ()) or ())
    cause = args[1] if len(args) > 1 else None
    if cause is KeyError:
        # The only KeyErrors are names and map keys that are not there (yet).
        missing = args[2][0] if len(args) > 2 and args[2] else None
        if not isinstance(missing, str):
            missing = str(args[0]).replace("no such member in mapping: ", "") if args else None
        named = f" ({missing})" if isinstance(missing, str) and len(missing) < 80 else ""
        return f"reads a field that is not there yet{named}"
    text = str(args[0]) if args else str(err)
    return f"failed: {text[:200]}"


@functools.lru_cache(maxsize=512)
def _all_receivers(text: str) -> tuple[tuple[str, Any], ...]:
    """The lists the ``all()`` macros of ``text`` run over: ``(their source text, program)``."""
    found = []
    for node in parse(text).iter_subtrees_topdown():
        if node.data == "member_dot_arg" and len(node.children) > 1 and str(node.children[1]) == "all":
            receiver = node.children[0]
            source = text[receiver.meta.start_pos:receiver.meta.end_pos]
            found.append((source, _environment().program(receiver)))
    return tuple(found)


def empty_all(text: str, activation: Activation) -> str | None:
    """The source of a list that an ``all()`` of ``text`` (checked already) runs over and that is
    empty on the object of ``activation``, or None. ``all()`` of nothing is true, so
    ``status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')`` holds on a first
    status without a Ready condition: that is no failure the controller reported."""
    celpy = _celpy("a CEL readiness rule")
    for source, program in _all_receivers(text):
        try:
            value = program.evaluate(activation.values())
        except celpy.CELEvalError:
            continue  # reads a macro's variable (an all() inside another macro) or a missing field
        if isinstance(value, list) and not value:
            return source
    return None
