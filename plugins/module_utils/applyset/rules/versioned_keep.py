"""Which older versions of a versioned ConfigMap or Secret (inputs.versioned) a run keeps.

An older version is a member of the set that this run no longer applies: a prune candidate. For
each versioned ConfigMap or Secret the run applies (kind, namespace and the name it was given), the
``keep`` newest older versions (by creation time, ties by resourceVersion: ``_age``) are taken out of the
candidates: they stay members, labelled, neither pruned nor reported, so the pods of the ReplicaSet
a rollout leaves (and a rollback) still find what they read. The others are candidates like any
member: the prune rules, the guard and the UID preconditions apply to them, and with ``wait`` the
prune step runs only after the applied workloads are ready, so a version goes only once the
workloads that read it rolled onto the new one. Versions of a name the run no longer applies at all
are not kept: they go like any member that left the input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..inputs.versioned import BASE_NAME
from ..object_meta import KubeObject, ObjectMeta, metadata_of
from ..spec import GroupKind

Series = tuple[GroupKind, "str | None", str]
"""One versioned object's versions: their kind, namespace and the name they were given."""


def series_of(group_kind: GroupKind, meta: ObjectMeta) -> Series | None:
    """The series an object's metadata place it in, or None when it is no versioned object."""
    base = (meta.get("annotations") or {}).get(BASE_NAME)
    return (group_kind, meta.get("namespace") or None, base) if isinstance(base, str) and base else None


def applied_series(bodies: Iterable[tuple[GroupKind, KubeObject]]) -> set[Series]:
    """The series of the versioned objects among ``(group-kind, body)`` this run applies."""
    found = set()
    for group_kind, body in bodies:
        series = series_of(group_kind, metadata_of(body))
        if series is not None:
            found.add(series)
    return found


def kept_versions(candidates: Sequence[tuple[GroupKind, ObjectMeta]], applied: set[Series], keep: int) -> set[int]:
    """The indexes in ``candidates`` of the older versions kept: the ``keep`` newest of each applied series."""
    by_series: dict[Series, list[int]] = {}
    for index, (group_kind, meta) in enumerate(candidates):
        series = series_of(group_kind, meta)
        if series in applied and series is not None:
            by_series.setdefault(series, []).append(index)
    kept: set[int] = set()
    for indexes in by_series.values():
        kept.update(sorted(indexes, key=lambda index: _age(candidates[index][1]), reverse=True)[:keep])
    return kept


def _age(meta: ObjectMeta) -> tuple[str, int, str]:
    """What orders versions oldest first: the creation time, which has whole seconds only, then the
    resourceVersion, which etcd-backed servers give in write order (a version's content never
    changes, so its last write is its creation but for a label), then the name."""
    version = str(meta.get("resourceVersion") or "")
    return (str(meta.get("creationTimestamp") or ""), int(version) if version.isdigit() else 0, str(meta.get("name") or ""))
