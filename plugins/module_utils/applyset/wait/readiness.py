"""Readiness: is one object ready, and why (or why not), and by which rule. Pure: no request, no sleeping.

The rules follow kstatus (sigs.k8s.io/cli-utils/pkg/kstatus), the status logic kpt and Flux
use, and every one answers a ``status.Readiness``. ``verdict`` picks the rule, in one order
written once (``choose``): the rules users write in CEL first (``expressions``: an object's
ready-when / failed-when annotations, then ``health_check_exprs``), then the JMESPath
``overrides`` of its kind (checked by ``check_overrides``), the built-in rule of the kind
(``kind_rules``, ``workload_rules``), the bundled library (``library``) and the generic rule
(``kind_rules.conditions_ready``); ``rule_for`` names the rule without judging (check mode's
``readiness_rule``). ``RULE_OPTIONS`` are the keywords both take. Waiting until objects are
ready or gone, which sends the requests, is ``waiting``.
"""

from __future__ import annotations

import functools
import json
from datetime import datetime
from typing import Any, Callable

from ..object_meta import KubeObject, metadata_of
from ..errors import InputError
from .. import spec
from ..spec import GroupKind
from . import expressions, freshness, library
from .expressions import HealthCheckExprs
from .kind_rules import ALWAYS_READY, RULES, conditions_ready, is_custom
from .status import Readiness, Status
from .status_fields import status_of
from .workload_rules import job_finished, job_ready

RULE_OPTIONS = frozenset({"fail_closed", "overrides", "wait_for_load_balancers", "health_check_exprs"})
# The readiness overrides, once ``check_overrides`` accepted them: ``{"Kind" or "Kind.group": JMESPath}``.
Overrides = dict[str, str]


# ----- overrides ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _compile(expression: str) -> Any:
    try:
        import jmespath
    except ImportError:
        raise InputError(
            "readiness overrides need the Python package 'jmespath'",
            obj="wait overrides", fix="pip install jmespath (it is listed in requirements.txt)",
        ) from None
    try:
        return jmespath.compile(expression)
    except jmespath.exceptions.JMESPathError as err:
        raise InputError(
            f"invalid JMESPath expression {expression!r}: {err}", obj="wait overrides",
            fix="check the expression, e.g. \"status.phase == 'Ready'\"",
        ) from None


def check_overrides(overrides: object) -> None:
    """Check the readiness ``overrides`` (``{"Kind" or "Kind.group": JMESPath}``, or None) before any
    waiting starts.

    Raises:
        InputError: not a mapping, an empty key or expression, an expression that does not
            compile, or the ``jmespath`` package is missing.
    """
    if overrides is None:
        return
    if not isinstance(overrides, dict):
        raise InputError("readiness overrides must be a mapping of Kind or Kind.group to a JMESPath expression",
                         obj="wait overrides", fix='e.g. {"Widget.example.com": "status.ready"}')
    for key, expression in overrides.items():
        if not isinstance(key, str) or not key or not isinstance(expression, str) or not expression.strip():
            raise InputError(f"override {key!r}: expected a Kind or Kind.group and a JMESPath expression",
                             obj="wait overrides", fix='e.g. {"Widget.example.com": "status.ready"}')
        _compile(expression)


def _override_for(group_kind: GroupKind, overrides: Overrides | None) -> tuple[str, str] | None:
    """The key and expression of ``group_kind``'s override: ``Kind.group`` wins over a bare ``Kind``,
    which matches the kind in any group."""
    if not overrides:
        return None
    for key in (str(group_kind), group_kind.kind):
        if key in overrides:
            return key, overrides[key]
    return None


def _short(value: object) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _override_ready(obj: KubeObject, expression: str) -> Readiness:
    value = _compile(expression).search(obj)
    # Python truthiness, so that a count of 0 means not ready (JMESPath would call 0 true).
    if value:
        return Readiness.current(f"override `{expression}` holds")
    return Readiness.in_progress(f"override `{expression}` is {_short(value)}")


# ----- the rule order, and the verdict -------------------------------------------------------


def group_kind_of(obj: KubeObject) -> GroupKind:
    """The group and kind of a manifest or live object ``obj``, from its apiVersion and kind ("" when missing)."""
    api_version = obj.get("apiVersion") or ""
    group = api_version.rpartition("/")[0]
    return GroupKind(group, obj.get("kind") or "")


Judge = Callable[[], Readiness]


def choose(obj: KubeObject, *, fail_closed: bool = False, overrides: Overrides | None = None,
           wait_for_load_balancers: bool = False, health_check_exprs: HealthCheckExprs | None = None,
           field_manager: str | None = None) -> tuple[str, Judge]:
    """The rule that judges ``obj`` (``verdict``'s keywords), as its name and the judging not yet done.

    The name is ``annotation``, ``health_check_exprs[N]``, ``override KEY``, ``built-in``,
    ``library NAME``, ``generic``, or ``none`` for kinds with nothing to wait for; a failed-when
    annotation alone comes first: ``annotation failed-when, then RULE``.
    """
    rule, judge = _rule_of(obj, group_kind_of(obj), fail_closed, overrides, wait_for_load_balancers,
                           health_check_exprs, field_manager)
    annotated = expressions.annotation_rule(obj)
    if not annotated:
        return rule, judge

    def by_annotations() -> Readiness:
        decided = expressions.judge_annotations(obj, annotated)
        return judge() if decided is None else _answer(obj, decided, field_manager)

    if expressions.READY_WHEN in annotated:
        return "annotation", by_annotations
    return f"annotation failed-when, then {rule}", by_annotations


