"""Verify ApplySets against the specification and the live cluster, and repair their hints.

``verify`` is the run of applyset_verify: it finds the sets (one, or every set in scope, and
then orphans too), scans their members (``fsck_scan``), checks each set (``fsck_checks``),
plans the repair of its hints (``fsck_repair``) and, when asked, writes it, refusing another
tool's set (unless ``allow_foreign``) and a set a deploy is changing right now. The names of
those three files are importable from here too, as they always were.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import spec
from .fsck_checks import (
    ERROR, FOREIGN_CONTROLLER, HINT_CODES, HINT_MISSING, HINT_NOT_CANONICAL, ID_MISMATCH, ID_MISSING,
    INCOMPLETE_SCAN, LEGACY_ANNOTATION, LEGACY_HINT, ORPHAN, PARENT_MISSING, SEVERITY_RANK, STALE_GROUP_KIND,
    STALE_NAMESPACE, TOOLING_MISSING, UNLISTABLE_GROUP_KIND, UNRECORDED_GROUP_KIND, UNRECORDED_NAMESPACE,
    UNSERVED_GROUP_KIND, WARNING, MemberKinds, Problem, check_hint_annotations, check_identity, check_members,
    check_orphans, check_set, classify_members, incomplete_scan_problem, kinds_that_may_hold, member_names,
    member_refs,
)
from .fsck_repair import HintFix, apply_fix, field_manager_for, fix_body, plan_fix
from .fsck_scan import Scan, listable_resources, scan
from .inventory import find_sets, get_set
from .kube import Discovery, KubeClient
from .parent_model import LiveParent
from .spec import ObjectId

# The names other modules import from here; all but VerifyReport and verify are defined beside this one.
__all__ = [
    "ERROR", "FOREIGN_CONTROLLER", "HINT_CODES", "HINT_MISSING", "HINT_NOT_CANONICAL", "ID_MISMATCH", "ID_MISSING",
    "INCOMPLETE_SCAN", "LEGACY_ANNOTATION", "LEGACY_HINT", "ORPHAN", "PARENT_MISSING", "SEVERITY_RANK",
    "STALE_GROUP_KIND", "STALE_NAMESPACE", "TOOLING_MISSING", "UNLISTABLE_GROUP_KIND", "UNRECORDED_GROUP_KIND",
    "UNRECORDED_NAMESPACE", "UNSERVED_GROUP_KIND", "WARNING", "HintFix", "MemberKinds", "Problem", "Scan",
    "VerifyReport", "apply_fix", "check_hint_annotations", "check_identity", "check_members", "check_orphans",
    "check_set", "classify_members", "field_manager_for", "fix_body", "incomplete_scan_problem",
    "kinds_that_may_hold", "listable_resources", "plan_fix", "scan", "verify",
]


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
            report.derived[set_info.expected_id] = member_refs(derived)
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
        code=PARENT_MISSING, severity=ERROR, applyset_id=applyset_id, objects=member_refs(found.members),
        parent={"apiVersion": res.api_version, "kind": res.kind, "namespace": parent_namespace or None,
                "name": name},
        message=f"{ObjectId.of(res, parent_namespace, name)} does not exist"
                + (f"; {len(found.members)} object(s) still carry its id: {member_names(found.members)}"
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
