"""The set's record of its members, on the parent: which objects it holds, so that a member
deleted out of band is told apart from a new one (drift ``missing``, drift.py).

The parent carries ``applyset.kubernetes.ansible/members``: a short digest of each member's
identity (group, kind, namespace, name), sorted and comma-separated: 11 characters a member,
names not shown. The claim writes the union of the old record and this run's members; the
release of a run that went through writes exactly this run's members (pruned ones leave it),
that of a failed run keeps the union. Routes that do not write the parent (check mode, the
update-only route) leave the record as it is, so a set first gets it from a run that writes its
parent. A digest of 40 bits per member makes a false "was a member" about one in 10^12 per
pair. Pure: no requests, no Ansible.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..object_meta import KubeObject, annotations_of
from .. import spec

if TYPE_CHECKING:  # names for annotations only: the plan and the report are layers above
    from ..rules.plan import Plan
    from ..run.report import ObjectResult
    from .model import Parent

ANNOTATION_MEMBERS = spec.OWN_PREFIX + "members"


def digest(key: spec.ObjectId) -> str:
    """The short digest of one member's identity (10 hex characters)."""
    text = f"{key.group}/{key.kind}/{key.namespace or ''}/{key.name}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def parse(obj: KubeObject | None) -> frozenset[str] | None:
    """The digests a parent object records, or None when it records none (an older run's parent)."""
    value = annotations_of(obj).get(ANNOTATION_MEMBERS)
    if value is None:
        return None
    return frozenset(part for part in value.split(",") if part)


def format_record(digests: Iterable[str]) -> str:
    """The annotation's value for ``digests``: sorted, comma-separated."""
    return ",".join(sorted(digests))


def of_plan(plan: Plan) -> frozenset[str]:
    """The digests of the members of ``plan`` (``plan.Plan``)."""
    return frozenset(digest(m.key) for m in plan.members)


def recorded(record: frozenset[str] | None, key: spec.ObjectId) -> bool:
    """Whether a parent's member ``record`` (``parent_model.Parent.member_record``; None when it
    keeps none) holds ``key``."""
    return bool(record and digest(key) in record)


# Kubernetes bounds all annotations of one object together at 256 KiB. A record of 11 characters
# a member stays under 100 KiB up to this many members; a larger set keeps no record (its deleted
# members then show as changed rather than missing), so that the parent write never fails.
MAX_RECORDED = 9000


def _bounded(digests: frozenset[str]) -> frozenset[str] | None:
    return digests if len(digests) <= MAX_RECORDED else None


def while_writing(parent: Parent, plan: Plan) -> None:
    """Decide step: what the parent records while the run writes (the old record and this run's)."""
    parent.record_members = _bounded((parent.member_record or frozenset()) | of_plan(plan))


_WRITTEN = ("created", "configured", "replaced", "unchanged")


def at_release(record: frozenset[str] | None, plan: Plan, results: Iterable[ObjectResult],
               done: bool) -> frozenset[str] | None:
    """What the release records, given the parent's ``record`` as read, the run's ``plan`` and its
    ``results`` (``report.ObjectResult``): for a run that went through (``done``) exactly its
    members; for a failed one the old record and the members it applied (one it never created,
    refused by the server for example, is not recorded: it would show as missing, not new, on
    the next run)."""
    if done:
        return _bounded(of_plan(plan))
    applied = {o.id for o in results if o.action in _WRITTEN}
    kept = frozenset(digest(m.key) for m in plan.members if m.key in applied)
    return _bounded((record or frozenset()) | kept)
