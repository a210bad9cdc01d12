"""The readiness rules users write in CEL: ``wait_rules.health_check_exprs`` and per-object annotations.

``health_check_exprs`` is Flux's ``healthCheckExprs`` (kustomize-controller, docs/spec/v1/
kustomizations.md and RFC-0009), so a Flux user pastes theirs: a list of ``apiVersion``,
``kind`` and CEL expressions ``current`` (required), ``inProgress`` and ``failed``. As in Flux,
an object whose ``status.observedGeneration`` is behind its ``metadata.generation`` is in
progress without evaluating anything; then ``inProgress``, ``failed`` and ``current`` are
evaluated in that order and the first that is true decides; none true is in progress. An entry
matches by API group and kind (any version), as Flux's status reader does; an entry without ``kind``
matches every kind of its group, after those naming the kind. A ``failed`` that holds only because
an ``all()`` ran over an empty list (no such condition yet) is in progress, not a failure. Unlike Flux, an
expression that reads a field that is not there yet is "in progress", not an error.

Per object, the annotations ``applyset.kubernetes.ansible/failed-when`` and ``.../ready-when``
(CEL, the same variables) are evaluated in that order, once the status is not behind the spec (as
for ``health_check_exprs``); none true is in progress.

Every expression is compiled before the run's first request (``problems_in_exprs``,
``problems_in_annotations``) and cached; judging returns a ``Readiness``, which
``readiness.verdict`` turns into its answer (as a library rule's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..object_meta import KubeObject, annotations_of, metadata_of
from ..errors import InputError
from ..spec import GroupKind
from . import cel, cel_check
from .library import controller_reason, generation_behind
from .status import Readiness, Status

_T = TypeVar("_T")

READY_WHEN = "applyset.kubernetes.ansible/ready-when"
FAILED_WHEN = "applyset.kubernetes.ansible/failed-when"
READY, IN_PROGRESS, FAILED = Status.CURRENT, Status.IN_PROGRESS, Status.FAILED
# Flux's order: the first expression that holds decides.
_ORDER = (("inProgress", IN_PROGRESS), ("failed", FAILED), ("current", READY))
_KNOWN_FIELDS = frozenset({"apiVersion", "kind", "current", "inProgress", "failed"})
# One ``health_check_exprs`` entry as the user wrote it (``problems_in_exprs`` checked its fields).
HealthCheckEntry = dict[str, Any]
# The entries as given; one that is not a mapping matches no kind (``problems_in_exprs`` refused it).
HealthCheckExprs = Sequence[object]
# An object's ready-when / failed-when annotations: ``{annotation: CEL expression}``.
AnnotationRule = dict[str, str]


def _group_kind(entry: HealthCheckEntry) -> GroupKind:
    api_version = entry.get("apiVersion") or ""
    return GroupKind(api_version.rpartition("/")[0], entry.get("kind") or "")


def _name(index: int, entry: object) -> str:
    if not isinstance(entry, dict):
        return f"wait_rules.health_check_exprs[{index}]"
    if not entry.get("kind"):  # Flux's group-wide entry
        return f"wait_rules.health_check_exprs[{index}] ({entry.get('apiVersion')}, every kind of its group)"
    return f"wait_rules.health_check_exprs[{index}] ({entry.get('apiVersion')}/{entry.get('kind')})"


def problems_in_exprs(exprs: object) -> list[str]:
    """What is wrong with ``exprs`` (``health_check_exprs``, or None): each problem names the entry
    (index, apiVersion/kind), the expression and where it fails to compile."""
    if exprs is None:
        return []
    if not isinstance(exprs, list):
        return ["wait_rules.health_check_exprs must be a list of {apiVersion, kind, current, inProgress, failed}"]
    found = []
    for index, entry in enumerate(exprs):
        name = _name(index, entry)
        if not isinstance(entry, dict):
            found.append(f"{name} must be a mapping with apiVersion, kind and current")
            continue
        unknown = sorted(set(entry) - _KNOWN_FIELDS)
        if unknown:
            found.append(f"{name} has unknown fields {', '.join(map(str, unknown))} "
                         "(expected apiVersion, kind, current, inProgress, failed)")
        for field in ("apiVersion", "current"):
            if not isinstance(entry.get(field), str) or not entry[field].strip():
                found.append(f"{name} needs {field}")
        if "kind" in entry and (not isinstance(entry["kind"], str) or not entry["kind"].strip()):
            found.append(f"{name} kind must be a kind's name, or left out for every kind of the group")
        for field, _state in _ORDER:
            text = entry.get(field)
            if text is None or (field == "current" and not isinstance(text, str)):
                continue
            why = cel.check(text)
            if why:
                found.append(f"{name} {field} {why}")
    return found


def entry_for(group_kind: GroupKind, exprs: HealthCheckExprs | None) -> tuple[int, HealthCheckEntry] | None:
    """The ``health_check_exprs`` entry for ``group_kind``, with its index, or None: the first naming
    its kind, else the first for its whole API group (no ``kind``), as Flux matches them
    (kustomize-controller docs/spec/v1/kustomizations.md, "Health check expressions")."""
    group_wide = None
    for index, entry in enumerate(exprs or ()):
        if not isinstance(entry, dict):
            continue
        entry_kind = _group_kind(entry)
        if entry_kind == group_kind:
            return index, entry
        if not entry_kind.kind and entry_kind.group == group_kind.group and group_wide is None:
            group_wide = index, entry
    return group_wide


# Verdicts by (uid, resourceVersion, rule): a cel-python evaluation costs about a millisecond, and
# a wait judges an object every round although most rounds find it unchanged.
_SEEN: dict[tuple[object, ...], Any] = {}  # each a Readiness, or None (judge_annotations')
_SEEN_MAX = 20000


def _remembered(obj: KubeObject, rule: tuple[object, ...], judge: Callable[[], _T]) -> _T:
    meta = metadata_of(obj)
    key = (meta.get("uid"), meta.get("resourceVersion"), rule)
    if not key[0] or not key[1]:
        return judge()
    if key not in _SEEN:
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        _SEEN[key] = judge()
    return _SEEN[key]


def judge_entry(obj: KubeObject, index: int, entry: HealthCheckEntry) -> Readiness:
    """How ``obj`` stands by the ``health_check_exprs`` entry at ``index``; the same
    object version (uid and resourceVersion) is judged once."""
    rule = (index,) + tuple(entry.get(field) for field, _outcome in _ORDER)
    return _remembered(obj, rule, lambda: _judge_entry(obj, index, entry))


def _judge_entry(obj: KubeObject, index: int, entry: HealthCheckEntry) -> Readiness:
    stale = generation_behind(obj)
    if stale:
        return Readiness(IN_PROGRESS, stale)
    found = _first_holding(obj, [(field, entry.get(field), outcome) for field, outcome in _ORDER])
    if isinstance(found, tuple):
        outcome, name = found
        return Readiness(outcome, _said(f"health_check_exprs[{index}] {name} holds", obj, outcome))
    return Readiness(IN_PROGRESS, f"health_check_exprs[{index}]: {found or 'current does not hold yet'}")


def _first_holding(obj: KubeObject,
                   expressions: list[tuple[str, str | None, Status]]) -> tuple[Status, str] | str:
    """The ``(outcome, name)`` of the first of ``expressions`` (``(name, text or None, outcome)``, in
    order) that holds on ``obj``; else why those that could not tell could not (``""`` if none)."""
    activation = cel.Activation(obj)
    waiting = []
    for name, text, outcome in expressions:
        if not text:
            continue
        holds, why = cel.evaluate(text, activation)
        if holds and outcome is FAILED:
            empty = cel.empty_all(text, activation)
            if empty:
                waiting.append(f"{name} holds only because {empty} is empty (all() of nothing is true): "
                               "waiting for the controller to report")
                continue
        if holds:
            return outcome, name
        if holds is None:
            waiting.append(f"{name} {why}")
    return "; ".join(waiting)


def _said(head: str, obj: KubeObject, outcome: Status) -> str:
    if outcome is not FAILED:
        return head
    said = controller_reason(obj)
    return f"{head}: {said}" if said else head


# ----- per-object annotations ---------------------------------------------------------------------


def annotation_rule(obj: KubeObject) -> AnnotationRule:
    """The ready-when / failed-when annotations of ``obj`` (``{}`` when it has none)."""
    annotations: object = annotations_of(obj)  # as written: a manifest may hold anything there
    if not isinstance(annotations, dict):
        return {}
    return {key: annotations[key] for key in (FAILED_WHEN, READY_WHEN) if key in annotations}


def problems_in_annotations(obj: KubeObject) -> list[str]:
    """What is wrong with the readiness annotations of ``obj`` (a manifest), each naming the annotation."""
    found = []
    # An annotation judges the object it sits on: only that object's top-level fields exist.
    fields = frozenset(key for key in obj if isinstance(key, str)) | cel_check.STANDARD_FIELDS
    for key, text in annotation_rule(obj).items():
        why = cel.check(text, fields)
        if why:
            found.append(f"annotation {key} {why}")
    return found


def check_annotations(objs: Iterable[tuple[str, KubeObject]]) -> None:
    """Check the ready-when / failed-when annotations of the manifests ``objs`` (``(source, obj)``
    pairs) before any request.

    Raises:
        InputError: naming the object, the annotation and where its expression fails.
    """
    problems = [(_object_name(source, obj), why) for source, obj in objs for why in problems_in_annotations(obj)]
    if problems:
        first = problems[0][0]
        # The error names the first object; others' problems name theirs (once each, never the first's again).
        raise InputError("; ".join(why if name == first else f"{name}: {why}" for name, why in problems),
                         obj=first,
                         fix="correct the CEL expression of the annotation (evaluated with the object's fields "
                             "as variables, e.g. status.phase == 'Ready'); nothing was changed")


def _object_name(source: str, obj: KubeObject) -> str:
    return f"{source} ({obj.get('kind')} {metadata_of(obj).get('name')})"


def judge_annotations(obj: KubeObject, rule: AnnotationRule) -> Readiness | None:
    """How ``obj`` stands by its annotations ``rule`` (``annotation_rule``), or None when
    only failed-when is given and does not hold: the object's other rule then decides."""
    key = ("annotations", rule.get(FAILED_WHEN), rule.get(READY_WHEN))
    return _remembered(obj, key, lambda: _judge_annotations(obj, rule))


def _judge_annotations(obj: KubeObject, rule: AnnotationRule) -> Readiness | None:
    # As for health_check_exprs (and kstatus): a status behind the spec says nothing of it.
    stale = generation_behind(obj)
    if stale:
        return Readiness(IN_PROGRESS, stale) if READY_WHEN in rule else None
    found = _first_holding(obj, [("failed-when", rule.get(FAILED_WHEN), FAILED),
                                 ("ready-when", rule.get(READY_WHEN), READY)])
    if isinstance(found, tuple):
        outcome, name = found
        return Readiness(outcome, _said(f"{name} holds", obj, outcome))
    if READY_WHEN not in rule:
        return None  # failed-when alone adds a failure to whatever rule judges the object
    return Readiness(IN_PROGRESS, found or "ready-when does not hold yet")
