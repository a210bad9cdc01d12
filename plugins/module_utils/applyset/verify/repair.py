"""The hint repair of applyset_verify: the hints a set's members call for, and the guarded write.

The repair only ever rewrites the parent's hint annotations, and only drops an entry that the
scan proved empty. It never deletes or relabels anything. It writes as the set's own tool
(``field_manager_for``), keeps the live tooling value, and is guarded by the resourceVersion
that was read; the body is ``parent.write.parent_body``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..object_meta import KubeObject, annotations_of
from .. import spec
from ..errors import ApiError, ApplySetError, ParentError
from .checks import MayHold, classify_members, identity_intact
from .inventory import LiveMember
from .scan import Scan
from ..kube.discovery import Discovery
from ..kube.api import KubeApi
from ..parent.model import LiveParent, Parent
from ..parent.write import drop_legacy_annotation, parent_body


@dataclass
class HintFix:
    """A rewrite of one parent's hints so that they match the members found."""

    set_info: LiveParent
    group_kinds: set[spec.GroupKind]
    namespaces: set[str]
    applied: bool = False
    refused: str | None = None  # why it was not applied (another tool's set, a deploy running)
    error: ApplySetError | None = None

    @property
    def before(self) -> dict[str, str]:
        """The hint annotations as they are (only those present)."""
        return {key: self.set_info.annotations[key] for key in
                (spec.ANNOTATION_GROUP_KINDS, spec.ANNOTATION_GROUP_RESOURCES, spec.ANNOTATION_ADDITIONAL_NAMESPACES)
                if self.set_info.annotations.get(key) is not None}

    @property
    def after(self) -> dict[str, str]:
        """The hint annotations as the repair writes them."""
        return {
            spec.ANNOTATION_GROUP_KINDS: spec.format_group_kinds(self.group_kinds),
            spec.ANNOTATION_ADDITIONAL_NAMESPACES: spec.format_namespaces(self.namespaces, self.set_info.namespace),
        }

    def to_dict(self) -> dict[str, Any]:
        """The fix as applyset_verify returns it."""
        data: dict[str, Any] = {"parent": self.set_info.parent_ref(), "id": self.set_info.expected_id,
                                "before": self.before, "after": self.after, "applied": self.applied}
        if self.refused:
            data["refused"] = self.refused
        if self.error is not None:
            data["error"] = self.error.to_dict()
        return data


def plan_fix(set_info: LiveParent, members: list[LiveMember], found: Scan, discovery: Discovery,
             may_hold: MayHold | None = None) -> HintFix | None:
    """The hints the members call for, or None when the recorded ones are already right.

    Only entries the scan proved empty are dropped: a recorded kind that could not be listed
    stays (it may hold members), and so do the recorded namespaces while any recorded
    namespaced kind could not be listed. Kinds the server does not serve are dropped only when
    no CRD or APIService defines them (``may_hold`` lists the others, which stay, with every
    recorded namespace). A legacy entry that may hold objects but cannot be mapped to a kind
    blocks the repair: rewriting the hint would lose it.

    :param set_info: the set's parent.
    :param members: the set's ``LiveMember``s.
    :param found: the scan.
    :param discovery: the server's discovery.
    :param may_hold: unserved recorded entries that may still hold objects (``kinds_that_may_hold``).
    :returns: the ``HintFix``, or None (also for a parent whose id or tooling is not intact).
    """
    may_hold = may_hold or {}
    if not identity_intact(set_info):
        return None
    if any(gr in may_hold for gr in set_info.unmapped_resources):
        return None
    served = {gk: discovery.for_group_kind(gk) for gk in set_info.group_kinds}
    unproven = {gk for gk, res in served.items()
                if res is not None and not found.covers(gk, set_info.namespaces if res.namespaced else ())}
    own = classify_members(set_info, members).own
    # Own members must be covered; a recorded entry stays while anything of the set is in it
    # (exactly the entries _stale_hints leaves alone).
    group_kinds = ({m.group_kind for m in own} | unproven
                   | {m.group_kind for m in members if m.group_kind in set_info.group_kinds})
    namespaces = ({m.namespace for m in own if m.namespace}
                  | {m.namespace for m in members if m.namespace in set_info.additional_namespaces})
    kept = {gk for gk in set_info.group_kinds if gk in may_hold}
    group_kinds |= kept
    if kept or any(res.namespaced for gk, res in served.items() if gk in unproven and res is not None):
        namespaces |= set(set_info.additional_namespaces)
    fix = HintFix(set_info, group_kinds, namespaces)
    live = set_info.annotations
    kinds_differ = live.get(spec.ANNOTATION_GROUP_KINDS) != fix.after[spec.ANNOTATION_GROUP_KINDS]
    # kubectl always writes additional-namespaces, but an absent one means the same as "".
    namespaces_differ = (live.get(spec.ANNOTATION_ADDITIONAL_NAMESPACES) or "") != \
        fix.after[spec.ANNOTATION_ADDITIONAL_NAMESPACES]
    legacy_left = set_info.hint_source == spec.ANNOTATION_GROUP_KINDS and spec.ANNOTATION_GROUP_RESOURCES in live
    return fix if kinds_differ or namespaces_differ or legacy_left else None


