"""Which listed objects a prune deletes: named rules, each a pure function of one candidate.

A candidate is an object found by the run's LISTs that is not in the desired set. The rules
run in order; the first that returns a decision settles the candidate, and a candidate no
rule settles is pruned. The order matters: an object this run applied must never reach the
keep rule, which would take it out of the set.

1. ``not_in_set``: it does not carry this set's part-of label (defensive: the LIST selects it).
2. ``outside_recorded_scope``: its kind or namespace is not in the hint recorded before this
   run (kubectl prunes within the parent's hint as read at the start; a hand-labelled object
   of a kind this run adds for the first time is not pruned).
3. ``applied_in_this_run``: its UID is one this run applied or found unchanged, whatever group
   or version it was listed under (kubectl's visitedUids). An Event is served as ``v1`` and as
   ``events.k8s.io/v1``; listed under the other group it is the same object, not a leftover.
4. ``released_chart_crd``: a CRD of a chart's ``crds/`` that was a member (rules.chart_crds).
5. ``kept_by_annotation``: a prune-protection annotation of any ecosystem (spec.keep_reason).
6. ``controlled_by_other``: a controller owner reference to something other than the parent.

The DELETE itself carries a UID precondition, so an object replaced between LIST and DELETE is
never deleted either (pruning.carry_out).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .. import spec
from ..object_meta import KubeObject, ObjectMeta, labels_of
from ..kube.discovery import Resource
from .plan import PROTECTED_KINDS, DesiredObject, kind_matches
from ..spec import GroupKind

# A candidate's metadata as listed.
ListedMeta = ObjectMeta

PRUNE = "prune"  # delete it
KEEP = "keep"  # protected by an annotation: leaves the set, stays on the cluster
SKIP = "skip"  # controlled by something else: reported, left alone
IGNORE = "ignore"  # not a prune candidate at all: not reported


@dataclass(frozen=True)
class PruneScope:
    """Where this set may prune: the parent's hint as recorded before the run."""

    group_kinds: frozenset
    namespaces: frozenset

    def covers(self, res: Resource, namespace: str | None) -> bool:
        """Whether an object of ``res`` in ``namespace`` (None: cluster-scoped) is within the scope.

        By group-kind, whatever the version; a namespaced one also by namespace.
        """
        if res.group_kind not in self.group_kinds:
            return False
        return not res.namespaced or (namespace or "") in self.namespaces


@dataclass(frozen=True)
class Context:
    """What the rules know about the run: this set's id, the parent's UID (an owner that is the
    parent is no foreign controller), the recorded ``PruneScope`` and the UIDs this run applied."""

    applyset_id: str
    parent_uid: str | None
    scope: PruneScope
    applied_uids: frozenset = field(default_factory=frozenset)
    released_uids: frozenset = field(default_factory=frozenset)  # a chart's crds/ CRDs: out of the set, kept


@dataclass(frozen=True)
class Decision:
    """The fate of one candidate: its ``verdict`` (PRUNE, KEEP, SKIP or IGNORE), the ``rule``
    that settled it (a rule's name, or "prune" when none did) and the ``reason`` shown."""

    resource: Resource
    meta: ListedMeta = field(hash=False, compare=False)
    verdict: str
    rule: str
    reason: str | None = None


def not_in_set(res: Resource, meta: ListedMeta, context: Context) -> Decision | None:
    """Ignore a candidate without this set's part-of label (the LIST selects none: a guard)."""
    if (meta.get("labels") or {}).get(spec.LABEL_PART_OF) != context.applyset_id:
        return Decision(res, meta, IGNORE, "not_in_set", "it does not carry this set's part-of label")
    return None


def outside_recorded_scope(res: Resource, meta: ListedMeta, context: Context) -> Decision | None:
    """Ignore a candidate whose kind or namespace the parent did not record before the run."""
    if not context.scope.covers(res, meta.get("namespace")):
        return Decision(res, meta, IGNORE, "outside_recorded_scope",
                        "its kind or namespace was not in the parent's hint before this run")
    return None


def applied_in_this_run(res: Resource, meta: ListedMeta, context: Context) -> Decision | None:
    """Ignore a candidate with a UID this run applied, whatever group or version listed it."""
    if meta.get("uid") and meta["uid"] in context.applied_uids:
        return Decision(res, meta, IGNORE, "applied_in_this_run",
                        "this run applied the same object (same UID), possibly under another group or version")
    return None


def released_chart_crd(res: Resource, meta: ListedMeta, context: Context) -> Decision | None:
    """Keep (take out of the set, leave on the cluster) a CRD of the chart's ``crds/`` that an earlier
    run made a member: every release of the chart shares it (rules.chart_crds)."""
    if meta.get("uid") and meta["uid"] in context.released_uids:
        return Decision(res, meta, KEEP, "released_chart_crd",
                        "a CRD of the chart's crds/ directory, which every release of the chart shares (helm.crds)")
    return None


