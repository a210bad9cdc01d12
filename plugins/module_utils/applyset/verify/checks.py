"""The checks of applyset_verify: problem codes, and the problems of one set, of orphans, of the scan.

A prune only looks where the parent's hints point: the recorded group-kinds in the recorded
namespaces. A member outside them is never pruned (a leak); a hint entry without members
costs LISTs on every run; a forged or missing id makes the set unusable. Each check here turns
what the scan (``scan``) found and what the parent says (a ``LiveParent``) into
``Problem``s; none of them writes anything. ``identity_intact`` decides which sets a repair may
touch at all; ``classify_members`` which members the hints must cover.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..parent import retention
from .. import spec
from ..object_meta import OwnerReference
from .inventory import LiveMember, Unlisted
from .scan import Scan
from ..kube.discovery import Discovery
from ..kube.api import KubeApi
from ..parent.model import LiveParent, ObjectReference
from ..spec import GroupKind, GroupResource, ObjectId

ERROR, WARNING = "error", "warning"
SEVERITY_RANK = {ERROR: 0, WARNING: 1}

# Problem codes. docs/info-and-verify.md explains each one and how to fix it.
PARENT_MISSING = "parent_missing"
ID_MISSING = "id_missing"
ID_MISMATCH = "id_mismatch"
TOOLING_MISSING = "tooling_missing"
HINT_MISSING = "hint_missing"
LEGACY_HINT = "legacy_hint"
LEGACY_ANNOTATION = "legacy_annotation"
HINT_NOT_CANONICAL = "hint_not_canonical"
UNSERVED_GROUP_KIND = "unserved_group_kind"
UNLISTABLE_GROUP_KIND = "unlistable_group_kind"
UNRECORDED_GROUP_KIND = "unrecorded_group_kind"
UNRECORDED_NAMESPACE = "unrecorded_namespace"
STALE_GROUP_KIND = "stale_group_kind"
STALE_NAMESPACE = "stale_namespace"
FOREIGN_CONTROLLER = "foreign_controller"
ORPHAN = "orphan"
INCOMPLETE_SCAN = "incomplete_scan"
REDUCED_COVERAGE = "reduced_coverage"

# Unserved hint entries (kinds, and legacy entries discovery cannot map) that may still hold objects -> why.
MayHold = dict["GroupKind | GroupResource", str]

# Problems that rewriting the parent's hints resolves.
HINT_CODES = frozenset({
    HINT_MISSING, LEGACY_HINT, LEGACY_ANNOTATION, HINT_NOT_CANONICAL, UNSERVED_GROUP_KIND, UNRECORDED_GROUP_KIND,
    UNRECORDED_NAMESPACE, STALE_GROUP_KIND, STALE_NAMESPACE,
})


@dataclass
class Problem:
    """One finding of the check: its code, severity, message, the fix, and what it concerns."""

    code: str
    severity: str
    message: str
    fix: str  # what a person does about it
    applyset_id: str | None = None
    parent: ObjectReference | None = None  # None for problems of no set (orphans, the scan itself)
    objects: list[ObjectReference] = field(default_factory=list)
    fixable: bool = False  # fix: true can repair it (for another tool's set: with allow_foreign)
    fixed: bool = False  # repaired by this run (in check mode: would be)

    @property
    def sort_key(self) -> tuple[Any, ...]:
        """A set's own problems first (by parent), then orphans (by id), then the scan's."""
        parent: ObjectReference | dict[str, Any] = self.parent or {}
        group = 0 if self.parent else 1 if self.applyset_id else 2
        return (group, parent.get("namespace") or "", parent.get("kind") or "", parent.get("name") or "",
                self.applyset_id or "", SEVERITY_RANK[self.severity], self.code,
                [tuple(v or "" for v in ref.values()) for ref in self.objects])

    def to_dict(self) -> dict[str, Any]:
        """The problem as applyset_verify returns it."""
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "fix": self.fix,
            "fixable": self.fixable,
            "fixed": self.fixed,
            "id": self.applyset_id,
            "parent": self.parent,
            "objects": self.objects,
        }


def _set_problem(set_info: LiveParent, code: str, severity: str, message: str, fix: str,
                 objects: list[ObjectReference] | None = None) -> Problem:
    return Problem(code=code, severity=severity, message=f"{set_info.display}: {message}", fix=fix,
                   applyset_id=set_info.expected_id, parent=set_info.parent_ref(),
                   objects=objects if objects is not None else [set_info.parent_ref()],
                   fixable=code in HINT_CODES and identity_intact(set_info))


def identity_intact(set_info: LiveParent) -> bool:
    """Hints may only be rewritten for a parent that is what it claims to be, and says who manages it.

    :param set_info: the set's parent.
    :returns: True when its id label is the expected id and it has a tooling annotation.
    """
    return set_info.id_matches and set_info.tooling is not None


def member_refs(members: Iterable[LiveMember]) -> list[ObjectReference]:
    """The references (apiVersion, kind, namespace, name) of ``LiveMember``s, in their sort order."""
    return [m.ref() for m in sorted(members, key=lambda m: m.sort_key)]


def member_names(members: Iterable[LiveMember], limit: int = 5) -> str:
    """The first ``limit`` members as a message shows them (``ConfigMap shop/a, ...``), then how many more."""
    shown = [m.display for m in sorted(members, key=lambda m: m.sort_key)]
    extra = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return ", ".join(shown[:limit]) + extra


# ----- checks of one set ---------------------------------------------------------------------


def check_identity(set_info: LiveParent) -> list[Problem]:
    """The id label and the tooling annotation, as kubectl checks them before any apply.

    :param set_info: the set's parent.
    :returns: ``id_missing``, ``id_mismatch`` and ``tooling_missing`` problems.
    """
    problems = []
    expected = set_info.expected_id
    label = spec.LABEL_ID
    if set_info.live_id is None:
        problems.append(_set_problem(
            set_info, ID_MISSING, ERROR, f"the parent has no {label} label, so no tool will use it",
            f"check that this object really is the set's parent, then label it: {label}={expected}"))
    elif set_info.live_id != expected:
        problems.append(_set_problem(
            set_info, ID_MISMATCH, ERROR,
            f"the {label} label does not match the parent (got {set_info.live_id}, want {expected}); the parent "
            "may impersonate another set, whose members a prune through it would delete",
            f"inspect the parent and the objects labelled {spec.LABEL_PART_OF}={set_info.live_id}; then set the "
            f"label to {expected} by hand, or delete this parent if it is a copy"))
    if set_info.tooling is None:
        problems.append(_set_problem(
            set_info, TOOLING_MISSING, ERROR,
            f"the parent has no {spec.ANNOTATION_TOOLING} annotation, so no tool knows it manages the set",
            "annotate it with the managing tool, e.g. applyset.kubernetes.io/tooling=kubectl/v1.33.0, or run "
            "applyset_apply with takeover: true to manage the set with this collection"))
    return problems


def check_hint_annotations(set_info: LiveParent, discovery: Discovery,
                           may_hold: MayHold | None = None) -> list[Problem]:
    """The hint annotations themselves: present, current format, served kinds, canonical text.

    :param set_info: the set's parent.
    :param discovery: the server's discovery, to tell served kinds from unserved ones.
    :param may_hold: unserved recorded kinds (and unmapped legacy entries) that may still hold
        objects, with why (``kinds_that_may_hold``); they are reported, never dropped.
    :returns: ``hint_missing``, ``legacy_hint``, ``legacy_annotation``, ``unserved_group_kind``,
        ``unlistable_group_kind`` and ``hint_not_canonical`` problems.
    """
    problems = []
    annotations = set_info.annotations
    if set_info.hint_source is None:
        problems.append(_set_problem(
            set_info, HINT_MISSING, ERROR,
            f"the parent has no {spec.ANNOTATION_GROUP_KINDS} annotation, so a prune does not know where to "
            "look (kubectl refuses the set)",
            "run applyset_verify with fix: true to record the kinds of the members found"))
    elif set_info.legacy_hint:
        problems.append(_set_problem(
            set_info, LEGACY_HINT, WARNING,
            f"the kinds are recorded only in {spec.ANNOTATION_GROUP_RESOURCES}, the format of kubectl 1.27 and "
            f"1.28; kubectl 1.29 and later read {spec.ANNOTATION_GROUP_KINDS}",
            "run applyset_verify with fix: true (or apply the set with kubectl 1.29 or later) to write "
            f"{spec.ANNOTATION_GROUP_KINDS}"))
    elif set_info.legacy_annotation:
        only_legacy = set_info.legacy_only_group_kinds
        names_more = (f"; it names {spec.format_group_kinds(only_legacy)} that {spec.ANNOTATION_GROUP_KINDS} does "
                      "not, which applyset_apply still counts as recorded (kubectl does not)" if only_legacy else "")
        # Kinds only the legacy annotation names are in the prune scope of applyset_apply (which
        # reads both), but not of kubectl 1.29 and later: an error until the repair records them.
        problems.append(_set_problem(
            set_info, LEGACY_ANNOTATION, ERROR if only_legacy else WARNING,
            f"the parent still carries {spec.ANNOTATION_GROUP_RESOURCES} beside {spec.ANNOTATION_GROUP_KINDS}; "
            f"kubectl 1.29 and later remove it when they update a set and read only the latter{names_more}",
            f"run applyset_verify with fix: true to remove {spec.ANNOTATION_GROUP_RESOURCES}"))
    problems += _unserved_hint_entries(set_info, discovery, may_hold or {})

    kinds_text = annotations.get(spec.ANNOTATION_GROUP_KINDS)
    namespaces_text = annotations.get(spec.ANNOTATION_ADDITIONAL_NAMESPACES)
    canonical_kinds = spec.format_group_kinds(spec.parse_group_kinds(kinds_text))
    canonical_namespaces = spec.format_namespaces(spec.parse_namespaces(namespaces_text), set_info.namespace)
    odd = []
    if kinds_text is not None and kinds_text != canonical_kinds:
        odd.append(f'{spec.ANNOTATION_GROUP_KINDS} is "{kinds_text}", canonically "{canonical_kinds}"')
    if namespaces_text is not None and namespaces_text != canonical_namespaces:
        odd.append(f'{spec.ANNOTATION_ADDITIONAL_NAMESPACES} is "{namespaces_text}", canonically '
                   f'"{canonical_namespaces}"')
    if odd:
        problems.append(_set_problem(
            set_info, HINT_NOT_CANONICAL, WARNING,
            "hint annotations are not sorted and minimal (no duplicates, blanks or spaces, and not the "
            "parent's own namespace): " + "; ".join(odd),
            "run applyset_verify with fix: true to rewrite them in canonical form"))
    return problems


def _unserved_hint_entries(set_info: LiveParent, discovery: Discovery, may_hold: MayHold) -> list[Problem]:
    problems = []
    for gk in sorted(set_info.group_kinds):
        if discovery.for_group_kind(gk) is not None:
            continue
        if gk in may_hold:
            problems.append(_unlistable_problem(set_info, str(gk), may_hold[gk]))
            continue
        looks_like_resource = discovery.for_resource(gk.group, gk.kind)
        hint = (f"; it looks like a resource name, the entry for it is {looks_like_resource.group_kind}"
                if looks_like_resource else "; no CRD or APIService defines it, so it cannot hold objects")
        problems.append(_set_problem(
            set_info, UNSERVED_GROUP_KIND, ERROR,
            f"{spec.ANNOTATION_GROUP_KINDS} lists {gk}, which the server does not serve{hint} (kubectl fails with "
            "'could not find mapping' on every apply of this set)",
            f"run applyset_verify with fix: true to drop {gk} from the hint, or reinstall its CRD"))
    for group_resource in sorted(set_info.unmapped_resources):
        shown = f"{group_resource.resource}.{group_resource.group}"
        if group_resource in may_hold:
            problems.append(_unlistable_problem(set_info, shown, may_hold[group_resource]))
            continue
        problems.append(_set_problem(
            set_info, UNSERVED_GROUP_KIND, ERROR,
            f"{spec.ANNOTATION_GROUP_RESOURCES} lists {shown}, which the server does not serve and no CRD or "
            "APIService defines",
            f"run applyset_verify with fix: true to drop {shown} from the hint, or reinstall its CRD"))
    return problems


def _unlistable_problem(set_info: LiveParent, shown: str, reason: str) -> Problem:
    return _set_problem(
        set_info, UNLISTABLE_GROUP_KIND, ERROR,
        f"the hint lists {shown}, which the server does not serve right now, but {reason}; its members can be "
        "neither checked nor pruned until it is served again, and the hint keeps it so that none of them leaks",
        f"make the server serve {shown} again (a CRD version with served: true, or an available APIService); "
        "a repair never drops it")


def kinds_that_may_hold(client: KubeApi, discovery: Discovery, sets: list[LiveParent]) -> MayHold:
    """Unserved hint entries of these sets that may still hold objects -> why (parent/retention.py).

    Only reads the cluster's CRDs and APIServices when some set records an unserved entry.

    :param client: the API client.
    :param discovery: the server's discovery.
    :param sets: the sets' parents.
    :returns: GroupKinds, and legacy GroupResource entries discovery cannot map, mapped to why
        they may still hold objects; entries that provably hold nothing are left out.
    """
    unserved = {gk for s in sets for gk in s.group_kinds if discovery.for_group_kind(gk) is None}
    unmapped = {gr for s in sets for gr in s.unmapped_resources}
    if not unserved and not unmapped:
        return {}
    defs = retention.load(client, discovery)
    reasons: dict[GroupKind | GroupResource, str | None] = {
        gk: retention.why_it_may_hold_objects(gk, defs) for gk in unserved}
    reasons.update({gr: retention.why_resource_may_hold_objects(gr.group, gr.resource, defs) for gr in unmapped})
    return {key: reason for key, reason in reasons.items() if reason is not None}


@dataclass
class MemberKinds:
    """A set's members split by who deletes them.

    ``own``: what a prune deletes, so its kind and namespace must be recorded. ``derived``:
    objects a controller made for another member and labelled like it (EndpointSlices and
    Endpoints copy their Service's labels, part-of included); they go when their owner goes,
    so recording them would only add LISTs. ``controlled``: objects whose controller is
    outside the set (an operator copied its resource's labels); a prune leaves them alone.
    """

    own: list[LiveMember] = field(default_factory=list)
    derived: list[LiveMember] = field(default_factory=list)
    controlled: list[tuple[LiveMember, OwnerReference]] = field(default_factory=list)  # (member, controller)


def classify_members(set_info: LiveParent, members: list[LiveMember]) -> MemberKinds:
    """Split a set's members into own, derived and controlled ones (see ``MemberKinds``).

    :param set_info: the set's parent (its uid: a member it controls is its own).
    :param members: the set's ``LiveMember``s.
    """
    uids = {m.uid for m in members if m.uid}
    services = {m.object_id for m in members if m.group_kind == spec.SERVICE_KIND}
    kinds = MemberKinds()
    for member in members:
        controller = member.controller()
        if controller is not None and controller.get("uid") != set_info.uid:
            if controller.get("uid") in uids:
                kinds.derived.append(member)
            else:
                kinds.controlled.append((member, controller))
        elif (member.group_kind == spec.ENDPOINTS_KIND
              and ObjectId.of(spec.SERVICE_KIND, member.namespace, member.name) in services):
            # The endpoints controller sets no owner reference; the shared name is the link.
            kinds.derived.append(member)
        else:
            kinds.own.append(member)
    return kinds


def check_members(set_info: LiveParent, members: list[LiveMember], found: Scan,
                  discovery: Discovery) -> list[Problem]:
    """Members against the hints: leaks outside them, stale entries, controllers elsewhere.

    :param set_info: the set's parent.
    :param members: the set's ``LiveMember``s, wherever the scan found them.
    :param found: the scan (which kinds were listed in full, so an absence is proven).
    :param discovery: the server's discovery.
    :returns: ``unrecorded_group_kind``, ``unrecorded_namespace``, ``foreign_controller``,
        ``stale_group_kind`` and ``stale_namespace`` problems.
    """
    problems = []
    recorded = set_info.group_kinds
    scope = set_info.namespaces
    kinds = classify_members(set_info, members)

    outside_kinds: dict[GroupKind, list[LiveMember]] = {}
    outside_namespaces: dict[str | None, list[LiveMember]] = {}
    for member in kinds.own:
        if member.group_kind not in recorded:
            outside_kinds.setdefault(member.group_kind, []).append(member)
        if member.resource.namespaced and member.namespace not in scope:
            outside_namespaces.setdefault(member.namespace, []).append(member)

    for gk, leaked in sorted(outside_kinds.items()):
        problems.append(_set_problem(
            set_info, UNRECORDED_GROUP_KIND, ERROR,
            f"{len(leaked)} member(s) of kind {gk}, which {spec.ANNOTATION_GROUP_KINDS} does not list, so no "
            f"prune will ever see them: {member_names(leaked)}",
            f"run applyset_verify with fix: true to record {gk}, or remove the {spec.LABEL_PART_OF} label from "
            "objects that do not belong to the set", member_refs(leaked)))
    for namespace, leaked in sorted(outside_namespaces.items()):
        problems.append(_set_problem(
            set_info, UNRECORDED_NAMESPACE, ERROR,
            f"{len(leaked)} member(s) in namespace {namespace}, which the set does not record "
            f"({spec.ANNOTATION_ADDITIONAL_NAMESPACES}), so no prune will ever see them: {member_names(leaked)}",
            f"run applyset_verify with fix: true to record namespace {namespace}, or remove the "
            f"{spec.LABEL_PART_OF} label from objects that do not belong to the set", member_refs(leaked)))
    controlled = kinds.controlled
    if controlled:
        problems.append(_set_problem(
            set_info, FOREIGN_CONTROLLER, WARNING,
            f"{len(controlled)} member(s) are controlled by an object outside the set, so a prune leaves them "
            "alone: " + ", ".join(f"{m.display} (controller {c.get('kind')} {c.get('name')})"
                                  for m, c in controlled[:5])
            + (f" and {len(controlled) - 5} more" if len(controlled) > 5 else ""),
            "the label was probably copied by an operator from its custom resource; remove "
            f"{spec.LABEL_PART_OF} from these objects, or make the operator stop copying it",
            member_refs(m for m, _controller in controlled)))

    problems += _stale_hints(set_info, members, found, discovery)
    return problems


def _stale_hints(set_info: LiveParent, members: list[LiveMember], found: Scan,
                 discovery: Discovery) -> list[Problem]:
    """Recorded kinds and namespaces without members; only what the scan proved empty."""
    problems = []
    kinds_with_members = {m.group_kind for m in members}
    served = {gk: discovery.for_group_kind(gk) for gk in set_info.group_kinds}
    namespaced = {gk: res.namespaced for gk, res in served.items() if res is not None}
    for gk in sorted(namespaced):
        if found.covers(gk, set_info.namespaces if namespaced[gk] else ()) and gk not in kinds_with_members:
            problems.append(_set_problem(
                set_info, STALE_GROUP_KIND, WARNING,
                f"{spec.ANNOTATION_GROUP_KINDS} lists {gk}, but the set has no member of that kind",
                f"run applyset_verify with fix: true to drop {gk} from the hint (each run LISTs it for nothing)"))
    namespaced_recorded = [gk for gk, res in served.items() if res is not None and res.namespaced]
    if all(found.covers(gk, set_info.namespaces) for gk in namespaced_recorded):
        used = {m.namespace for m in members if m.namespace}
        for namespace in sorted(set_info.additional_namespaces - used - {set_info.namespace}):
            problems.append(_set_problem(
                set_info, STALE_NAMESPACE, WARNING,
                f"{spec.ANNOTATION_ADDITIONAL_NAMESPACES} lists {namespace}, but no member lives there",
                f"run applyset_verify with fix: true to drop {namespace} from the hint"))
    return problems


def check_set(set_info: LiveParent, members: list[LiveMember], found: Scan, discovery: Discovery,
              may_hold: MayHold | None = None) -> list[Problem]:
    """Every check of one set: identity, then (only for an intact id) hints and members.

    :param set_info: the set's parent.
    :param members: the set's ``LiveMember``s.
    :param found: the scan.
    :param discovery: the server's discovery.
    :param may_hold: unserved recorded entries that may still hold objects (``kinds_that_may_hold``).
    :returns: the set's problems.
    """
    problems = check_identity(set_info)
    if set_info.live_id is None or not set_info.id_matches:
        # Which objects belong to such a parent is unknowable; hint checks would only add noise.
        return problems
    return (problems + check_hint_annotations(set_info, discovery, may_hold)
            + check_members(set_info, members, found, discovery))


def check_orphans(found: Scan, known_ids: set[str], namespace: str | None) -> list[Problem]:
    """Objects whose part-of names an id that no parent has: nobody will ever prune them.

    :param found: the scan of every object with a ``part-of`` label.
    :param known_ids: every parent's expected id and id label.
    :param namespace: report only orphans in this namespace; None for all.
    :returns: one ``orphan`` problem per unknown id.
    """
    problems = []
    for applyset_id, members in sorted(found.by_id().items()):
        if applyset_id in known_ids:
            continue
        if namespace:
            members = [m for m in members if m.namespace == namespace]
        if not members:
            continue
        problems.append(Problem(
            code=ORPHAN, severity=WARNING, applyset_id=applyset_id, objects=member_refs(members),
            message=f"{len(members)} object(s) are labelled {spec.LABEL_PART_OF}={applyset_id}, but no parent has "
                    f"that id, so no prune will ever remove them: {member_names(members)}",
            fix=f"delete them if they are no longer needed, or keep them and remove the label "
                f"(kubectl label KIND NAME {spec.LABEL_PART_OF}-); recreating the set's parent adopts them again"))
    return problems


def incomplete_scan_problem(unlisted: list[Unlisted]) -> Problem:
    """The ``incomplete_scan`` error for the LISTs that failed: credential advice only for those
    refused (401, 403), the others named as what failed (``kube.list_errors.explain``).

    :param unlisted: the ``Unlisted`` records (at least one).
    """
    kinds = sorted({str(u.group_kind) for u in unlisted})
    fixes = []
    if any(u.refused or u.failure is None for u in unlisted):
        fixes.append("give the credentials list on every kind across all namespaces (e.g. the view ClusterRole plus "
                     "list on the kinds it leaves out)")
    others: dict[tuple[str, str], list[str]] = {}
    for u in unlisted:
        if u.failure is not None and not u.refused:
            others.setdefault((u.failure.what, u.failure.fix), []).append(str(u.group_kind))
    for (what, fix), failed in sorted(others.items()):
        fixes.append(f"{', '.join(sorted(set(failed)))}: {what}; {fix}")
    return Problem(
        code=INCOMPLETE_SCAN, severity=ERROR,
        message=f"the check is incomplete: {len(kinds)} kind(s) could not be listed ({_shown(kinds)}); members of "
                "those kinds outside the hints, stale hints and orphans could go unnoticed (see unlisted for the "
                "reasons)",
        fix="; ".join(fixes) + "; or set fail_on_problems: false to accept a partial check")


def _shown(names: list[str], limit: int = 10) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def reduced_coverage_message(reduced: list[Unlisted], namespaces: Collection[str]) -> str:
    """What the credentials could not see: the kinds they may not list across all namespaces.

    :param reduced: the ``Unlisted`` refusals (at least one).
    :param namespaces: where namespaced kinds were listed instead.
    """
    kinds = sorted({str(u.group_kind) for u in reduced if u.namespace is None})
    there = sorted({str(u.group_kind) for u in reduced if u.namespace is not None})
    where = ", ".join(sorted(namespaces)) or "no namespace"
    neither = f" (but not {_shown(there)}, which they may not list there either)" if there else ""
    return (f"reduced coverage: the credentials may not list {len(kinds)} kind(s) across all namespaces "
            f"({_shown(kinds)}); namespaced ones were looked for only in {where}{neither}, cluster-scoped ones not "
            "at all, so members that leaked into other namespaces or into those kinds, and orphans, could go "
            "unnoticed (see reduced_coverage)")


def reduced_coverage_problem(reduced: list[Unlisted], namespaces: Collection[str], required: bool) -> Problem:
    """The ``reduced_coverage`` problem: a warning, or an error when a complete scan is required.

    :param reduced: the ``Unlisted`` refusals (at least one).
    :param namespaces: where namespaced kinds were listed instead.
    :param required: the user asked for a complete scan (``require_complete_scan``).
    """
    return Problem(
        code=REDUCED_COVERAGE, severity=ERROR if required else WARNING,
        message=reduced_coverage_message(reduced, namespaces),
        fix="for a complete check give the credentials list on every kind across all namespaces (a ClusterRole "
            "bound by a ClusterRoleBinding); " + (
                "or accept the reduced coverage with require_complete_scan: false" if required else
                "what the set records was checked in full; require_complete_scan: true makes this an error"))