def fix_body(fix: HintFix) -> KubeObject:
    """The parent's id label and hints as the set's own tool would write them.

    ``parent_body`` writes our tooling value; a repair must not change which tool manages the
    set (kubectl refuses a set whose tooling names another tool), so the live value is kept.

    :param fix: the planned fix.
    :returns: the server-side apply body, guarded by the resourceVersion read.
    """
    set_info = fix.set_info
    body = parent_body(_parent_of(set_info, set_info.resource_version), fix.group_kinds, fix.namespaces)
    body["metadata"]["annotations"][spec.ANNOTATION_TOOLING] = set_info.tooling
    return body


def _parent_of(set_info: LiveParent, resource_version: str | None) -> Parent:
    """The engine's parent model for a set found by the scan, as of ``resource_version``."""
    parent = Parent.from_live(set_info)
    parent.resource_version = resource_version
    return parent


def field_manager_for(set_info: LiveParent) -> str:
    """``<tool>-applyset``: kubectl's naming, so ours is ``applyset.kubernetes-applyset``.

    Writing as the set's own parent manager keeps that tool the owner of its hints: its next
    server-side apply meets no conflict, and fields it alone owned and that the repair leaves
    out (the legacy contains-group-resources) are removed, as kubectl 1.29 itself does.

    :param set_info: the set's parent (its tool).
    """
    return f"{set_info.tool}-applyset"


def apply_fix(client: KubeApi, fix: HintFix, *, dry_run: bool) -> None:
    """Write the hints with server-side apply, guarded by the resourceVersion that was read.

    Never raises for the write: ``fix.applied`` is set on success, ``fix.error`` otherwise
    (a stale resourceVersion, RBAC, a failed removal of the legacy annotation).

    :param client: the API client.
    :param fix: the planned fix; updated in place.
    :param dry_run: send the writes as server-side dry runs.
    """
    set_info = fix.set_info
    try:
        written = client.apply(set_info.resource, fix_body(fix), field_manager=field_manager_for(set_info),
                               force=True, dry_run=dry_run).body
        annotations = annotations_of(written)
        if spec.ANNOTATION_GROUP_RESOURCES in annotations:
            # Owned by another manager (a kubectl set taken over): the apply cannot remove it.
            drop_legacy_annotation(
                client, _parent_of(set_info, written["metadata"].get("resourceVersion")), dry_run=dry_run)
    except ParentError as err:
        fix.error = err
        return
    except ApiError as err:
        if err.status == 409:
            fix.error = ApplySetError(
                f"the parent changed during verification (resourceVersion {set_info.resource_version} is stale); "
                "nothing was written", obj=f"parent {set_info.display}",
                fix="probably a deploy ran at the same time; run applyset_verify again")
        else:
            fix.error = ApplySetError(f"rewriting the parent's hints failed: {err.message}",
                                      obj=f"parent {set_info.display}",
                                      fix="the credentials need patch on the parent")
        return
    fix.applied = True