def _rule_of(obj: KubeObject, group_kind: GroupKind, fail_closed: bool, overrides: Overrides | None, load_balancers: bool,
             exprs: HealthCheckExprs | None, field_manager: str | None) -> tuple[str, Judge]:
    """The rule after the annotations, first that applies: the ``health_check_exprs`` entry of the kind,
    its ``overrides`` expression, its built-in rule, the bundled library's, the generic rule."""
    chosen = expressions.entry_for(group_kind, exprs)
    if chosen is not None:
        index, expr = chosen
        judged_by = f"health_check_exprs[{index}]"
        return judged_by, lambda: _answer(obj, expressions.judge_entry(obj, index, expr), field_manager)
    override = _override_for(group_kind, overrides)
    if override is not None:
        key, expression = override
        return f"override {key}", lambda: _override_ready(obj, expression)
    # No CEL entry and no override (both returned above): what needs_reading would say, not asked again.
    awaited = group_kind not in ALWAYS_READY
    if group_kind == spec.SERVICE_KIND and not load_balancers:
        return "none", lambda: Readiness.current("Service (load balancer address not awaited)")
    rule = RULES.get(group_kind)
    if rule is not None:
        return "built-in" if awaited else "none", functools.partial(rule, obj)
    listed = library.entry_for(group_kind, obj, custom=is_custom(group_kind), load_balancers=load_balancers)
    if listed is not None:
        return f"library {listed.name}" if awaited else "none", lambda: _by_library(obj, listed, field_manager)
    return "generic" if awaited else "none", lambda: _generic(obj, group_kind, fail_closed, field_manager)


def rule_for(obj: KubeObject, **rule_options: Any) -> str:
    """The name of the rule ``verdict`` judges ``obj`` by (see ``choose``), without judging it."""
    return choose(obj, **rule_options)[0]


def verdict(obj: KubeObject, *, fail_closed: bool = False, overrides: Overrides | None = None,
            wait_for_load_balancers: bool = False, health_check_exprs: HealthCheckExprs | None = None,
            field_manager: str | None = None) -> Readiness:
    """Whether one live object is ready, why (or why not), and by which rule (``Readiness.rule``).

    ``fail_closed``: a custom resource without any status is not ready (by default it is,
    because many custom resources have no controller reporting status at all).
    ``overrides``: ``{"Kind" or "Kind.group": JMESPath expression}``; a truthy result on
    the object means ready, and replaces the built-in rule of that kind.
    ``wait_for_load_balancers``: Services of type LoadBalancer (and Ingresses) wait for an address.
    ``health_check_exprs``: Flux's ``healthCheckExprs`` (``expressions``), CEL per kind.
    ``field_manager``: the field manager the run applied with; a failure the status reported before
    that apply does not count, for objects whose controller reports no generation (``freshness``).
    An object being deleted is ``TERMINATING``, except a finished Job.

    Raises:
        InputError: an override expression that does not compile, or ``jmespath`` (or, for CEL
            rules, ``cel-python``) is missing.
    """
    rule, judge = choose(obj, fail_closed=fail_closed, overrides=overrides, field_manager=field_manager,
                         wait_for_load_balancers=wait_for_load_balancers, health_check_exprs=health_check_exprs)
    if metadata_of(obj).get("deletionTimestamp"):
        if group_kind_of(obj) == spec.JOB_KIND and job_finished(obj):
            # The TTL controller deletes finished Jobs in the foreground: the Job stays
            # readable, with its final condition, until its Pods are gone.
            return job_ready(obj).judged_by(rule)
        return Readiness(Status.TERMINATING, "being deleted", rule)
    return judge().judged_by(rule)


def _by_library(obj: KubeObject, entry: library.Entry, field_manager: str | None) -> Readiness:
    if entry.needs_status and not status_of(obj):
        return Readiness.in_progress(f"no status reported yet ({entry.name} needs its controller's status)")
    return _answer(obj, entry.judge(obj), field_manager, reported=entry.reported)


def _generic(obj: KubeObject, group_kind: GroupKind, fail_closed: bool, field_manager: str | None) -> Readiness:
    if fail_closed and is_custom(group_kind) and not status_of(obj):
        return Readiness.in_progress("no status reported yet (fail_closed)")
    found = conditions_ready(obj)
    if found.final:
        older = freshness.older_than_our_write(obj, field_manager)
        if older:
            return Readiness.in_progress(f"{found.message} ({older})")
    return found


def _answer(obj: KubeObject, found: Readiness, field_manager: str | None,
            reported: Callable[[KubeObject], datetime | None] = freshness.status_write) -> Readiness:
    """A ``library`` or CEL rule's answer as a verdict: a failure stops waiting at once, unless the
    status reported it before our apply (then it waits for the controller's next word)."""
    if found.final:
        older = freshness.older_than_our_write(obj, field_manager, reported)
        if older:
            return Readiness.in_progress(f"{found.message} ({older})")
        return Readiness.failed(f"failed: {found.message}")
    return found


def needs_reading(group_kind: GroupKind, overrides: Overrides | None, wait_for_load_balancers: bool,
                  health_check_exprs: HealthCheckExprs | None = None) -> bool:
    """Whether waiting must read objects of ``group_kind`` to judge them, given the rule options."""
    if _override_for(group_kind, overrides) is not None:
        return True
    if expressions.entry_for(group_kind, health_check_exprs) is not None:
        return True
    if group_kind == spec.SERVICE_KIND:
        return wait_for_load_balancers
    return group_kind not in ALWAYS_READY