def kept_by_annotation(res: Resource, meta: ListedMeta, context: Context) -> Decision | None:
    """Keep (take out of the set, leave on the cluster) a candidate with a keep annotation."""
    reason = spec.keep_reason(meta.get("annotations") or {})
    return Decision(res, meta, KEEP, "kept_by_annotation", reason) if reason else None


def controlled_by_other(res: Resource, meta: ListedMeta, context: Context) -> Decision | None:
    """Skip a candidate whose controller owner is something other than the parent."""
    owner = next((o for o in meta.get("ownerReferences") or []
                  if o.get("controller") and o.get("uid") != context.parent_uid), None)
    if owner:
        return Decision(res, meta, SKIP, "controlled_by_other",
                        f"controlled by {owner.get('kind')} {owner.get('name')}; its controller manages it, "
                        "so it is never pruned")
    return None


RULES = (not_in_set, outside_recorded_scope, applied_in_this_run, released_chart_crd, kept_by_annotation,
         controlled_by_other)


def decide(res: Resource, meta: ListedMeta, context: Context) -> Decision:
    """The decision on one candidate: the first of ``RULES`` that settles it, else PRUNE.

    Args:
        res: the resource the candidate was listed under.
        meta: its metadata as listed.
        context: what the rules know about the run.
    """
    for rule in RULES:
        decision = rule(res, meta, context)
        if decision is not None:
            return decision
    return Decision(res, meta, PRUNE, "prune")


@dataclass
class PruneDecisions:
    """Every candidate's decision (``all``, in candidate order), grouped the way the engine acts on them."""

    all: list[Decision]

    def with_verdict(self, verdict: str) -> list[Decision]:
        """The decisions with ``verdict``, in candidate order."""
        return [d for d in self.all if d.verdict == verdict]

    @property
    def delete(self) -> list[tuple[Resource, ListedMeta]]:
        """``(resource, metadata)`` of the candidates to delete."""
        return [(d.resource, d.meta) for d in self.with_verdict(PRUNE)]

    @property
    def keep(self) -> list[tuple[Resource, ListedMeta, str | None]]:
        """``(resource, metadata, reason)`` of the candidates kept by an annotation."""
        return [(d.resource, d.meta, d.reason) for d in self.with_verdict(KEEP)]

    @property
    def skip(self) -> list[tuple[Resource, ListedMeta, str | None]]:
        """``(resource, metadata, reason)`` of the candidates another controller manages."""
        return [(d.resource, d.meta, d.reason) for d in self.with_verdict(SKIP)]


def decide_all(candidates: Iterable[tuple[Resource, ListedMeta]], context: Context) -> PruneDecisions:
    """Decide every candidate (``decide``).

    Args:
        candidates: ``(resource, metadata)`` pairs of listed set members that are not desired.
        context: what the rules know about the run.
    """
    return PruneDecisions([decide(res, meta, context) for res, meta in candidates])


def scope_of(group_kinds: Iterable[tuple[str, str]], namespaces: Iterable[str]) -> PruneScope:
    """A ``PruneScope`` from a hint's group-kinds (``GroupKind`` or ``(group, kind)`` pairs) and namespaces."""
    return PruneScope(frozenset(GroupKind(*gk) for gk in group_kinds), frozenset(namespaces))


# ----- refusals: the whole run stops before its first write ------------------------------------


@dataclass(frozen=True)
class PruneRefusal:
    """Why a run must stop before it writes anything: a guard rule or the overlap rule said no."""

    rule: str
    message: str
    fix: str
    details: dict[str, list[str]] = field(default_factory=dict, hash=False, compare=False)


class GuardSettings(Protocol):
    """The blast-radius guard's settings, the module's ``guard`` option (``run.options.GuardLimits``,
    which is built above the rules): read only."""

    @property
    def allow_empty(self) -> bool:
        ...

    @property
    def max_prune_percent(self) -> int:
        ...

    @property
    def allow_prune_kinds(self) -> frozenset:  # protected kinds allowed to prune, by Kind or Kind.group
        ...


def _ref(res: Resource, meta: ListedMeta) -> str:
    namespace = meta.get("namespace")
    return f"{res.kind} {namespace + '/' if namespace else ''}{meta['name']}"


def _would_prune(delete: Iterable[tuple[Resource, ListedMeta]]) -> dict[str, list[str]]:
    return {"would_prune": [_ref(res, meta) for res, meta in delete]}


