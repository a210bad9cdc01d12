"""Verify ApplySets against the specification and the live cluster, and repair their hints.

A prune only looks where the parent's hints point: the recorded group-kinds in the recorded
namespaces. A member outside them is never pruned (a leak); a hint entry without members
costs LISTs on every run; a forged or missing id makes the set unusable. Finding leaks needs
more than the hints, so verification scans *every* listable kind across all namespaces, with
one metadata-only LIST each, selected by the ``part-of`` label. A kind that cannot be listed
(RBAC, an unavailable API) makes the scan incomplete, and an incomplete scan is never ok.

The repair only ever rewrites the parent's hint annotations, and only drops an entry that the
scan proved empty. It never deletes or relabels anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import parent as parents
from . import retention, spec
from .errors import ApiError, ApplySetError, ParentError
from .inventory import LiveMember, find_sets, get_set, unlisted_from
from .kube import Discovery, KubeClient, Resource
from .parent import LiveParent
from .spec import GroupKind, ObjectId

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
    parent: dict | None = None  # None for problems of no set (orphans, the scan itself)
    objects: list = field(default_factory=list)  # refs: apiVersion, kind, namespace, name
    fixable: bool = False  # fix: true can repair it (for another tool's set: with allow_foreign)
    fixed: bool = False  # repaired by this run (in check mode: would be)

    @property
    def sort_key(self) -> tuple:
        """A set's own problems first (by parent), then orphans (by id), then the scan's."""
        parent = self.parent or {}
        group = 0 if self.parent else 1 if self.applyset_id else 2
        return (group, parent.get("namespace") or "", parent.get("kind") or "", parent.get("name") or "",
                self.applyset_id or "", SEVERITY_RANK[self.severity], self.code,
                [tuple(v or "" for v in ref.values()) for ref in self.objects])

    def to_dict(self) -> dict:
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


def _set_problem(set_info: LiveParent, code: str, severity: str, message: str, fix: str, objects=None) -> Problem:
    return Problem(code=code, severity=severity, message=f"{set_info.display}: {message}", fix=fix,
                   applyset_id=set_info.expected_id, parent=set_info.parent_ref(),
                   objects=objects if objects is not None else [set_info.parent_ref()],
                   fixable=code in HINT_CODES and _identity_intact(set_info))


def _identity_intact(set_info: LiveParent) -> bool:
    """Hints may only be rewritten for a parent that is what it claims to be, and says who manages it."""
    return set_info.id_matches and set_info.tooling is not None


def _refs(members) -> list:
    return [m.ref() for m in sorted(members, key=lambda m: m.sort_key)]


def _names(members, limit: int = 5) -> str:
    shown = [m.display for m in sorted(members, key=lambda m: m.sort_key)]
    extra = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return ", ".join(shown[:limit]) + extra


# ----- the scan ----------------------------------------------------------------------------


def listable_resources(discovery: Discovery) -> list[Resource]:
    """One resource (the preferred version) per group-kind the server lets us LIST.

    :param discovery: the server's discovery.
    :returns: the resources, sorted by group and kind.
    """
    chosen = {}
    for res in discovery.resources:
        preferred = discovery.for_group_kind(res.group_kind) or res
        # Discovery without verbs (some aggregated APIs) is given the benefit of the doubt.
        if preferred.verbs and "list" not in preferred.verbs:
            continue
        chosen.setdefault(preferred.group_kind, preferred)
    return sorted(chosen.values(), key=lambda r: r.group_kind)


@dataclass
class Scan:
    """Every object carrying a part-of label (or one set's), by kind, across all namespaces."""

    members: list = field(default_factory=list)
    listed: set = field(default_factory=set)  # GroupKinds listed in full
    unlisted: list = field(default_factory=list)

    def by_id(self) -> dict:
        """The members found, grouped by the id their ``part-of`` label names."""
        grouped: dict[str, list] = {}
        for member in self.members:
            grouped.setdefault(member.part_of, []).append(member)
        return grouped


def scan(client: KubeClient, discovery: Discovery, applyset_id: str | None = None) -> Scan:
    """LIST every listable kind in all namespaces, metadata only, with the part-of selector.

    One request per kind (paginated), run in parallel: a LIST across all namespaces costs no
    more than one in a single namespace, and one per namespace would not scale.

    :param client: the API client.
    :param discovery: the server's discovery.
    :param applyset_id: select only this set's members; None selects every object with a
        ``part-of`` label.
    :returns: the ``Scan``: the members sorted, the kinds listed in full, the LISTs that failed.
    :raises Exception: anything but an ``ApiError`` from a LIST propagates.
    """
    selector = f"{spec.LABEL_PART_OF}={applyset_id}" if applyset_id else spec.LABEL_PART_OF
    resources = listable_resources(discovery)
    result = Scan()

    def fetch(res):
        return list(client.list(res, None, label_selector=selector))

    not_found = []
    for res, items in zip(resources, client.map(fetch, resources)):
        if isinstance(items, ApiError):
            if items.status == 404:
                not_found.append((res, items))
            else:
                result.unlisted.append(unlisted_from(items, res))
            continue
        if isinstance(items, Exception):
            raise items
        result.listed.add(res.group_kind)
        result.members += [LiveMember.from_item(res, item) for item in items]
    if not_found:
        # A kind that vanished between discovery and its LIST (a CRD deleted meanwhile) holds
        # nothing any more: asked again, discovery proves it, and the scan stays complete.
        fresh = client.discover()
        for res, err in not_found:
            if fresh.for_group_kind(res.group_kind) is None:
                result.listed.add(res.group_kind)
            else:
                result.unlisted.append(unlisted_from(err, res))
    result.members.sort(key=lambda m: m.sort_key)
    return result


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


def check_hint_annotations(set_info: LiveParent, discovery: Discovery, may_hold: dict | None = None) -> list[Problem]:
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


def _unserved_hint_entries(set_info: LiveParent, discovery: Discovery, may_hold: dict) -> list[Problem]:
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


def kinds_that_may_hold(client: KubeClient, discovery: Discovery, sets: list) -> dict:
    """Unserved hint entries of these sets that may still hold objects -> why (retention.py).

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
    reasons = {gk: retention.why_it_may_hold_objects(gk, defs) for gk in unserved}
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

    own: list = field(default_factory=list)
    derived: list = field(default_factory=list)
    controlled: list = field(default_factory=list)  # (member, controller reference)


def classify_members(set_info: LiveParent, members: list) -> MemberKinds:
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


def check_members(set_info: LiveParent, members: list, found: Scan, discovery: Discovery) -> list[Problem]:
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

    outside_kinds: dict[GroupKind, list] = {}
    outside_namespaces: dict[str, list] = {}
    for member in kinds.own:
        if member.group_kind not in recorded:
            outside_kinds.setdefault(member.group_kind, []).append(member)
        if member.resource.namespaced and member.namespace not in scope:
            outside_namespaces.setdefault(member.namespace, []).append(member)

    for gk, leaked in sorted(outside_kinds.items()):
        problems.append(_set_problem(
            set_info, UNRECORDED_GROUP_KIND, ERROR,
            f"{len(leaked)} member(s) of kind {gk}, which {spec.ANNOTATION_GROUP_KINDS} does not list, so no "
            f"prune will ever see them: {_names(leaked)}",
            f"run applyset_verify with fix: true to record {gk}, or remove the {spec.LABEL_PART_OF} label from "
            "objects that do not belong to the set", _refs(leaked)))
    for namespace, leaked in sorted(outside_namespaces.items()):
        problems.append(_set_problem(
            set_info, UNRECORDED_NAMESPACE, ERROR,
            f"{len(leaked)} member(s) in namespace {namespace}, which the set does not record "
            f"({spec.ANNOTATION_ADDITIONAL_NAMESPACES}), so no prune will ever see them: {_names(leaked)}",
            f"run applyset_verify with fix: true to record namespace {namespace}, or remove the "
            f"{spec.LABEL_PART_OF} label from objects that do not belong to the set", _refs(leaked)))
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
            _refs(m for m, _controller in controlled)))

    problems += _stale_hints(set_info, members, found, discovery)
    return problems


def _stale_hints(set_info: LiveParent, members: list, found: Scan, discovery: Discovery) -> list[Problem]:
    """Recorded kinds and namespaces without members; only what the scan proved empty."""
    problems = []
    kinds_with_members = {m.group_kind for m in members}
    served = {gk: discovery.for_group_kind(gk) for gk in set_info.group_kinds}
    for gk in sorted(gk for gk, res in served.items() if res is not None):
        if gk in found.listed and gk not in kinds_with_members:
            problems.append(_set_problem(
                set_info, STALE_GROUP_KIND, WARNING,
                f"{spec.ANNOTATION_GROUP_KINDS} lists {gk}, but the set has no member of that kind",
                f"run applyset_verify with fix: true to drop {gk} from the hint (each run LISTs it for nothing)"))
    namespaced_recorded = [gk for gk, res in served.items() if res is not None and res.namespaced]
    if all(gk in found.listed for gk in namespaced_recorded):
        used = {m.namespace for m in members if m.namespace}
        for namespace in sorted(set_info.additional_namespaces - used - {set_info.namespace}):
            problems.append(_set_problem(
                set_info, STALE_NAMESPACE, WARNING,
                f"{spec.ANNOTATION_ADDITIONAL_NAMESPACES} lists {namespace}, but no member lives there",
                f"run applyset_verify with fix: true to drop {namespace} from the hint"))
    return problems


def check_set(set_info: LiveParent, members: list, found: Scan, discovery: Discovery,
              may_hold: dict | None = None) -> list[Problem]:
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


def check_orphans(found: Scan, known_ids: set, namespace: str | None) -> list[Problem]:
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
            code=ORPHAN, severity=WARNING, applyset_id=applyset_id, objects=_refs(members),
            message=f"{len(members)} object(s) are labelled {spec.LABEL_PART_OF}={applyset_id}, but no parent has "
                    f"that id, so no prune will ever remove them: {_names(members)}",
            fix=f"delete them if they are no longer needed, or keep them and remove the label "
                f"(kubectl label KIND NAME {spec.LABEL_PART_OF}-); recreating the set's parent adopts them again"))
    return problems


def incomplete_scan_problem(unlisted: list) -> Problem:
    """The ``incomplete_scan`` error for the LISTs that failed.

    :param unlisted: the ``Unlisted`` records (at least one).
    """
    kinds = sorted({str(u.group_kind) for u in unlisted})
    shown = ", ".join(kinds[:10]) + (f" and {len(kinds) - 10} more" if len(kinds) > 10 else "")
    return Problem(
        code=INCOMPLETE_SCAN, severity=ERROR,
        message=f"the check is incomplete: {len(kinds)} kind(s) could not be listed ({shown}); members of those "
                "kinds outside the hints, stale hints and orphans could go unnoticed (see unlisted for the reasons)",
        fix="give the credentials list on every kind across all namespaces (e.g. the view ClusterRole plus list "
            "on the kinds it leaves out), or set fail_on_problems: false to accept a partial check")


# ----- repair --------------------------------------------------------------------------------


@dataclass
class HintFix:
    """A rewrite of one parent's hints so that they match the members found."""

    set_info: LiveParent
    group_kinds: set
    namespaces: set
    applied: bool = False
    refused: str | None = None  # why it was not applied (another tool's set, a deploy running)
    error: ApplySetError | None = None

    @property
    def before(self) -> dict:
        """The hint annotations as they are (only those present)."""
        return {key: self.set_info.annotations.get(key) for key in
                (spec.ANNOTATION_GROUP_KINDS, spec.ANNOTATION_GROUP_RESOURCES, spec.ANNOTATION_ADDITIONAL_NAMESPACES)
                if self.set_info.annotations.get(key) is not None}

    @property
    def after(self) -> dict:
        """The hint annotations as the repair writes them."""
        return {
            spec.ANNOTATION_GROUP_KINDS: spec.format_group_kinds(self.group_kinds),
            spec.ANNOTATION_ADDITIONAL_NAMESPACES: spec.format_namespaces(self.namespaces, self.set_info.namespace),
        }

    def to_dict(self) -> dict:
        """The fix as applyset_verify returns it."""
        data = {"parent": self.set_info.parent_ref(), "id": self.set_info.expected_id, "before": self.before,
                "after": self.after, "applied": self.applied}
        if self.refused:
            data["refused"] = self.refused
        if self.error is not None:
            data["error"] = self.error.to_dict()
        return data


def plan_fix(set_info: LiveParent, members: list, found: Scan, discovery: Discovery,
             may_hold: dict | None = None) -> HintFix | None:
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
    if not _identity_intact(set_info):
        return None
    if any(gr in may_hold for gr in set_info.unmapped_resources):
        return None
    unproven = {gk for gk in set_info.group_kinds
                if discovery.for_group_kind(gk) is not None and gk not in found.listed}
    own = classify_members(set_info, members).own
    # Own members must be covered; a recorded entry stays while anything of the set is in it
    # (exactly the entries _stale_hints leaves alone).
    group_kinds = ({m.group_kind for m in own} | unproven
                   | {m.group_kind for m in members if m.group_kind in set_info.group_kinds})
    namespaces = ({m.namespace for m in own if m.namespace}
                  | {m.namespace for m in members if m.namespace in set_info.additional_namespaces})
    kept = {gk for gk in set_info.group_kinds if gk in may_hold}
    group_kinds |= kept
    if kept or any(discovery.for_group_kind(gk).namespaced for gk in unproven):
        namespaces |= set(set_info.additional_namespaces)
    fix = HintFix(set_info, group_kinds, namespaces)
    live = set_info.annotations
    kinds_differ = live.get(spec.ANNOTATION_GROUP_KINDS) != fix.after[spec.ANNOTATION_GROUP_KINDS]
    # kubectl always writes additional-namespaces, but an absent one means the same as "".
    namespaces_differ = (live.get(spec.ANNOTATION_ADDITIONAL_NAMESPACES) or "") != \
        fix.after[spec.ANNOTATION_ADDITIONAL_NAMESPACES]
    legacy_left = set_info.hint_source == spec.ANNOTATION_GROUP_KINDS and spec.ANNOTATION_GROUP_RESOURCES in live
    return fix if kinds_differ or namespaces_differ or legacy_left else None


def fix_body(fix: HintFix) -> dict:
    """The parent's id label and hints as the set's own tool would write them.

    ``parent_body`` writes our tooling value; a repair must not change which tool manages the
    set (kubectl refuses a set whose tooling names another tool), so the live value is kept.

    :param fix: the planned fix.
    :returns: the server-side apply body, guarded by the resourceVersion read.
    """
    set_info = fix.set_info
    body = parents.parent_body(_parent_of(set_info, set_info.resource_version), fix.group_kinds, fix.namespaces)
    body["metadata"]["annotations"][spec.ANNOTATION_TOOLING] = set_info.tooling
    return body


def _parent_of(set_info: LiveParent, resource_version: str | None) -> parents.Parent:
    """The engine's parent model for a set found by the scan, as of ``resource_version``."""
    parent = parents.Parent.from_live(set_info)
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


def apply_fix(client: KubeClient, fix: HintFix, *, dry_run: bool) -> None:
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
        annotations = ((written or {}).get("metadata") or {}).get("annotations") or {}
        if spec.ANNOTATION_GROUP_RESOURCES in annotations:
            # Owned by another manager (a kubectl set taken over): the apply cannot remove it.
            parents.drop_legacy_annotation(
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


# ----- the applyset_verify run -----------------------------------------------------------------


@dataclass
class VerifyReport:
    """What applyset_verify returns: the sets, the problems, the fixes, the LISTs that failed."""

    sets: list = field(default_factory=list)  # LiveParent
    member_counts: dict = field(default_factory=dict)  # expected id -> members found, derived ones apart
    derived: dict = field(default_factory=dict)  # expected id -> refs of objects controllers made for members
    problems: list = field(default_factory=list)
    fixes: list = field(default_factory=list)
    unlisted: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    dry_run: bool = False

    @property
    def complete(self) -> bool:
        """Every kind could be listed."""
        return not self.unlisted

    @property
    def remaining_errors(self) -> list:
        """Problems of severity error that this run did not repair."""
        return [p for p in self.problems if p.severity == ERROR and not p.fixed]

    @property
    def ok(self) -> bool:
        """The check was complete and no error remains."""
        return self.complete and not self.remaining_errors

    @property
    def changed(self) -> bool:
        """Some fix was written (in check mode: would be)."""
        return any(f.applied for f in self.fixes)

    @property
    def fix_errors(self) -> list:
        """The errors of fixes that failed."""
        return [f.error for f in self.fixes if f.error is not None]

    def summary(self) -> dict:
        """Counts: sets, errors, warnings, fixed, remaining errors."""
        return {
            "applysets": len(self.sets),
            "errors": sum(p.severity == ERROR for p in self.problems),
            "warnings": sum(p.severity == WARNING for p in self.problems),
            "fixed": sum(p.fixed for p in self.problems),
            "remaining_errors": len(self.remaining_errors),
        }

    def to_dict(self) -> dict:
        """The result of applyset_verify, as the module returns it."""
        problems_by_set: dict[str, list] = {}
        for problem in self.problems:
            problems_by_set.setdefault(problem.applyset_id, []).append(problem)
        applysets = []
        for set_info in self.sets:
            own = problems_by_set.get(set_info.expected_id, [])
            entry = set_info.to_dict()
            entry["member_count"] = self.member_counts.get(set_info.expected_id, 0)
            entry["derived"] = self.derived.get(set_info.expected_id, [])
            entry["ok"] = self.complete and not any(p.severity == ERROR and not p.fixed for p in own)
            applysets.append(entry)
        return {
            "changed": self.changed,
            "ok": self.ok,
            "complete": self.complete,
            "summary": self.summary(),
            "applysets": applysets,
            "problems": [p.to_dict() for p in self.problems],
            "fixes": [f.to_dict() for f in self.fixes],
            "unlisted": sorted((u.to_dict() for u in self.unlisted),
                               key=lambda u: (u["group_kind"], u["namespace"] or "")),
        }


def verify(client: KubeClient, *, parent_spec=None, namespace: str | None = None, fix: bool = False,
           allow_foreign: bool = False, dry_run: bool = False) -> VerifyReport:
    """Check one set (``parent_spec``) or every set in scope, and repair hints when asked.

    :param client: the API client.
    :param parent_spec: the one set to check, as in applyset_apply. Without it, the sets
        checked are those whose parent is in ``namespace``, and orphans are looked for too.
    :param namespace: the namespace of the sets to check (None: all), or the default
        namespace of ``parent_spec``.
    :param fix: repair the hints that do not match the members found.
    :param allow_foreign: repair sets of other tools too.
    :param dry_run: send the repair as a server-side dry run: validated by the server and
        reported, nothing changes.
    :returns: the ``VerifyReport``, problems sorted.
    :raises InputError: for a parent reference that cannot name a parent.
    :raises ApplySetError: when the one parent asked for cannot be read.
    """
    discovery = client.discover()
    report = VerifyReport(dry_run=dry_run)
    if parent_spec is not None:
        found = _verify_one(client, discovery, parent_spec, namespace, report)
    else:
        found = _verify_all(client, discovery, namespace, report)
    if found is not None:
        report.unlisted += found.unlisted
        grouped = found.by_id()
        may_hold = kinds_that_may_hold(client, discovery, report.sets)
        for set_info in report.sets:
            if set_info.claimed():
                report.warnings.append(f"{set_info.display}: a run of applyset_apply is changing the set right now, "
                                       "so its hints may be wider than its members until that run ends")
            members = grouped.get(set_info.expected_id, [])
            derived = classify_members(set_info, members).derived
            report.member_counts[set_info.expected_id] = len(members) - len(derived)
            report.derived[set_info.expected_id] = _refs(derived)
            report.problems += check_set(set_info, members, found, discovery, may_hold)
            planned = plan_fix(set_info, members, found, discovery, may_hold)
            if planned is not None:
                report.fixes.append(planned)
    report.unlisted = list(dict.fromkeys(report.unlisted))  # the same LIST can fail for two reasons to look
    if report.unlisted:
        report.problems.append(incomplete_scan_problem(report.unlisted))
    if fix:
        _repair(client, report, allow_foreign=allow_foreign, dry_run=dry_run)
    report.problems.sort(key=lambda p: p.sort_key)
    return report


def _verify_one(client: KubeClient, discovery: Discovery, parent_spec, namespace, report: VerifyReport) -> Scan | None:
    set_info, res, name, parent_namespace = get_set(client, discovery, parent_spec, namespace)
    if set_info is not None:
        report.sets.append(set_info)
        return scan(client, discovery, set_info.expected_id)
    applyset_id = spec.compute_id(name, parent_namespace, res.kind, res.group)
    found = scan(client, discovery, applyset_id)
    report.unlisted += found.unlisted
    report.problems.append(Problem(
        code=PARENT_MISSING, severity=ERROR, applyset_id=applyset_id, objects=_refs(found.members),
        parent={"apiVersion": res.api_version, "kind": res.kind, "namespace": parent_namespace or None,
                "name": name},
        message=f"{ObjectId.of(res, parent_namespace, name)} does not exist"
                + (f"; {len(found.members)} object(s) still carry its id: {_names(found.members)}"
                   if found.members else ""),
        fix="check the parent's name, kind and namespace; to take the objects back, deploy the set again with "
            "applyset_apply (it recreates a Secret or ConfigMap parent)"))
    return None


def _verify_all(client: KubeClient, discovery: Discovery, namespace, report: VerifyReport) -> Scan:
    listing = find_sets(client, discovery, namespace)
    # Orphans need every parent's id, wherever the parent lives.
    everywhere = find_sets(client, discovery, None) if namespace else listing
    report.sets = listing.sets
    report.warnings += listing.warnings
    report.unlisted += listing.unlisted + (everywhere.unlisted if namespace else [])
    found = scan(client, discovery)
    if everywhere.unlisted:
        report.warnings.append("orphans were not looked for: not every parent could be listed, so an id without "
                               "a visible parent proves nothing")
    else:
        known_ids = {s.expected_id for s in everywhere.sets} | {s.live_id for s in everywhere.sets if s.live_id}
        report.problems += check_orphans(found, known_ids, namespace)
    return found


def _refusal(set_info: LiveParent, allow_foreign: bool) -> str | None:
    if not set_info.is_ours and not allow_foreign:
        return (f"the set is managed by {set_info.tool}, not {spec.TOOL_NAME}; set allow_foreign: true to repair "
                "it anyway")
    if set_info.claimed():
        # The deploying run rewrites the hints itself when it ends, and our write would make it
        # lose its claim (its next heartbeat meets a stale resourceVersion) and stop before pruning.
        return (f"a run of applyset_apply ({set_info.claim.get('run')}) is changing the set right now; run "
                "applyset_verify again when it has finished")
    return None


def _repair(client: KubeClient, report: VerifyReport, *, allow_foreign: bool, dry_run: bool) -> None:
    for planned in report.fixes:
        set_info = planned.set_info
        planned.refused = _refusal(set_info, allow_foreign)
        if planned.refused:
            report.warnings.append(f"{set_info.display}: hints not repaired: {planned.refused}")
            continue
        apply_fix(client, planned, dry_run=dry_run)
        if planned.applied:
            for problem in report.problems:
                if problem.applyset_id == set_info.expected_id and problem.code in HINT_CODES:
                    problem.fixed = True
