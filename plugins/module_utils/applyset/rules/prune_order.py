"""When and in which order a run prunes: after the wait, and dependents before their dependencies.

With ``wait: true`` and prune on, the apply route is apply, prune-early, wait-ready, prune,
release, wait-gone (steps.py): what left the set is deleted only once every applied object is
ready, so a release that never becomes ready keeps the old objects it may still need (a renamed
ConfigMap under running Pods), and the parent keeps covering them. A live member annotated
``applyset.kubernetes.ansible/prune-timing: early`` is pruned before the wait instead (a
Deployment replaced by another kind that takes over its selector).

The deletes follow the LIVE objects' own annotations (the metadata LIST returns them; pruned
objects are no longer in the manifests): higher sync waves first, and an object that another
pruned object depends on (``config.kubernetes.io/depends-on``) only once that dependent is gone,
finalizers included, within ``wait_timeout``. Without those annotations there is one stage,
deleted in reverse rank order as before.
"""

from __future__ import annotations

from . import ordering
from .. import spec
from .prune import Decision, ListedMeta


def is_early(meta: ListedMeta) -> bool:
    """Whether a live object asks to be pruned before the wait (``prune-timing: early``)."""
    return (meta.get("annotations") or {}).get(ordering.PRUNE_TIMING) == ordering.PRUNE_EARLY


def _wave(meta: ListedMeta) -> int:
    try:
        return ordering.wave_of(meta.get("annotations"))
    except ValueError:
        return 0  # a live object's bad value does not stop its prune


def _depends_on(meta: ListedMeta) -> list[spec.ObjectId]:
    try:
        return ordering.parse_depends_on((meta.get("annotations") or {}).get(ordering.DEPENDS_ON, ""))
    except ValueError:
        return []


def stages(decisions: list[Decision]) -> list[list[Decision]]:
    """The decisions to delete, in stages: each stage is deleted and gone before the next starts.

    Higher waves first; inside a wave, an object goes in a stage after every object of the wave
    that depends on it. A cycle among live annotations puts its objects in one stage.
    """
    if not any(ordering.is_ordered(d.meta.get("annotations")) for d in decisions):
        return [list(decisions)] if decisions else []
    key_of = {id(d): spec.ObjectId.from_metadata(d.resource, d.meta) for d in decisions}
    by_key = {key_of[id(d)]: d for d in decisions}
    dependents: dict[spec.ObjectId, list[spec.ObjectId]] = {}
    for d in decisions:
        for ref in _depends_on(d.meta):
            if ref in by_key and _wave(by_key[ref].meta) == _wave(d.meta):
                dependents.setdefault(ref, []).append(key_of[id(d)])
    depth: dict[spec.ObjectId, int] = {}

    def level(key: spec.ObjectId, visiting: frozenset[spec.ObjectId] = frozenset()) -> int:
        if key not in depth:
            above = [level(k, visiting | {key}) + 1 for k in dependents.get(key, ()) if k not in visiting]
            depth[key] = max(above, default=0)
        return depth[key]

    grouped: dict[tuple[int, int], list[Decision]] = {}
    for d in decisions:
        grouped.setdefault((-_wave(d.meta), level(key_of[id(d)])), []).append(d)
    return [grouped[k] for k in sorted(grouped)]
