"""Verify ApplySets against the specification and the live cluster, and repair their hints.

``verify`` is the run of applyset_verify: it finds the sets (one, or every set in scope, and
then orphans too), scans their members (``scan``), checks each set (``checks``),
plans the repair of its hints (``repair``) and, when asked, writes it, refusing another
tool's set (unless ``allow_foreign``) and a set a deploy is changing right now. The names of
those three files are importable from here too, as they always were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import history_check as fsck_history
from .. import spec
from ..history import revisions as history
from .checks import (
    ERROR, HINT_CODES, PARENT_MISSING, WARNING, Problem, check_orphans, check_set, classify_members,
    incomplete_scan_problem, kinds_that_may_hold, member_names, member_refs, reduced_coverage_message,
    reduced_coverage_problem,
)
from .repair import HintFix, apply_fix, plan_fix
from .scan import Scan, scan
from .inventory import Unlisted, find_sets, get_set
from ..errors import ApplySetError
from ..kube.discovery import Discovery, Resource
from ..object_meta import KubeObject
from ..kube.api import KubeApi
from ..parent.model import LiveParent, ObjectReference
from ..spec import ObjectId


@dataclass
class VerifyReport:
    """What applyset_verify returns: the sets, the problems, the fixes, the LISTs that failed."""

    sets: list[LiveParent] = field(default_factory=list)
    member_counts: dict[str, int] = field(default_factory=dict)  # expected id -> members found, derived ones apart
    # expected id -> refs of objects controllers made for members
    derived: dict[str, list[ObjectReference]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    fixes: list[HintFix] = field(default_factory=list)
    unlisted: list[Unlisted] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False
    reduced: list[Unlisted] = field(default_factory=list)  # what the credentials may not list across all namespaces
    namespaces: tuple[str, ...] = ()  # where kinds refused across all namespaces were listed instead
    require_complete: bool = False
    # (set, history Secrets to delete, their resource)
    history_fixes: list[tuple[LiveParent, list[KubeObject], Resource]] = field(default_factory=list)
    history_repaired: bool = False  # history Secrets were deleted (in check mode: would be)

    @property
    def complete(self) -> bool:
        """Every kind could be listed, across all namespaces."""
        return not self.unlisted and not self.reduced

    @property
    def scan_ok(self) -> bool:
        """The scan saw what the check needs: every LIST of the sets' recorded scope, and everything
        else too when a complete scan is required."""
        return not self.unlisted and not (self.require_complete and self.reduced)

    @property
    def remaining_errors(self) -> list[Problem]:
        """Problems of severity error that this run did not repair."""
        return [p for p in self.problems if p.severity == ERROR and not p.fixed]

    @property
    def ok(self) -> bool:
        """The scan saw what the check needs and no error remains."""
        return self.scan_ok and not self.remaining_errors

    @property
    def changed(self) -> bool:
        """Some fix was written (in check mode: would be)."""
        return any(f.applied for f in self.fixes) or self.history_repaired

    @property
    def fix_errors(self) -> list[ApplySetError]:
        """The errors of fixes that failed."""
        return [f.error for f in self.fixes if f.error is not None]

    def summary(self) -> dict[str, int]:
        """Counts: sets, errors, warnings, fixed, remaining errors."""
        return {
            "applysets": len(self.sets),
            "errors": sum(p.severity == ERROR for p in self.problems),
            "warnings": sum(p.severity == WARNING for p in self.problems),
            "fixed": sum(p.fixed for p in self.problems),
            "remaining_errors": len(self.remaining_errors),
        }

    def to_dict(self) -> dict[str, Any]:
        """The result of applyset_verify, as the module returns it."""
        problems_by_set: dict[str | None, list[Problem]] = {}
        for problem in self.problems:
            problems_by_set.setdefault(problem.applyset_id, []).append(problem)
        applysets = []
        for set_info in self.sets:
            own = problems_by_set.get(set_info.expected_id, [])
            entry = set_info.to_dict()
            entry["member_count"] = self.member_counts.get(set_info.expected_id, 0)
            entry["derived"] = self.derived.get(set_info.expected_id, [])
            entry["ok"] = self.scan_ok and not any(p.severity == ERROR and not p.fixed for p in own)
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
            "reduced_coverage": self.coverage(),
        }

    def coverage(self) -> dict[str, Any]:
        """What the credentials could not see: ``kinds`` refused across all namespaces (namespace
        null) or in one of the ``namespaces`` namespaced ones were listed in instead, with the reason."""
        kinds = sorted({(str(u.group_kind), u.namespace or ""): u.reason for u in self.reduced}.items())
        return {"kinds": [{"group_kind": gk, "namespace": ns or None, "reason": reason} for (gk, ns), reason in kinds],
                "namespaces": sorted(self.namespaces) if self.reduced else []}


def verify(client: KubeApi, *, parent_spec: object = None, namespace: str | None = None, fix: bool = False,
           allow_foreign: bool = False, dry_run: bool = False, require_complete: bool = False) -> VerifyReport:
    """Check one set (``parent_spec``) or every set in scope, and repair hints when asked.

    Credentials that may not list a kind across all namespaces (a tenant's) list it in the
    namespaces the sets record instead: what they could not see is reduced coverage, a warning,
    or an error with ``require_complete``. Without ``parent_spec`` and ``namespace`` the whole
    cluster is asked for, and any LIST that fails makes the check incomplete.

    :param client: the API client.
    :param parent_spec: the one set to check, as in applyset_apply. Without it, the sets
        checked are those whose parent is in ``namespace``, and orphans are looked for too.
    :param namespace: the namespace of the sets to check (None: all), or the default
        namespace of ``parent_spec``.
    :param fix: repair the hints that do not match the members found.
    :param allow_foreign: repair sets of other tools too.
    :param dry_run: send the repair as a server-side dry run: validated by the server and
        reported, nothing changes.
    :param require_complete: reduced coverage is an error, not a warning.
    :returns: the ``VerifyReport``, problems sorted.
    :raises InputError: for a parent reference that cannot name a parent.
    :raises ApplySetError: when the one parent asked for cannot be read.
    """
    discovery = client.discover()
    report = VerifyReport(dry_run=dry_run, require_complete=require_complete)
    if parent_spec is not None:
        found = _verify_one(client, discovery, parent_spec, namespace, report)
    else:
        found = _verify_all(client, discovery, namespace, report)
    if found is not None:
        _check_sets(client, discovery, found, report)
    report.unlisted = list(dict.fromkeys(report.unlisted))  # the same LIST can fail for two reasons to look
    if report.unlisted:
        report.problems.append(incomplete_scan_problem(report.unlisted))
    if report.reduced:
        report.problems.append(reduced_coverage_problem(report.reduced, report.namespaces, require_complete))
        report.warnings.append(reduced_coverage_message(report.reduced, report.namespaces))
    if fix:
        _repair(client, report, allow_foreign=allow_foreign, dry_run=dry_run)
    report.problems.sort(key=lambda p: p.sort_key)
    return report


def _check_sets(client: KubeApi, discovery: Discovery, found: Scan, report: VerifyReport) -> None:
    report.unlisted += found.unlisted
    report.warnings += found.warnings
    _sort_refusals(found.reduced, discovery, report)
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
        problems, doomed = fsck_history.check(client, discovery, set_info)
        report.problems += problems
        report.history_fixes.append((set_info, doomed, history.secrets_resource(discovery)))
        planned = plan_fix(set_info, members, found, discovery, may_hold)
        if planned is not None:
            report.fixes.append(planned)


def _sort_refusals(refused: list[Unlisted], discovery: Discovery, report: VerifyReport) -> None:
    """A refusal inside a checked set's recorded scope (a recorded cluster-scoped kind, a recorded
    namespaced kind in a recorded namespace) hides the set's own members: the check is incomplete.
    Any other refusal only reduces the coverage."""
    for unlisted in refused:
        res = discovery.for_group_kind(unlisted.group_kind)
        own = res is not None and any(
            unlisted.group_kind in s.group_kinds and (not res.namespaced or unlisted.namespace in s.namespaces)
            for s in report.sets)
        (report.unlisted if own else report.reduced).append(unlisted)


def _namespaces_of(sets: list[LiveParent], *more: str | None) -> tuple[str, ...]:
    return tuple(sorted({ns for s in sets for ns in s.namespaces} | {ns for ns in more if ns}))


def _verify_one(client: KubeApi, discovery: Discovery, parent_spec: object, namespace: str | None,
                report: VerifyReport) -> Scan | None:
    set_info, res, name, parent_namespace = get_set(client, discovery, parent_spec, namespace)
    if set_info is not None:
        report.sets.append(set_info)
        report.namespaces = _namespaces_of(report.sets)
        return scan(client, discovery, set_info.expected_id, report.namespaces)
    applyset_id = spec.compute_id(name, parent_namespace, res.kind, res.group)
    report.namespaces = _namespaces_of([], parent_namespace)
    found = scan(client, discovery, applyset_id, report.namespaces)
    report.unlisted += found.unlisted
    report.reduced += found.reduced
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


def _verify_all(client: KubeApi, discovery: Discovery, namespace: str | None, report: VerifyReport) -> Scan:
    listing = find_sets(client, discovery, namespace)
    # Orphans need every parent's id, wherever the parent lives.
    everywhere = find_sets(client, discovery, None) if namespace else listing
    report.sets = listing.sets
    report.warnings += listing.warnings
    failed = listing.unlisted + (everywhere.unlisted if namespace else [])
    if namespace:
        # A tenant's credentials: parents looked for in the namespace asked for; what they may not
        # list elsewhere (parent types, other namespaces) only reduces the coverage.
        report.reduced += [u for u in failed if u.refused and u.namespace is None]
        failed = [u for u in failed if not (u.refused and u.namespace is None)]
        report.namespaces = _namespaces_of(report.sets, namespace)
    report.unlisted += failed
    found = scan(client, discovery, namespaces=report.namespaces if namespace else None)
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
        return (f"a run of applyset_apply ({(set_info.claim or {}).get('run')}) is changing the set right now; run "
                "applyset_verify again when it has finished")
    return None


def _repair(client: KubeApi, report: VerifyReport, *, allow_foreign: bool, dry_run: bool) -> None:
    for set_info, doomed, secrets in report.history_fixes:
        fsck_history.repair(client, secrets, set_info, doomed, report.problems, dry_run)
        report.history_repaired = report.history_repaired or bool(doomed)
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
