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
4. ``kept_by_annotation``: a prune-protection annotation of any ecosystem (spec.keep_reason).
5. ``controlled_by_other``: a controller owner reference to something other than the parent.

The DELETE itself carries a UID precondition, so an object replaced between LIST and DELETE is
never deleted either (engine._delete_one).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import spec
from .kube import Resource
from .spec import GroupKind

PRUNE = "prune"  # delete it
KEEP = "keep"  # protected by an annotation: leaves the set, stays on the cluster
SKIP = "skip"  # controlled by something else: reported, left alone
IGNORE = "ignore"  # not a prune candidate at all: not reported


@dataclass(frozen=True)
class Scope:
    """Where this set may prune: the parent's hint as recorded before the run."""

    group_kinds: frozenset
    namespaces: frozenset

    def covers(self, res: Resource, namespace: str | None) -> bool:
        if res.group_kind not in self.group_kinds:
            return False
        return not res.namespaced or (namespace or "") in self.namespaces


@dataclass(frozen=True)
class Context:
    applyset_id: str
    parent_uid: str | None
    scope: Scope
    applied_uids: frozenset = field(default_factory=frozenset)


@dataclass(frozen=True)
class Decision:
    resource: Resource
    meta: dict = field(hash=False, compare=False)
    verdict: str
    rule: str
    reason: str | None = None


def not_in_set(res: Resource, meta: dict, ctx: Context) -> Decision | None:
    if (meta.get("labels") or {}).get(spec.LABEL_PART_OF) != ctx.applyset_id:
        return Decision(res, meta, IGNORE, "not_in_set", "it does not carry this set's part-of label")
    return None


def outside_recorded_scope(res: Resource, meta: dict, ctx: Context) -> Decision | None:
    if not ctx.scope.covers(res, meta.get("namespace")):
        return Decision(res, meta, IGNORE, "outside_recorded_scope",
                        "its kind or namespace was not in the parent's hint before this run")
    return None


def applied_in_this_run(res: Resource, meta: dict, ctx: Context) -> Decision | None:
    if meta.get("uid") and meta["uid"] in ctx.applied_uids:
        return Decision(res, meta, IGNORE, "applied_in_this_run",
                        "this run applied the same object (same UID), possibly under another group or version")
    return None


def kept_by_annotation(res: Resource, meta: dict, ctx: Context) -> Decision | None:
    reason = spec.keep_reason(meta.get("annotations") or {})
    return Decision(res, meta, KEEP, "kept_by_annotation", reason) if reason else None


def controlled_by_other(res: Resource, meta: dict, ctx: Context) -> Decision | None:
    owner = next((o for o in meta.get("ownerReferences") or []
                  if o.get("controller") and o.get("uid") != ctx.parent_uid), None)
    if owner:
        return Decision(res, meta, SKIP, "controlled_by_other",
                        f"controlled by {owner.get('kind')} {owner.get('name')}; its controller manages it, "
                        "so it is never pruned")
    return None


RULES = (not_in_set, outside_recorded_scope, applied_in_this_run, kept_by_annotation, controlled_by_other)


def decide(res: Resource, meta: dict, ctx: Context) -> Decision:
    for rule in RULES:
        decision = rule(res, meta, ctx)
        if decision is not None:
            return decision
    return Decision(res, meta, PRUNE, "prune")


@dataclass
class Decisions:
    """Every candidate's decision, grouped the way the engine acts on them."""

    all: list

    def with_verdict(self, verdict: str) -> list:
        return [d for d in self.all if d.verdict == verdict]

    @property
    def delete(self) -> list:
        return [(d.resource, d.meta) for d in self.with_verdict(PRUNE)]

    @property
    def keep(self) -> list:
        return [(d.resource, d.meta, d.reason) for d in self.with_verdict(KEEP)]

    @property
    def skip(self) -> list:
        return [(d.resource, d.meta, d.reason) for d in self.with_verdict(SKIP)]


def decide_all(candidates, ctx: Context) -> Decisions:
    """``candidates``: (resource, metadata) pairs."""
    return Decisions([decide(res, meta, ctx) for res, meta in candidates])


def scope_of(group_kinds, namespaces) -> Scope:
    return Scope(frozenset(GroupKind(*gk) for gk in group_kinds), frozenset(namespaces))