def refuse_emptying(delete: Sequence[tuple[Resource, ListedMeta]], set_size: int, emptying: bool,
                    limits: GuardSettings) -> PruneRefusal | None:
    """Refuse to empty the set (no desired object) unless ``allow_empty``; parameters as ``guard``."""
    if not emptying or limits.allow_empty:
        return None
    return PruneRefusal(
        "refuse_emptying",
        "the desired set is empty, so every member would be pruned" + (f" ({len(delete)} objects)" if delete else ""),
        "check src/definition; to really empty the set set guard.allow_empty: true "
        "(or use state: absent to remove it)",
        _would_prune(delete))


def refuse_protected_kinds(delete: Sequence[tuple[Resource, ListedMeta]], set_size: int, emptying: bool, limits: GuardSettings,
                           removing: bool = False) -> PruneRefusal | None:
    """Refuse to delete protected kinds (plan.PROTECTED_KINDS) unless ``allow_prune_kinds`` names
    them; parameters as ``guard``, and ``removing`` for ``state: absent`` (which deletes every
    member, so its way out is not "keep them in the set")."""
    protected = sorted({_ref(res, meta) for res, meta in delete
                        if res.group_kind in PROTECTED_KINDS
                        and not kind_matches(res.group_kind, limits.allow_prune_kinds)})
    if not protected:
        return None
    allow = "guard.allow_prune_kinds (e.g. [Namespace, CustomResourceDefinition])"
    if removing:
        what = "state: absent"
        fix = (f"to delete them too, allow their kinds with {allow}; to drop the set and leave every "
               "member in place, use state: disbanded")
    else:
        what, fix = "pruning", f"keep them in the set, or allow their kinds with {allow}"
    return PruneRefusal("refuse_protected_kinds", f"{what} would delete protected objects: {', '.join(protected)}",
                        fix, _would_prune(delete))


def refuse_too_many(delete: Sequence[tuple[Resource, ListedMeta]], set_size: int, emptying: bool,
                    limits: GuardSettings) -> PruneRefusal | None:
    """Refuse to delete more than ``max_prune_percent`` of the set (not when emptying it, which
    ``refuse_emptying`` judges); parameters as ``guard``."""
    if not set_size or emptying or len(delete) * 100 <= limits.max_prune_percent * set_size:
        return None
    return PruneRefusal(
        "refuse_too_many",
        f"pruning would delete {len(delete)} of the set's {set_size} objects, more than "
        f"guard.max_prune_percent ({limits.max_prune_percent}%)",
        "check src/definition; if this is intended raise guard.max_prune_percent (100 allows all)",
        _would_prune(delete))


GUARD_RULES = (refuse_emptying, refuse_protected_kinds, refuse_too_many)


def guard(delete: Sequence[tuple[Resource, ListedMeta]], set_size: int, emptying: bool,
          limits: GuardSettings) -> PruneRefusal | None:
    """The blast-radius guard: whether a prune of ``delete`` may go ahead.

    Args:
        delete: the ``(resource, metadata)`` pairs the prune rules would delete.
        set_size: how many objects the set holds before the run; 0 turns the percentage rule off.
        emptying: whether the desired set is empty (every member would be pruned).
        limits: the guard's settings.

    Returns:
        The first refusal of ``GUARD_RULES`` (emptying, protected kinds, too many), or None
        when the prune may go ahead. Its ``details`` list the objects as ``would_prune``.
    """
    for rule in GUARD_RULES:
        refusal = rule(delete, set_size, emptying, limits)
        if refusal is not None:
            return refusal
    return None


def overlap(desired: Iterable[DesiredObject], live: dict[spec.ObjectId, tuple[Resource, KubeObject]],
            applyset_id: str, adopt: bool) -> PruneRefusal | None:
    """Whether desired objects already belong to another set, which this run must not take silently.

    Args:
        desired: the desired objects (``plan.DesiredObject``: ``key`` and ``ref``).
        live: what the LISTs found, ``{ObjectId: (resource, object)}``.
        applyset_id: this set's id.
        adopt: the ``adopt`` option: taking them over was asked for, so there is no refusal.

    Returns:
        A refusal naming each such object and its set (``details["overlapping"]``), or None.
    """
    if adopt:
        return None
    problems = []
    for member in desired:
        entry = live.get(member.key)
        if entry is None:
            continue
        other = labels_of(entry[1]).get(spec.LABEL_PART_OF)
        if other and other != applyset_id:
            problems.append(f"{member.ref} (part of {other})")
    if not problems:
        return None
    return PruneRefusal(
        "overlap",
        "objects already belong to another ApplySet: " + ", ".join(problems),
        "remove them from this set, or set adopt: true to move them into this set "
        "(the other set will no longer manage or prune them)",
        {"overlapping": problems})
