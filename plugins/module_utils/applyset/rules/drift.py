"""Why a member differs from what this collection last applied: its ``drift``.

Every member's result names one of:

- ``none``: the manifest is what was last applied, and nobody took a field of it since;
- ``manifest_changed``: the body this run sends differs from the one last applied (the digest
  annotation the last apply wrote, ``nochange.py``, is another), or nothing was applied yet
  (a new member, or an object this collection never applied);
- ``cluster_changed``: the live object differs from what was last applied: a field this
  collection sets is now owned by another field manager (an update by ``kubectl edit`` or
  ``kubectl patch`` takes the fields it changes over; a forced apply too), or, with the same
  digest, a value differs. ``changed_by`` names each such manager, its operation, the time of
  its last write (managedFields) and the fields it holds;
- ``both``: the two at once;
- ``missing``: the object is not there although the set recorded it as a member (deleted out
  of band, ``members.py``): not the same as a new object.

Reads only what the LIST of the run already returned (the digest annotation and managedFields
are in metadata-only lists too; the value comparison needs the whole object, which check mode
and ``reapply: changed`` list): no request of its own. Pure, no Ansible.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from ..object_meta import KubeObject, annotations_of
from ..parent import members
from . import field_policy, nochange, server_form
from ..object_meta import FieldsV1, ManagedFieldsEntry, managed_fields_of
from .csa import FieldPath
from .. import spec
from ..kube.listing import LiveObject
from ..spec import ObjectId
from .plan import DesiredObject

if TYPE_CHECKING:  # the report of a run, named for the annotations only: the run is above the rules
    from ..run.report import MemberOutcome, ObjectResult

NONE, MANIFEST, CLUSTER, BOTH, MISSING = "none", "manifest_changed", "cluster_changed", "both", "missing"
KINDS = (NONE, MANIFEST, CLUSTER, BOTH, MISSING)


class ChangedBy(TypedDict, total=False):
    """One field manager that holds fields of a member's body (``taken_fields``), as the result's
    ``changed_by`` shows it: a ``time`` and ``subresource`` only when its entry has them."""

    manager: str | None
    operation: str | None
    time: str
    fields: list[str]  # dotted paths (``render``)
    subresource: str


@dataclass(frozen=True)
class Drift:
    """One member's drift: its ``kind`` (one of ``KINDS``), the field managers that changed it
    (``changed_by``: dicts with manager, operation, time and fields), and whether every change
    is in fields ``ignore_fields`` leaves to those managers (``left_to_others``)."""

    kind: str
    changed_by: tuple[ChangedBy, ...] = field(default_factory=tuple)
    left_to_others: bool = False


def classify(body: KubeObject, live_obj: KubeObject | None, manager: str, *, was_member: bool = False,
             manifest_body: KubeObject | None = None) -> Drift:
    """The drift of a member whose apply body is ``body`` (with its digest annotation).

    Args:
        body: the body this run sends (``nochange.with_digest`` applied).
        live_obj: the object as listed (whole or metadata only); None when not found.
        manager: this run's field manager.
        was_member: the set recorded this object as a member (``members.py``); only asked when
            it is not found.
        manifest_body: the body before ``ignore_fields`` rules left fields out of it
            (``field_policy.py``); a field left to another manager is still theirs to report.
    """
    if live_obj is None:
        return Drift(MISSING if was_member else MANIFEST)
    entries = managed_fields_of(live_obj)
    want = annotations_of(body).get(spec.ANNOTATION_APPLIED_DIGEST)
    have = annotations_of(live_obj).get(spec.ANNOTATION_APPLIED_DIGEST)
    manifest = have is None or have != want
    sent_taken = tuple(taken_fields(body, entries, manager))
    changed_by = sent_taken if manifest_body is None else tuple(taken_fields(manifest_body, entries, manager))
    # the other managers hold only fields the rules leave to them: changed on the cluster, as asked
    left_to_others = bool(changed_by) and not sent_taken
    cluster = bool(changed_by)
    if have is not None and not sent_taken:
        owned = nochange.apply_fields(live_obj, manager)
        whole = live_obj.get("kind") != "PartialObjectMetadata"
        # the same body applied before, and a value of it is not there (in the form the server
        # stores it, server_form.py): changed on the cluster
        differs = owned is None or (not manifest and whole and not nochange.contains(
            server_form.as_stored(body), live_obj, owned))
        cluster, left_to_others = cluster or differs, left_to_others and not differs
    if manifest and cluster:
        return Drift(BOTH, changed_by, left_to_others)
    if cluster:
        return Drift(CLUSTER, changed_by, left_to_others)
    return Drift(MANIFEST if manifest else NONE)


def _apply_entry(entries: Sequence[ManagedFieldsEntry], manager: str) -> ManagedFieldsEntry | None:
    return next((e for e in entries if isinstance(e, dict) and e.get("manager") == manager
                 and e.get("operation") == "Apply" and not e.get("subresource")), None)


def taken_fields(body: KubeObject, entries: Sequence[ManagedFieldsEntry], manager: str) -> list[ChangedBy]:
    """Who holds fields of ``body`` that our Apply entry does not: one dict per field manager
    (``manager``, ``operation``, ``time``, ``fields`` as dotted paths), in managedFields order.

    An update takes over the fields it changes, a forced apply every field it sets; a field both
    we and another manager own (the same value applied by both) is not taken.
    """
    ours = _apply_entry(entries, manager)
    our_tree = (ours or {}).get("fieldsV1") or {}
    found: list[ChangedBy] = []
    for entry in entries:
        if not isinstance(entry, dict) or entry is ours or entry.get("subresource") == "status":
            continue
        paths = [p for p in overlap(body, entry.get("fieldsV1") or {}) if not _owns(our_tree, p)]
        if paths:
            who: ChangedBy = {"manager": entry.get("manager"), "operation": entry.get("operation")}
            if entry.get("time"):  # an entry without a time (a scale subresource's, say) shows none, not None
                who["time"] = entry["time"]
            who["fields"] = [render(p) for p in paths]
            if entry.get("subresource"):
                who["subresource"] = entry["subresource"]
            found.append(who)
    return found


def overlap(value: object, tree: FieldsV1, path: FieldPath = ()) -> list[FieldPath]:
    """The fieldsV1 paths of ``tree`` (one manager's fields) that ``value`` (a body) sets too."""
    if not isinstance(tree, dict) or not tree:
        return [path] if path else []
    found: list[FieldPath] = []
    for key, sub in tree.items():
        if key == ".":
            continue
        child = _child(value, key)
        if child is not _ABSENT:
            found += overlap(child, sub, path + (key,)) if isinstance(child, (dict, list)) else [path + (key,)]
    return found


_ABSENT = object()


def _child(value: object, key: str) -> object:
    """The part of ``value`` a fieldsV1 key names (``f:name``, ``k:{...}``, ``v:...``, ``i:N``)."""
    kind, rest = key.split(":", 1) if ":" in key else (key, "")
    if kind == "f" and isinstance(value, dict):
        return value.get(rest, _ABSENT)
    if not isinstance(value, list):
        return _ABSENT
    try:
        wanted = json.loads(rest) if kind in ("k", "v") else int(rest)
    except ValueError:
        return _ABSENT
    if kind == "i":
        return value[wanted] if 0 <= wanted < len(value) else _ABSENT
    if kind == "v":
        return next((item for item in value if item == wanted), _ABSENT)
    if kind == "k" and isinstance(wanted, dict):
        return next((item for item in value if isinstance(item, dict)
                     and all(_same(item.get(k), v) for k, v in wanted.items())), _ABSENT)
    return _ABSENT


def _same(a: object, b: object) -> bool:
    return a == b or (a is None and b is None) or str(a) == str(b)


def _owns(tree: FieldsV1, path: FieldPath) -> bool:
    """Whether a fieldsV1 ``tree`` holds ``path`` (or a field above it)."""
    node: object = tree
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def render(path: FieldPath) -> str:
    """A fieldsV1 path as a dotted one: ``.spec.containers[name=app].image``."""
    out = ""
    for key in path:
        kind, rest = key.split(":", 1) if ":" in key else (key, "")
        if kind == "f":
            out += "." + rest
        elif kind == "k":
            try:
                out += "[" + ",".join(f"{k}={v}" for k, v in json.loads(rest).items()) + "]"
            except (ValueError, AttributeError):
                out += f"[{rest}]"
        else:
            out += f"[{rest}]"
    return out


def describe(drift: Drift) -> str:
    """A short sentence for the drift, for the reason and logs."""
    who = ", ".join(f"{c['manager']} ({', '.join(filter(None, (c.get('operation'), c.get('time'))))}: "
                    f"{', '.join(c['fields'])})" for c in drift.changed_by)
    return f"{drift.kind}" + (f" by {who}" if who else "")


@dataclass(frozen=True)
class Basis:
    """What a member's drift is judged against, all as the run found it before its first write:
    the ``live`` objects it listed (by identity; None when it listed none), the parent's
    member ``record`` (``members.py``), the ``policies`` decided (``field_policy.Policies``; None
    before they are), this run's ``field_manager``, and whether it is a ``dry_run``."""

    live: dict[ObjectId, LiveObject] | None
    record: frozenset | None
    policies: field_policy.Policies | None
    field_manager: str
    dry_run: bool


def mark(member: DesiredObject, outcome: MemberOutcome, basis: Basis) -> MemberOutcome:
    """Set the drift of ``member``'s result in ``outcome`` (a ``report.MemberOutcome``), judged
    against ``basis``; a result that already says it (carried from an attempt before a start
    over) is left as it is. Returns ``outcome``."""
    result = outcome.result
    if result.drift is not None:
        return outcome
    found = basis.live.get(member.key) if basis.live is not None else None
    live_obj = found.obj if found is not None and found.resource.group_kind == member.resource.group_kind else None
    was_member = live_obj is None and members.recorded(basis.record, member.key)
    policies = basis.policies
    manifest_body = policies.manifests.get(member.key) if policies is not None else None
    found_drift = classify(member.body, live_obj, basis.field_manager, was_member=was_member,
                           manifest_body=manifest_body)
    result.drift = found_drift.kind
    result.changed_by = [dict(c) for c in found_drift.changed_by] or None
    result.drift_left_to_others = found_drift.left_to_others or None
    if found_drift.kind == MISSING and result.action == "created":
        again = "a real run creates it again" if basis.dry_run else "created again"
        result.reason = result.reason or f"a member of this set deleted out of band; {again}"
    if policies is not None:
        _mark_policies(policies, member.key, result)
    return outcome


def _mark_policies(policies: field_policy.Policies, key: ObjectId, result: ObjectResult) -> None:
    """What the apply policies and ignore_fields rules (field_policy.py) did to the member."""
    if key in policies.reasons:
        result.reason = policies.reasons[key]
        if result.action == "unchanged" and not result.uid:
            result.action = "skipped"  # an ignored member that is not there: as asked, so no drift
            result.drift, result.changed_by = NONE, None
    result.ignored_fields = policies.fields.get(key) or None
