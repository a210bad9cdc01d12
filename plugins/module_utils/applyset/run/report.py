"""What a run did: one ``ObjectResult`` per object, the ``Report`` of the run, and the
``Recorder`` through which the coordinating loop (never a worker thread) writes it.

Steps that run in worker threads return a ``MemberOutcome`` (the object's result, its diff
changes and its warnings); the coordinator records outcomes in plan order, so the objects,
diffs and warnings of a run come out in the same order on every run, whatever order the
requests finished in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

try:
    import yaml
except ImportError:
    yaml = None  # a requirement: without PyYAML the modules stop first, with manifests.YAML_IMPORT_ERROR

from ..object_meta import KubeObject, metadata_of
from .. import spec
from ..errors import ApplySetError

if TYPE_CHECKING:  # named for the annotations only: importing the report loads no more than before
    from ..inputs.redact import SecretDigester
    from ..kube.discovery import Resource
    from ..rules.plan import DesiredObject

# Metadata the server owns; left out of diffs and of "did it change" comparisons.
SERVER_METADATA = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink")


@dataclass
class ObjectResult:
    """What a run did to one object: one entry of the module result's ``objects``.

    ``action`` is one of created, configured, replaced, unchanged, pruned, kept, skipped,
    failed, deleted or disbanded; ``reason`` says why when it is not obvious, ``uid`` is the
    object's UID when known and ``error`` the ``ApplySetError.to_dict()`` of a failure.
    """

    api_version: str
    kind: str
    namespace: str | None
    name: str
    action: str  # created, configured, replaced, unchanged, pruned, kept, skipped, failed, deleted, disbanded
    reason: str | None = None
    uid: str | None = None
    error: dict[str, Any] | None = None  # ApplySetError.to_dict(): the error as module result data
    drift: str | None = None  # drift.KINDS: why a member differs from what was last applied
    changed_by: list | None = None  # drift.taken_fields: who changed it on the cluster
    drift_left_to_others: bool | None = None  # drift.Drift: every change is in fields ignore_fields leaves
    ignored_fields: list | None = None  # rules/field_policy.py: what each ignore_fields pointer did
    readiness_rule: str | None = None  # wait/readiness.rule_for: the rule a wait judges it by (wait or check mode)

    @property
    def ref(self) -> str:
        """``Kind namespace/name`` (``Kind name`` when cluster-scoped), as messages name objects."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    @property
    def id(self) -> spec.ObjectId:
        """The object's identity (group from ``api_version``, kind, namespace, name)."""
        return spec.ObjectId(self.api_version.rpartition("/")[0], self.kind, self.namespace or "", self.name)

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain data for the module result; empty reason, uid, error, drift and
        changed_by are left out."""
        data = {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace,
                "name": self.name, "action": self.action}
        data.update((key, getattr(self, key)) for key in _OPTIONAL_KEYS if getattr(self, key))
        return data


# ObjectResult's keys that the module result shows only when set, in this order.
_OPTIONAL_KEYS = ("reason", "uid", "error", "drift", "changed_by", "drift_left_to_others", "ignored_fields",
                  "readiness_rule")

# Why a member of the plan was not tried (action ``skipped``): a run that stops lists every member.
NOT_TRIED_AFTER_FAILURE = "not tried: an earlier member failed, and what comes later may depend on it"
NOT_TRIED_STOPPED = "not tried: the run stopped before it (see the error)"
NOT_TRIED_HOOK = "not tried: a pre-apply hook failed"


class HookEntry(TypedDict, total=False):
    """One hook run or previewed, as the result's ``hooks`` shows it (steps/hook_run.py fills it:
    what the hook is first, then what it did)."""

    phase: str
    apiVersion: str | None
    kind: str
    namespace: str | None
    name: str
    weight: int
    delete_policy: list[str]
    deleted: bool  # by its delete policy (not in check mode)
    replaced: bool  # an object left by an earlier run deleted first (before-hook-creation)
    uid: str | None
    action: str  # completed, failed, would run, would run on failure
    reason: str | None


CHANGING_ACTIONS = frozenset({"created", "configured", "replaced", "pruned", "kept", "deleted", "disbanded"})
HOOK_CHANGING_ACTIONS = frozenset({"completed", "failed", "would run"})  # a hook object created (or would be)


@dataclass
class Report:
    """What a run did: returned by a run that succeeded, attached as ``err.report`` to the
    ``ApplySetError`` of one that failed (what it did until it stopped).

    ``applyset`` describes the parent and its hint, ``objects`` holds one ``ObjectResult`` per
    object in the order they were handled, ``diff`` the before/after documents (``Options.diff``),
    ``warnings`` what the user should know, ``parent_changed`` whether the parent was (or, in
    check mode, would be) written, ``requests`` how many requests the client sent in all and how
    many of them were writes (POST, PUT, PATCH, DELETE; dry runs included).
    """

    applyset: dict[str, Any] = field(default_factory=dict)  # the result's applyset: the parent, hint, adopted ...
    objects: list[ObjectResult] = field(default_factory=list)
    diff: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    parent_changed: bool = False
    dry_run: bool = False
    requests: dict[str, int] = field(default_factory=dict)  # {"sent": n, "writes": m}
    hooks: list[HookEntry] = field(default_factory=list)  # one per hook run or previewed (steps/hook_run.py), in order
    order: list = field(default_factory=list)  # ordering.describe: waves and gates, when the set has them
    plan_id: str | None = None  # steps/approval.py: the id of the plan, once the run made it
    plan: list[dict[str, Any]] = field(default_factory=list)  # rules/plan_id.py: what the id digests
    # on_failure: rollback: the rollback's own plan id (plan_id stays the failed release's, the approved one)
    rollback_plan_id: str | None = None

    @property
    def changed(self) -> bool:
        """Whether the run changed (or, in check mode, would change) anything on the cluster."""
        return (bool(self.parent_changed) or any(o.action in CHANGING_ACTIONS for o in self.objects)
                or any(h.get("action") in HOOK_CHANGING_ACTIONS for h in self.hooks))

    @property
    def failed_objects(self) -> list[ObjectResult]:
        """The objects whose action is ``failed``."""
        return [o for o in self.objects if o.action == "failed"]

    def summary(self) -> dict[str, int]:
        """How many objects had each action; the common ones are always present, maybe 0."""
        counts = {a: 0 for a in ("created", "configured", "unchanged", "pruned", "kept", "skipped", "failed")}
        for o in self.objects:
            counts[o.action] = counts.get(o.action, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        """The report as the module result's keys: changed, applyset, summary, objects, diff, requests,
        order when the set has an order of its own (depends-on, sync waves), and plan_id, plan and
        check_mode once the run made its plan."""
        data = {
            "changed": self.changed,
            "applyset": self.applyset,
            "summary": self.summary(),
            "objects": [o.to_dict() for o in self.objects],
            "diff": self.diff,
            "requests": dict(self.requests),
            **({"hooks": [dict(h) for h in self.hooks]} if self.hooks else {}),
        }
        if self.order:
            data["order"] = list(self.order)
        if self.plan_id is not None:
            data["plan_id"], data["plan"] = self.plan_id, [dict(e) for e in self.plan]
            # Whose plan: a preview's is what an approver approves (a role cannot tell check mode set
            # by a play's check_mode keyword: ansible_check_mode follows --check only).
            data["check_mode"] = self.dry_run
        if self.rollback_plan_id is not None:
            data["rollback_plan_id"] = self.rollback_plan_id
        return data


def normalize(obj: KubeObject | None) -> KubeObject | None:
    """The object as a user wrote it: no server bookkeeping, no status."""
    if obj is None:
        return None
    out = {k: v for k, v in obj.items() if k != "status"}
    out["metadata"] = {k: v for k, v in metadata_of(obj).items() if k not in SERVER_METADATA}
    return out


def for_diff(obj: KubeObject | None) -> KubeObject | None:
    """The object as a diff shows it (``normalize``d): without the annotations the collection keeps
    for itself (``spec.BOOKKEEPING_ANNOTATIONS``), which change on every apply the user makes."""
    out = normalize(obj)
    if out is None or not isinstance(out["metadata"].get("annotations"), dict):
        return out
    kept = {k: v for k, v in out["metadata"]["annotations"].items() if k not in spec.BOOKKEEPING_ANNOTATIONS}
    out["metadata"] = {k: v for k, v in out["metadata"].items() if k != "annotations"}
    if kept:
        out["metadata"]["annotations"] = kept
    return out


def _dump(obj: KubeObject | None) -> str:
    return "" if obj is None else yaml.safe_dump(obj, default_flow_style=False, sort_keys=True)


def result_for(member: DesiredObject, action: str, reason: str | None = None, uid: str | None = None,
               error: ApplySetError | None = None) -> ObjectResult:
    """The result of a desired object (``rules.plan.DesiredObject``)."""
    return ObjectResult(api_version=member.resource.api_version, kind=member.resource.kind,
                        namespace=member.namespace, name=member.name, action=action, reason=reason, uid=uid,
                        error=error.to_dict() if error else None)


def live_result(res: Resource, meta: Mapping[str, Any], action: str, reason: str | None = None,
                error: ApplySetError | None = None) -> ObjectResult:
    """The result of a live object listed under ``res`` (a ``kube.discovery.Resource``) with metadata ``meta`` (its ObjectMeta)."""
    return ObjectResult(api_version=res.api_version, kind=res.kind, namespace=meta.get("namespace"),
                        name=meta["name"], action=action, reason=reason, uid=meta.get("uid"),
                        error=error.to_dict() if error else None)


@dataclass(frozen=True)
class Change:
    """One diff entry before it is rendered: an object's reference, and the object before and
    after (None for absent)."""

    ref: str
    before: KubeObject | None
    after: KubeObject | None


@dataclass
class MemberOutcome:
    """What one step did to one object, as a worker returns it: the result, the diff changes
    and the warnings (already prefixed with the object's reference)."""

    result: ObjectResult
    changes: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    removes: list[str] = field(default_factory=list)  # check mode of a take-over: the fields a real run removes


# A member's warning that a take-over of a Helm release made (or would make) Helm's fields ours
# (apply.member_apply): one per object, summed up into one per release (argo-cd has 54 objects).
_TAKE_OVER = re.compile(r"^(?P<ref>[^:]+): (?P<verb>took over|a real run first takes over) "
                        r"(?P<what>.*\(Helm release [^)]*\))$")


class Recorder:
    """Writes a run's ``Report``: the only writer, called from the coordinating loop.

    :param report: the report of the current attempt.
    :param masker: ``inputs.redact.SecretDigester`` of the run (Secret values in diffs become digests).
    :param diff: whether the run renders diffs (``Options.diff``).
    """

    def __init__(self, report: Report, masker: SecretDigester, diff: bool) -> None:
        self.report = report
        self._masker = masker
        self._diff = diff
        self._taken_over: dict[tuple[str, str], tuple[int, list[str]]] = {}  # (verb, what) -> (index of its warning, refs): _TAKE_OVER's summary

    def outcome(self, outcome: MemberOutcome) -> ObjectResult:
        """Record one object's outcome: its warnings (a take-over's summed up per release), its diff
        changes, then its result."""
        for warning in outcome.warnings:
            self._member_warning(warning)
        for change in outcome.changes:
            self.change(change)
        taken = self.report.applyset.get("helm_take_over")
        if outcome.removes and isinstance(taken, dict):
            taken.setdefault("removes", {})[outcome.result.ref] = list(outcome.removes)
        self.report.objects.append(outcome.result)
        return outcome.result

    def result(self, result: ObjectResult) -> ObjectResult:
        """Record one object's result."""
        self.report.objects.append(result)
        return result

    def untried(self, members: Iterable[DesiredObject], reason: str) -> None:
        """Record ``members`` (``rules.plan.DesiredObject``, in plan order) that have no result yet as
        ``skipped`` with ``reason``: a run that stops lists every member of its plan, so the
        summary's counts add up to the plan's size."""
        recorded = {o.id for o in self.report.objects}
        self.report.objects += [result_for(m, "skipped", reason=reason) for m in members if m.key not in recorded]

    def hook(self, entry: HookEntry) -> None:
        """Record what a hook did (or would do), in the order the hooks run (steps/hook_run.py)."""
        self.report.hooks.append(entry)

    def _member_warning(self, warning: str) -> None:
        found = _TAKE_OVER.match(warning)
        if found is None:
            self.report.warnings.append(warning)
            return
        index, refs = self._taken_over.setdefault((found["verb"], found["what"]), (len(self.report.warnings), []))
        refs.append(found["ref"])
        summary = f"{found['verb']} {found['what']} on {len(refs)} object{'s' if len(refs) > 1 else ''}: {', '.join(refs)}"
        if index == len(self.report.warnings):
            self.report.warnings.append(summary)
        else:
            self.report.warnings[index] = summary

    def warn(self, *warnings: str) -> None:
        """Record warnings, in the order given."""
        self.report.warnings.extend(warnings)

    def change(self, change: Change) -> None:
        """Record one diff entry (only when the run renders diffs)."""
        if not self._diff:
            return
        self.report.diff.append({
            "before_header": change.ref if change.before is not None else "(absent)",
            "after_header": change.ref if change.after is not None else "(absent)",
            "before": _dump(self._masker.mask(for_diff(change.before))),
            "after": _dump(self._masker.mask(for_diff(change.after))),
        })

    def failures(self, limit: int = 10) -> str:
        """The failed objects as lines ``- Kind ns/name: reason``, at most ``limit`` of them."""
        failed = self.report.failed_objects
        lines = [f"- {o.ref}: {o.reason}" for o in failed[:limit]]
        if len(failed) > limit:
            lines.append(f"- ... and {len(failed) - limit} more (see objects)")
        return "\n".join(lines)
