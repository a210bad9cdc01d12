"""Which readiness rule judges an object: shown per member in check mode, apply's results and
``applyset_info readiness: true`` (``readiness_rule``), so that a user sees why a member waits.

It follows ``readiness.verdict``'s order: annotations, ``health_check_exprs``, ``overrides``,
the built-in rule of the kind, the bundled ``library``, the generic rule.
"""

from __future__ import annotations

from . import expressions, library
from .readiness import RULES, group_kind_of, is_custom, needs_reading


def rule_for(obj: dict, *, fail_closed: bool = False, overrides: dict | None = None,
             wait_for_load_balancers: bool = False, health_check_exprs: list | None = None) -> str:
    """Which rule ``verdict`` judges ``obj`` by, with the same keywords: ``annotation``,
    ``health_check_exprs[N]``, ``override KEY``, ``built-in``, ``library NAME``, ``generic`` (or
    ``none`` for kinds with nothing to wait for). A failed-when annotation alone comes first:
    ``annotation failed-when, then RULE``."""
    group_kind = group_kind_of(obj)
    annotated = expressions.annotation_rule(obj)
    if expressions.READY_WHEN in annotated:
        return "annotation"
    first = "annotation failed-when, then " if annotated else ""
    chosen = expressions.entry_for(group_kind, health_check_exprs)
    if chosen is not None:
        return f"{first}health_check_exprs[{chosen[0]}]"
    for key in (str(group_kind), group_kind.kind):
        if key in (overrides or {}):
            return f"{first}override {key}"
    if not needs_reading(group_kind, overrides, wait_for_load_balancers):
        return f"{first}none"
    if group_kind in RULES:
        return f"{first}built-in"
    entry = library.entry_for(group_kind, obj, custom=is_custom(group_kind), load_balancers=wait_for_load_balancers)
    if entry is not None:
        return f"{first}library {entry.name}"
    return f"{first}generic"
