"""Execute an ApplySet run crash-safely: parent superset, applies, prune, parent final.

Check mode takes the same path with every apply sent as a server-side dry run
and no write at all (not even the parent), so a preview shows exactly what a
real run would do, prune list and guards included.

Order of a real run (each step only starts when the previous one succeeded):
  1. discovery, parent GET and validation, plan (all input errors surface here);
  2. LISTs of desired kinds (whole, as full objects with reapply: changed) and of the
     recorded scope (metadata only, by label), which give the live state, overlapping
     sets and the prune candidates; the guard runs; members whose apply would change
     nothing are marked to be skipped (nochange.py);
  3. parent written with the union of recorded and new group-kinds/namespaces;
  4. members applied phase by phase (plan.phase_of: CRDs, then Namespaces, then
     configuration, then workloads and the rest, then webhooks; custom resources
     after their CRD is Established), all members of a phase at once;
  5. prune, in reverse rank order, each DELETE with a UID precondition;
  6. parent rewritten to exactly this run's group-kinds and namespaces.
A failure in 4 or 5 stops before 6, so the parent still covers everything that
may exist and the next run prunes what it must.

A run whose only writes would be in-place updates of members (often none at all:
every member skipped, nothing to prune, the parent already as a release would leave
it) goes without the claim and the parent writes: each update is conditional on the
listed object's uid and resourceVersion, and the run reads the parent once more at the
end. An unchanged resourceVersion means no other run wrote the set meanwhile; a
changed one, or a refused update, makes the run start over from 1 with the claim
(see _finish_without_claim and docs/safety.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

try:
    import yaml
except ImportError:
    yaml = None  # a requirement: without PyYAML the modules stop first, with manifests.YAML_IMPORT_ERROR

from . import csa, health, nochange, redact
from . import legacy as legacies
from . import parent as parents
from . import plan as plans
from . import prune as prunes
from . import spec
from .claim import Claim, new_run_id, wait_until_free
from .errors import (ApiError, ApplySetError, ConflictError, GuardError, InputError, InputErrors,
                     NamespaceMissingError, immutable_refusal, missing_namespace)
from .kube import Discovery, KubeClient, Resource
from .manifests import Manifest

DEFAULT_FIELD_MANAGER = "applyset.kubernetes"
# Metadata the server owns; left out of diffs and of "did it change" comparisons.
# How the server names the part-of label in an apply conflict's causes.
_PART_OF_FIELD = f".metadata.labels.{spec.LABEL_PART_OF}"
_SERVER_METADATA = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink")


REAPPLY_CHOICES = ("changed", "always")
# Tries of an update without the claim whose object changed since it was listed (read again
# in between); then the run starts over with the claim.
_IN_PLACE_ATTEMPTS = 3


@dataclass
class Options:
    """How a run behaves; the modules build it from their options, other callers directly.

    Call ``validate()`` (the engine does) before any request. The fields follow the module's
    options: ``field_manager``, ``force_conflicts`` and ``field_validation`` go to every apply;
    ``prune``, ``propagation_policy`` and the guard settings (``allow_empty``,
    ``max_prune_percent``, ``allow_prune_kinds``) rule the prune; ``dry_run`` is check mode and
    ``diff`` asks for before/after documents; the timeouts are in seconds.
    """

    field_manager: str = DEFAULT_FIELD_MANAGER
    force_conflicts: bool = False
    field_validation: str = "Strict"
    prune: bool = True
    dry_run: bool = False
    diff: bool = False
    propagation_policy: str = "Background"
    takeover: bool = False  # manage a set whose parent another tool made
    adopt: bool = False  # take live objects that belong to another set
    allow_empty: bool = False
    max_prune_percent: int = 50
    allow_prune_kinds: frozenset = frozenset()  # protected kinds the user allows to prune, by Kind or Kind.group
    crd_timeout: float = 60.0
    claim_ttl: float = 60.0  # how long a crashed run's claim on the set blocks others
    claim_wait: float = 120.0  # how long to wait for another run's claim to go away
    wait: bool = False  # after a successful run: applied objects ready, pruned ones gone
    wait_timeout: float = 300.0
    wait_rules: dict = field(default_factory=dict)  # health.is_ready keywords
    adopt_legacy: legacies.Options | None = None  # take over a `kubectl apply --prune -l` set
    create_namespace: bool = False  # create the parent's namespace when missing (not a member)
    recreate_on_immutable: frozenset = frozenset()  # kinds deleted and created again when a change is immutable
    recreate_timeout: float = 120.0  # how long a recreated object may take to be gone
    # "changed": members whose live object already is what the apply would make are not sent
    # (nochange.py), and a run with nothing to change writes nothing, the parent included;
    # "always": every member is applied on every run.
    reapply: str = "changed"

    @property
    def guard_limits(self) -> prunes.GuardLimits:
        """The blast-radius guard's settings among these options."""
        return prunes.GuardLimits(allow_empty=self.allow_empty, max_prune_percent=self.max_prune_percent,
                                  allow_prune_kinds=frozenset(self.allow_prune_kinds))

    def validate(self) -> None:
        """Check every option before the first request, whoever builds them (the modules, the
        benchmark, a test driver): a bad one must never surface after writes.

        Raises:
            InputError: naming each bad option (wait rule overrides included).
        """
        problems = []
        if self.field_validation not in ("Strict", "Warn", "Ignore"):
            problems.append(("field_validation", "must be Strict, Warn or Ignore"))
        if self.propagation_policy not in ("Background", "Foreground", "Orphan"):
            problems.append(("propagation_policy", "must be Background, Foreground or Orphan"))
        if self.reapply not in REAPPLY_CHOICES:
            problems.append(("reapply", "must be changed or always"))
        if not 0 <= self.max_prune_percent <= 100:
            problems.append(("guard.max_prune_percent", "must be between 0 and 100"))
        for name in ("crd_timeout", "claim_ttl", "claim_wait", "wait_timeout", "recreate_timeout"):
            if getattr(self, name) < 0:
                problems.append((name, "must be 0 seconds or more"))
        unknown = set(self.wait_rules or {}) - health.RULE_OPTIONS
        if unknown:
            problems.append(("wait_rules", f"unknown rule options {', '.join(sorted(unknown))}"))
        if problems:
            raise InputError("; ".join(f"{name} {why}" for name, why in problems), obj="options",
                             fix="correct the options named; nothing was changed")
        health.check_overrides((self.wait_rules or {}).get("overrides"))


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
    error: dict | None = None

    @property
    def ref(self) -> str:
        """``Kind namespace/name`` (``Kind name`` when cluster-scoped), as messages name objects."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    @property
    def id(self) -> spec.ObjectId:
        """The object's identity (group from ``api_version``, kind, namespace, name)."""
        return spec.ObjectId(self.api_version.rpartition("/")[0], self.kind, self.namespace or "", self.name)

    def to_dict(self) -> dict:
        """The entry as plain data for the module result; empty reason, uid and error are left out."""
        data = {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace,
                "name": self.name, "action": self.action}
        if self.reason:
            data["reason"] = self.reason
        if self.uid:
            data["uid"] = self.uid
        if self.error:
            data["error"] = self.error
        return data


CHANGING_ACTIONS = frozenset({"created", "configured", "replaced", "pruned", "kept", "deleted", "disbanded"})


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

    applyset: dict = field(default_factory=dict)
    objects: list[ObjectResult] = field(default_factory=list)
    diff: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    parent_changed: bool = False
    dry_run: bool = False
    requests: dict = field(default_factory=dict)  # {"sent": n, "writes": m}

    @property
    def changed(self) -> bool:
        """Whether the run changed (or, in check mode, would change) anything on the cluster."""
        return bool(self.parent_changed) or any(o.action in CHANGING_ACTIONS for o in self.objects)

    @property
    def failed_objects(self) -> list[ObjectResult]:
        """The objects whose action is ``failed``."""
        return [o for o in self.objects if o.action == "failed"]

    def summary(self) -> dict:
        """How many objects had each action; the common ones are always present, maybe 0."""
        counts = {a: 0 for a in ("created", "configured", "unchanged", "pruned", "kept", "skipped", "failed")}
        for o in self.objects:
            counts[o.action] = counts.get(o.action, 0) + 1
        return counts

    def to_dict(self) -> dict:
        """The report as the module result's keys: changed, applyset, summary, objects, diff, requests."""
        return {
            "changed": self.changed,
            "applyset": self.applyset,
            "summary": self.summary(),
            "objects": [o.to_dict() for o in self.objects],
            "diff": self.diff,
            "requests": dict(self.requests),
        }


# ----- helpers ------------------------------------------------------------------------------


def _normalize(obj: dict | None) -> dict | None:
    """The object as a user wrote it: no server bookkeeping, no status."""
    if obj is None:
        return None
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_METADATA}
    out["metadata"] = meta
    return out


def _dump(obj: dict | None) -> str:
    return "" if obj is None else yaml.safe_dump(obj, default_flow_style=False, sort_keys=True)


def _result_for(member: plans.DesiredObject, action: str, reason: str | None = None, uid: str | None = None,
                error: ApplySetError | None = None) -> ObjectResult:
    return ObjectResult(api_version=member.resource.api_version, kind=member.resource.kind,
                        namespace=member.namespace, name=member.name, action=action, reason=reason, uid=uid,
                        error=error.to_dict() if error else None)


def _live_result(res: Resource, meta: dict, action: str, reason: str | None = None) -> ObjectResult:
    return ObjectResult(api_version=res.api_version, kind=res.kind, namespace=meta.get("namespace"),
                        name=meta["name"], action=action, reason=reason, uid=meta.get("uid"))


def _apply_entry(obj: dict, manager: str) -> dict | None:
    return next((e for e in (obj.get("metadata") or {}).get("managedFields") or []
                 if e.get("manager") == manager and e.get("operation") == "Apply" and not e.get("subresource")),
                None)


def _apply_changed_nothing(before: dict, after: dict, manager: str) -> bool:
    """Whether our apply left the object as it was listed (``before`` is metadata only).

    The same resourceVersion says so. A newer one alone does not say the opposite: a controller
    may have written the object's status (a Job's, say) between our LIST and our apply. So for
    an object with a status, a newer resourceVersion still counts as unchanged when its spec
    generation, labels, annotations and our manager's managedFields entry are all as listed:
    a status write touches none of them, and a change by our apply touches at least one.
    """
    meta_before, meta_after = before.get("metadata") or {}, after.get("metadata") or {}
    if meta_before.get("resourceVersion") == meta_after.get("resourceVersion"):
        return True
    if "status" not in after or meta_before.get("generation") is None:
        return False
    ours_before = _apply_entry(before, manager)
    return (ours_before is not None and ours_before == _apply_entry(after, manager)
            and meta_before.get("generation") == meta_after.get("generation")
            and (meta_before.get("labels") or {}) == (meta_after.get("labels") or {})
            and (meta_before.get("annotations") or {}) == (meta_after.get("annotations") or {}))


def _conflict_causes(err: ConflictError) -> list:
    causes = ((err.body or {}).get("details") or {}).get("causes") or []
    return [c for c in causes if isinstance(c, dict)]


def _only_part_of_conflicts(err: ConflictError) -> bool:
    fields = [c.get("field") for c in _conflict_causes(err)]
    return bool(fields) and all(f == _PART_OF_FIELD for f in fields)


def _conflict_message(err: ConflictError, member: plans.DesiredObject) -> str:
    lines = [f"{c.get('message', 'conflict')} at {c['field']}" if c.get("field") else c.get("message", "")
             for c in _conflict_causes(err)]
    detail = "; ".join(line for line in lines if line) or err.message
    return (f"conflicts with another field manager: {detail}; set force_conflicts: true to take these "
            "fields over, or remove them from the manifest")


@dataclass(frozen=True)
class _Hints:
    """The parent's hint during a run, as ``(group_kinds, namespaces)`` pairs, and whether each
    differs from what the parent records now."""

    superset: tuple
    final: tuple
    superset_changes: bool
    final_changes: bool


# ----- the run ------------------------------------------------------------------------------


class Engine:
    """One ApplySet run. Create it, then call one of ``apply()``, ``uninstall()`` or ``disband()``.

    The three return the ``Report`` of a run that succeeded and raise an ``ApplySetError`` on any
    failure, with what the run did until then as ``err.report``.
    """

    def __init__(self, client: KubeClient, parent_spec, namespace: str | None, options: Options):
        """Prepare a run; sends no request.

        Args:
            client: the connection (``kube.connect``).
            parent_spec: the parent option: ``[RESOURCE][.GROUP]/NAME``, a reference dict
                (``kind``, ``name``, ...) or a whole object to create (see ``parent.resolve``).
            namespace: the parent's namespace when the reference names none, and the default
                namespace of namespaced objects that name none; None for neither.
            options: how the run behaves; validated here.

        Raises:
            InputError: an option is invalid (``Options.validate``).
        """
        self.client = client
        self.parent_spec = parent_spec
        self.namespace = namespace
        options.validate()
        self.opts = options
        self._masker = redact.SecretDigester()
        self.run_id = new_run_id()
        # A run whose only writes are in-place updates may finish without the claim, once
        # (see _finish_without_claim).
        self._may_skip_claim = options.reapply == "changed" and not options.dry_run
        # What an attempt without the claim wrote before it had to start over: ObjectId ->
        # (result or None when unknown, object before, object after or None, warnings).
        self._carried: dict = {}
        self._start()

    def _start(self) -> None:
        """The state of a run before its first request; a run that starts over starts here."""
        self.report = Report(dry_run=self.opts.dry_run)
        self.discovery: Discovery | None = None
        self.parent: parents.Parent | None = None
        self._pre_applied: set = set()
        self._not_listed: set = set()  # recorded kinds whose members could not be listed
        self._candidates: list = []  # (resource, metadata) of listed set members not desired
        self._about_to_apply: set = set()  # UIDs of the live objects the desired set names
        self._adopted: list = []  # (resource, metadata) of legacy prune objects taken in, not desired
        self._adopted_desired = 0  # legacy prune objects taken in that the desired set names
        self.claim: Claim | None = None
        self._namespace_to_create: str | None = None  # create_namespace: missing, made before the parent
        self._unchanged: dict = {}  # ObjectId -> live UID of members whose apply is skipped (nochange.py)

    # -- the entry points: one error channel ------------------------------------------------
    def apply(self, manifests: list[Manifest]) -> Report:
        """Apply the desired set and prune what left it (unless ``Options.prune`` is off).

        Args:
            manifests: the desired objects (``manifests.load_*``, validated).

        Returns:
            The report of the run; also when it waited (``Options.wait``) for readiness.

        Raises:
            InputError: a problem with the input or the options, found before any write
                (``InputErrors`` for several, ``NamespaceMissingError`` for missing namespaces).
            ParentError: the parent cannot be used (another tool's, forged id, not permitted).
            GuardError: the blast-radius guard refused the prune; nothing was written.
            ApplySetError: objects of another set in the input, objects that failed (see
                ``err.report.objects``), a lost claim, CRDs not Established in time.
            WaitTimeout: the applied objects were not ready (or pruned ones not gone) in time.
            ApiError: a request failed in a way that stops the run (a LIST, the parent's write).
        """
        return self._run(self._apply, manifests)

    def uninstall(self) -> Report:
        """Delete every member (same safety rules as prune), then the parent.

        Returns:
            The report of the run; a set whose parent does not exist gives one with a warning.

        Raises:
            GuardError: the members include protected kinds that are not allowed.
            ApplySetError: some members could not be listed or deleted (the parent is kept).
            WaitTimeout: with ``Options.wait``, members not gone in time (the parent is gone).
            ParentError, ApiError: as for ``apply``.
        """
        return self._run(self._uninstall)

    def disband(self) -> Report:
        """Leave every member in place without our part-of label, then delete the parent.

        Returns:
            The report of the run; a set whose parent does not exist gives one with a warning.

        Raises:
            ApplySetError: some members could not be listed or kept the label (the parent is kept).
            ParentError, ApiError: as for ``apply``.
        """
        return self._run(self._disband)

    def _run(self, step, *args) -> Report:
        """Run ``step``; the one place where a failed run gets its partial report attached.

        Any failure, including objects that failed without an error of the run (a check-mode
        namespace creation, say), leaves as an ``ApplySetError`` with ``err.report``.
        """
        try:
            step(*args)
        except ApplySetError as err:
            err.report = self.report
            raise
        finally:
            # The client's own counters (a stand-in client may keep none).
            self.report.requests = {"sent": getattr(self.client, "requests_sent", 0),
                                    "writes": getattr(self.client, "writes_sent", 0)}
        if self.report.failed_objects:
            err = ApplySetError("some objects failed; see objects", fix="fix them and run again")
            err.report = self.report
            raise err
        return self.report

    # -- shared steps ----------------------------------------------------------------------
    def _load_parent(self) -> parents.Parent:
        self.discovery = self.client.discover()
        res, name, ns, definition = parents.resolve(self.discovery, self.parent_spec, self.namespace)

        def read():
            return parents.read(self.client, self.discovery, res, name, ns, takeover=self.opts.takeover,
                                definition=definition)

        parent, warnings = read()
        if parent.claimed_by_other(self.run_id, time.time()):
            if self.opts.dry_run:
                warnings.append(f"another run ({parent.claim.get('run')}) is changing this set right now; "
                                "the preview may be out of date when it finishes")
            else:
                parent = wait_until_free(lambda: read()[0], self.run_id, self.opts.claim_wait, parent)
        self.report.warnings += warnings
        self.parent = parent
        self._describe_hint(parent.recorded_group_kinds, parent.namespaces)
        return parent

    def _describe_hint(self, group_kinds, namespaces) -> None:
        """The parent as the result shows it, with the hint it records (or would record, in check mode)."""
        self.report.applyset = {**self.report.applyset, **self.parent.describe(),
                                "group_kinds": sorted(map(str, group_kinds)), "namespaces": sorted(namespaces)}

    def _claim(self, group_kinds, namespaces) -> None:
        self.claim = Claim(self.client, self.parent, self.run_id, self.opts.claim_ttl)
        self.claim.acquire(group_kinds, namespaces)

    def _release(self, group_kinds, namespaces, failing: bool) -> None:
        """Drop our claim; while another error is on its way out, never hide it."""
        if self.claim is None:
            return
        try:
            self.claim.release(group_kinds, namespaces)
        except ApplySetError as err:
            if not failing:
                raise
            self.report.warnings.append(f"could not release the claim on the set (it expires by itself): {err}")
        finally:
            self.claim = None

    def _scope(self) -> list[tuple[Resource, str | None]]:
        """(resource, namespace) pairs where members may live: the hint as recorded before this run.

        Kinds that cannot be listed are remembered in ``_not_listed``: they stay in the hint.
        """
        namespaces = sorted(self.parent.namespaces)
        pairs = []
        self._not_listed = set(self.parent.unlistable_group_kinds)
        for gk in sorted(self.parent.group_kinds):
            res = self.discovery.for_group_kind(gk)
            if "list" not in res.verbs and res.verbs:
                self.report.warnings.append(f"{gk} cannot be listed, so its members cannot be pruned; it stays "
                                            "in the hint")
                self._not_listed.add(gk)
                continue
            if res.namespaced:
                if not namespaces:
                    self.report.warnings.append(
                        f"{gk} is namespaced but the parent records no namespaces; nothing of it can be pruned")
                pairs += [(res, ns) for ns in namespaces]
            else:
                pairs.append((res, None))
        return pairs

    def _prune_context(self, applied_uids=frozenset()) -> prunes.Context:
        return prunes.Context(
            applyset_id=self.parent.id, parent_uid=self.parent.uid,
            scope=prunes.scope_of(self.parent.recorded_group_kinds | self._adopted_group_kinds(),
                                  self.parent.namespaces | self._adopted_namespaces()),
            applied_uids=frozenset(applied_uids))

    def _adopted_group_kinds(self) -> set:
        return {res.group_kind for res, _meta in self._adopted}

    def _adopted_namespaces(self) -> set:
        return {meta["namespace"] for _res, meta in self._adopted if meta.get("namespace")}

    def _adopt_legacy(self, plan: plans.Plan) -> list:
        """Objects of the legacy prune set (legacy.py) that this run takes in.

        Returns those that are not desired, with this set's label already in their metadata
        (a real run writes it right after claiming the set, before any member is applied).
        """
        options = self.opts.adopt_legacy
        served, missing = legacies.scope_kinds(options, self.discovery)
        namespaces = sorted({m.namespace for m in plan.members if m.resource.namespaced and m.namespace})
        pairs = [(res, ns) for res in served if res.namespaced for ns in namespaces]
        pairs += [(res, None) for res in served if not res.namespaced]
        listed = self._list(pairs, selector_for=lambda pair: options.selector)
        found = [(res, item["metadata"]) for (res, _ns), items in listed.items() for item in items]
        selection = legacies.select(found, self.parent.id, options, self.parent.ref)
        desired_keys = plan.keys()
        adopted, refs = [], []
        for res, meta in selection.adopted:
            refs.append(legacies.ref(res, meta))
            if spec.ObjectId.from_metadata(res, meta) in desired_keys:
                self._adopted_desired += 1
                continue  # applying it labels it
            labels = {**(meta.get("labels") or {}), spec.LABEL_PART_OF: self.parent.id}
            adopted.append((res, {**meta, "labels": labels}))
        self.report.applyset["adopted"] = refs
        if refs:
            self.report.warnings.append(
                f"adopt_legacy: {len(refs)} object(s) matching {options.selector} taken into the set: "
                + ", ".join(refs[:10]) + (f" and {len(refs) - 10} more" if len(refs) > 10 else ""))
        if selection.not_applied:
            self.report.warnings.append(
                f"adopt_legacy: {len(selection.not_applied)} object(s) match {options.selector} but were not made by "
                "kubectl apply (no last-applied-configuration annotation), so they are left alone, as kubectl's "
                "prune leaves them")
        for res, meta, other in selection.elsewhere:
            self.report.warnings.append(f"adopt_legacy: {legacies.ref(res, meta)} belongs to the ApplySet {other} "
                                        "already; left alone")
        if missing:
            self.report.warnings.append("adopt_legacy: the server does not serve "
                                        + ", ".join(sorted(map(str, missing))) + "; nothing of those is adopted")
        return adopted

    def _label_adopted(self) -> bool:
        """Write this set's label on the adopted objects, each guarded by the resourceVersion listed."""
        ok = True
        for res, meta in self._adopted:
            patch = {"metadata": {"labels": {spec.LABEL_PART_OF: self.parent.id},
                                  "resourceVersion": meta.get("resourceVersion")}}
            try:
                self.client.merge_patch(res, meta["name"], meta.get("namespace"), patch,
                                        field_manager=self.opts.field_manager)
            except ApiError as err:
                ok = False
                result = _live_result(res, meta, "failed", f"could not take it into the set: {err.message}")
                result.error = err.to_dict()
                self.report.objects.append(result)
        return ok

    def _retained_hint(self, group_kinds, namespaces) -> tuple[set, set]:
        """A final hint plus what must stay recorded: kinds whose members could not be listed
        (and, while any of them may be namespaced, every recorded namespace)."""
        retained = set(self._not_listed)
        if not retained:
            return set(group_kinds), set(namespaces)
        namespaced_or_unknown = any(
            (self.discovery.for_group_kind(gk) is None or self.discovery.for_group_kind(gk).namespaced)
            for gk in retained)
        return (set(group_kinds) | retained,
                set(namespaces) | (self.parent.namespaces if namespaced_or_unknown else set()))

    def _list(self, pairs, selector_for, full_for=frozenset()) -> dict:
        """LIST each pair in parallel; returns {(res, ns): items}. Any failure stops the run before writes."""

        def fetch(pair):
            res, ns = pair
            full = pair in full_for
            items = list(self.client.list(res, ns, label_selector=selector_for(pair), metadata_only=not full))
            if full:
                for item in items:  # LIST items carry no apiVersion/kind of their own
                    item.setdefault("apiVersion", res.api_version)
                    item.setdefault("kind", res.kind)
            return items

        results = self.client.map(fetch, pairs)
        listed = {}
        for pair, items in zip(pairs, results):
            if isinstance(items, ApiError):
                res, ns = pair
                where = f" in namespace {ns}" if ns else ""
                raise ApplySetError(
                    f"listing {res.group_kind} objects{where} failed: {items.message}",
                    obj=f"ApplySet {self.parent.ref}",
                    fix="the credentials need list on every kind the set records; nothing was changed",
                )
            if isinstance(items, Exception):
                raise items
            listed[pair] = items
        return listed

    def _classify(self, candidates, applied_uids=frozenset()) -> tuple[list, list, list]:
        """Split prune candidates into (delete, keep-by-annotation, skip-by-owner); see prune.py."""
        decisions = prunes.decide_all(candidates, self._prune_context(applied_uids))
        return decisions.delete, decisions.keep, decisions.skip

    def _guard(self, delete: list, set_size: int, emptying: bool, removing: bool = False) -> None:
        """Raise the GuardError of the blast-radius guard (prune.guard), if it refuses; ``removing``:
        for ``state: absent``, where only the protected-kinds rule applies."""
        if removing:
            refusal = prunes.refuse_protected_kinds(delete, 0, False, self.opts.guard_limits, removing=True)
        else:
            refusal = prunes.guard(delete, set_size, emptying, self.opts.guard_limits)
        if refusal is not None:
            raise GuardError(refusal.message, obj=f"ApplySet {self.parent.ref}", fix=refusal.fix,
                             details=refusal.details)

    def _diff_entry(self, ref: str, before: dict | None, after: dict | None) -> None:
        if not self.opts.diff:
            return
        self.report.diff.append({
            "before_header": ref if before is not None else "(absent)",
            "after_header": ref if after is not None else "(absent)",
            "before": _dump(self._masker.mask(_normalize(before))),
            "after": _dump(self._masker.mask(_normalize(after))),
        })

    # -- apply -----------------------------------------------------------------------------
    def _apply(self, manifests: list[Manifest]) -> Report:
        """The steps of ``apply``; see the module docstring for why they come in this order."""
        self._load_parent()
        plan = self._plan(manifests)
        live = self._list_live(plan)
        self._check_overlap(plan, live)
        if self.opts.adopt_legacy is not None and self.opts.prune:
            self._adopted = self._adopt_legacy(plan)
        decisions = self._decide_prune(plan, live)
        hints = self._hints(plan)
        self._unchanged = self._find_unchanged(plan, live)
        self._check_before_writes(plan, live)
        if self._may_go_without_claim(plan, live, decisions, hints):
            if self._finish_without_claim(plan, live, decisions, hints):
                if self.opts.wait:
                    self._wait_until_settled(plan)
                return self.report
            # The parent changed while this run read or updated the set (another run, kubectl),
            # or an update was refused: what was listed may be out of date, so start over on
            # the normal path, with the claim. What was updated is carried over (_carried).
            self._may_skip_claim = False
            self._start()
            return self._apply(manifests)
        if self.opts.dry_run:
            self.report.parent_changed = hints.final_changes
            self._describe_hint(*hints.final)
            failure = self._apply_and_prune(plan, live, *decisions)
            if failure is not None:
                raise failure
            return self.report
        self._write(plan, live, decisions, hints)
        if self.opts.wait:
            self._wait_until_settled(plan)
        return self.report

    def _plan(self, manifests: list[Manifest]) -> plans.Plan:
        """The desired objects resolved against discovery (plan.build); refuses every input problem."""
        parent = self.parent
        plan = plans.build(manifests, self.discovery, parent.id, self.namespace or parent.namespace or None)
        self.report.warnings += plan.warnings
        self._refuse_parent_as_member(plan)
        for member in plan.members:
            # Every apply records the digest of its own body, whatever reapply says: a later
            # run with reapply: changed then knows what was applied last (nochange.py).
            member.body = nochange.with_digest(member.body)
        return plan

    def _find_unchanged(self, plan: plans.Plan, live: dict) -> dict:
        """``{ObjectId: uid}`` of the members whose apply would change nothing (nochange.why_apply);
        empty with ``reapply: always``. Members whose CRD this run applies are never listed."""
        if self.opts.reapply != "changed":
            return {}
        unchanged = {}
        for member in plan.members:
            entry = live.get(member.key)
            if member.crd_in_set or entry is None or entry[0].group_kind != member.resource.group_kind:
                continue
            obj = entry[1]
            if nochange.why_apply(member.body, obj, self.opts.field_manager, digested=True) is None:
                unchanged[member.key] = obj["metadata"].get("uid")
        return unchanged

    def _may_go_without_claim(self, plan: plans.Plan, live: dict, decisions: tuple, hints: _Hints) -> bool:
        """Whether a real run's only writes would be in-place updates of members, so it may go
        without the claim (``_finish_without_claim``).

        Every member either unchanged or updatable in place (``_updatable_in_place``), nothing to
        delete or take out of the set (keep rules strip the label), nothing to adopt, no namespace
        to create, and a parent that exists, holds no claim (not even an expired one, which a
        normal run clears), has our tooling and already records exactly this run's hint.
        Anything else takes the normal path.
        """
        delete, keep, _skip = decisions
        parent = self.parent
        return (self._may_skip_claim and parent.exists and parent.claim is None
                and parent.tooling == spec.tooling_value() and not parent.legacy_annotation
                and not delete and not keep and not self._adopted and self._namespace_to_create is None
                and not self._pre_applied and not hints.superset_changes and not hints.final_changes
                and all(m.key in self._unchanged or self._updatable_in_place(m, live) for m in plan.members))

    def _updatable_in_place(self, member: plans.DesiredObject, live: dict) -> bool:
        """Whether ``member`` is a listed member of this set whose apply may be sent conditional on
        the listed object (nochange.in_place_blocker). CRDs take the normal path (their update
        is waited for before custom resources)."""
        entry = live.get(member.key)
        return (entry is not None and not member.crd_in_set and member.resource.group_kind != spec.CRD_KIND
                and entry[0].group_kind == member.resource.group_kind
                and nochange.in_place_blocker(entry[1], self.opts.field_manager, self.parent.id) is None)

    def _finish_without_claim(self, plan: plans.Plan, live: dict, decisions: tuple, hints: _Hints) -> bool:
        """Finish a run whose only writes are in-place updates, without the claim; False when it
        must start over (on the normal path, with the claim).

        The claim keeps two runs from writing one set at the same time. This run changes no
        membership and no hint: it only updates members that carry this set's label, each
        apply conditional on the uid and resourceVersion it listed (nochange.conditional). So a
        member another run pruned meanwhile is refused (409), never created again; one that only
        moved on is read again and updated on what is there now (``_update_in_place``); any other
        refusal means start over. What was listed must not be half of another
        run's work either: every run that writes a set writes its parent first (the claim) and
        last (the release), no claim was held when this run read the parent, and when the
        parent's resourceVersion is the same after this run's updates as when it was read,
        before the LISTs, no run wrote the set in between: the set went from the state that was
        listed to this run's, as if the run had held the claim. A parent changed, or not exactly
        as a release would write it, means start over; the updates made are carried over.
        """
        updated = {}
        for phase_members in plan.phases:
            members = [m for m in phase_members if m.key not in self._unchanged]
            outcomes = self.client.map(lambda m: self._update_in_place(m, live), members)
            updated.update((m.key, o) for m, o in zip(members, outcomes) if isinstance(o, ObjectResult))
            if len(outcomes) > sum(isinstance(o, ObjectResult) for o in outcomes):
                return False  # refused: later phases wait for the normal path
        parent = self.parent
        now = self.client.get(parent.resource, parent.name, parent.namespace or None)
        if (now is None or (now.get("metadata") or {}).get("resourceVersion") != parent.resource_version
                or not parents.records(parent, now, *hints.final)):
            return False
        for rank_members in plan.ranks:
            for member in rank_members:
                self.report.objects.append(updated.get(member.key) or self._unchanged_result(member, live))
        _delete, _keep, skip = decisions
        self._prune([], [], skip, live)
        self.report.applyset["tooling"] = parent.tooling
        return True

    def _update_in_place(self, member: plans.DesiredObject, live: dict):
        """Apply ``member`` conditional on the listed object (nochange.conditional): its result, or
        the ``ApiError`` that refused it (the run then starts over with the claim).

        An object that only changed since the LIST (a controller writing its status moves the
        resourceVersion too) is read again, up to twice: still the same object (same uid), still
        a member of this set that can be updated in place, the update is made conditional on what
        is there now. Anything else (gone, created again, left the set) is a refusal.
        """
        opts = self.opts
        before = live[member.key][1]
        for attempt in range(_IN_PLACE_ATTEMPTS):
            try:
                resp = self.client.apply(member.resource, nochange.conditional(member.body, before),
                                         field_manager=opts.field_manager, force=opts.force_conflicts,
                                         field_validation=opts.field_validation)
                break
            except ApiError as err:
                fresh = None
                if attempt + 1 < _IN_PLACE_ATTEMPTS and err.status == 409 and not _conflict_causes(err):
                    fresh = self.client.get(member.resource, member.name, member.namespace or None)
                if (fresh is None or fresh["metadata"].get("uid") != before["metadata"].get("uid")
                        or nochange.in_place_blocker(fresh, opts.field_manager, self.parent.id) is not None):
                    # Maybe written (an answer lost after a retry): a restart that finds it
                    # unchanged reports it configured, not unchanged.
                    self._carried[member.key] = (None, before, None, [])
                    return err
                before = fresh
        warnings = [f"{member.ref}: {warning}" for warning in resp.warnings]
        self.report.warnings += warnings
        result = self._applied_result(member, before, resp)
        self._carried[member.key] = (result, before, resp.body, warnings)
        return result

    def _unchanged_result(self, member: plans.DesiredObject, live: dict) -> ObjectResult:
        """The result of a member whose apply is skipped: unchanged, unless an attempt of this run
        without the claim updated it before the run started over (then that attempt's result)."""
        uid = self._unchanged[member.key]
        carried = self._carried.get(member.key)
        if carried is None:
            return _result_for(member, "unchanged", uid=uid)
        result, before, after, warnings = carried
        if result is not None and result.action == "unchanged":
            return result
        self.report.warnings += warnings
        self._diff_entry(member.ref, before, after if after is not None else live[member.key][1])
        return result or _result_for(member, "configured", uid=uid)

    def _list_live(self, plan: plans.Plan) -> dict:
        """LIST what the run needs to see, before any write; returns ``{ObjectId: (resource, object)}``.

        Desired kinds are listed whole (to see live state and other sets' labels); the rest of
        the prune scope, the hint as recorded before this run (kubectl's rule), only through our
        selector. Desired kinds and namespaces new in this run are not searched for leftovers.
        """
        desired_pairs = {(m.resource, m.namespace if m.resource.namespaced else None)
                         for m in plan.members if not m.crd_in_set}
        scope_pairs = set(self._scope()) if self.opts.prune else set()
        # A kind listed whole for the desired objects needs no second, selected list
        # (it may be under another version there).
        listed_whole = {(res.group_kind, ns) for res, ns in desired_pairs}
        scope_pairs = {(res, ns) for res, ns in scope_pairs if (res.group_kind, ns) not in listed_whole}
        selector = f"{spec.LABEL_PART_OF}={self.parent.id}"
        listed = self._list(
            sorted(desired_pairs | scope_pairs, key=lambda p: (p[0].group, p[0].kind, p[1] or "")),
            selector_for=lambda pair: None if pair in desired_pairs else selector,
            # Full objects where the run compares them: diffs, check mode, and reapply: changed.
            full_for=(desired_pairs if self.opts.diff or self.opts.dry_run or self.opts.reapply == "changed"
                      else frozenset()),
        )
        return {spec.ObjectId.from_metadata(res, item["metadata"]): (res, item)
                for (res, _ns), items in listed.items() for item in items}

    def _decide_prune(self, plan: plans.Plan, live: dict) -> tuple[list, list, list]:
        """The prune candidates and their first decisions (delete, keep, skip), the guard applied.

        The candidates are kept: after the applies they are decided again with the applied UIDs.
        """
        desired_keys = plan.keys()
        in_set = [(res, item["metadata"]) for res, item in live.values()
                  if (item["metadata"].get("labels") or {}).get(spec.LABEL_PART_OF) == self.parent.id]
        in_set += self._adopted
        self._candidates = [(res, meta) for res, meta in in_set
                            if spec.ObjectId.from_metadata(res, meta) not in desired_keys]
        # UIDs of the live objects this run is about to apply: the same object listed under
        # another group (Event and Event.events.k8s.io) is never a prune candidate.
        self._about_to_apply = {live[key][1]["metadata"].get("uid") for key in desired_keys if key in live} - {None}
        if not self.opts.prune:
            if not plan.members:
                raise InputError("no objects passed to apply", obj=f"ApplySet {self.parent.ref}",
                                 fix="give src or definition, or use state: absent")
            return [], [], []
        decisions = self._classify(self._candidates, self._about_to_apply)
        self._guard(decisions[0], len(in_set) + self._adopted_desired, emptying=not plan.members)
        return decisions

    def _hints(self, plan: plans.Plan) -> _Hints:
        """What the parent records while the run writes (the union of old and new, for crash safety)
        and once everything went through (exactly this run's set, and what must stay recorded)."""
        parent = self.parent
        superset = (parent.recorded_group_kinds | plan.group_kinds | self._adopted_group_kinds(),
                    parent.namespaces | plan.namespaces | self._adopted_namespaces())
        final = superset
        if self.opts.prune:
            final = self._retained_hint(
                plan.group_kinds, plan.namespaces | ({parent.namespace} if parent.namespace else set()))
        return _Hints(superset, final,
                      superset_changes=not parent.exists or self._hint_differs(*superset),
                      final_changes=not parent.exists or self._hint_differs(*final))

    def _write(self, plan: plans.Plan, live: dict, decisions: tuple, hints: _Hints) -> None:
        """Steps 5 to 8 of a real run: claim with the union, apply and prune, release.

        The parent keeps the union unless everything went through; a run that failed raises
        only once the claim is released and the result says what the parent records.
        """
        self._ensure_parent_namespace(plan, live)
        self._claim(*hints.superset)
        self.report.parent_changed = hints.superset_changes
        done, failure = False, None
        try:
            failure = self._apply_and_prune(plan, live, *decisions)
            done = failure is None
        finally:
            recorded = hints.final if done else hints.superset
            self._release(*recorded, failing=not done)
            self._describe_hint(*recorded)
        self.report.parent_changed = self.report.parent_changed or (done and hints.final_changes)
        self.report.applyset["tooling"] = self.parent.tooling  # what the parent says now
        if failure is not None:
            raise failure

    def _refuse_parent_as_member(self, plan: plans.Plan) -> None:
        """A parent that is also one of its own members would be labelled part-of its own set, and
        each member apply would race the run's claim on it; refuse it before anything is written."""
        p = self.parent
        member = next((m for m in plan.members
                       if m.key == spec.ObjectId.of(p.resource, p.namespace, p.name)), None)
        if member is not None:
            raise InputError(
                f"the set's parent {member.ref} is also one of the objects to apply; an ApplySet's parent records "
                "the set and cannot be a member of it",
                obj=f"{member.manifest.source} ({member.ref})",
                fix=f"give the parent another name (for example parent: {{kind: {p.resource.kind}, name: "
                f"{p.name}-set}}), or leave that object out of src/definition")

    def _wait_until_settled(self, plan: plans.Plan) -> None:
        """Wait (bounded) until applied objects are ready and pruned ones are gone.

        Runs after the claim is released: waiting changes nothing in the set.
        """
        applied = {o.id: o.uid for o in self.report.objects
                   if o.action in ("created", "configured", "replaced", "unchanged")}
        ready_targets = [(m.resource, m.namespace, m.name) for m in plan.members if m.key in applied]
        # The objects as applied, with the UID the server gave them: the wait then knows a
        # Job removed by its ttlSecondsAfterFinished from one deleted under it.
        as_applied = {(m.resource, m.namespace, m.name): {**m.body, "metadata": {
            **m.body["metadata"], "uid": applied[m.key]}}
            for m in plan.members if m.key in applied}
        by_kind = {m.resource.group_kind: m.resource for m in plan.members}
        gone_targets = []
        for o in self.report.objects:
            if o.action == "pruned":
                res = by_kind.get(o.id.group_kind) or self.discovery.for_group_kind(o.id.group_kind)
                if res is not None:
                    gone_targets.append((res, o.namespace, o.name, o.uid))
        deadline = time.monotonic() + self.opts.wait_timeout
        health.wait_ready(self.client, ready_targets, timeout=self.opts.wait_timeout, applied=as_applied,
                          **self.opts.wait_rules)
        self._wait_gone(gone_targets, timeout=max(1.0, deadline - time.monotonic()))

    def _wait_gone(self, targets, timeout: float) -> None:
        """Wait until the pruned or deleted objects ``(res, namespace, name, uid)`` are gone,
        finalizers included (as ``kubectl delete`` does)."""
        health.wait_gone(self.client, [t[:3] for t in targets], timeout=timeout,
                         uids={t[:3]: t[3] for t in targets if t[3]})

    def _apply_and_prune(self, plan, live, delete, keep, skip) -> ApplySetError | None:
        """Steps 4 and 5. Returns the run's error when some object did not go through (the caller
        raises it once the claim is released and the result says what the parent records), else None."""
        if self._adopted and not self.opts.dry_run and not self._label_adopted():
            return ApplySetError(
                "some objects of the legacy prune set could not be taken into the set; nothing was applied or "
                "pruned:\n" + self._failures(), obj=f"ApplySet {self.parent.ref}",
                fix="fix the errors listed per object and run again")
        if not self._apply_members(plan, live):
            return ApplySetError(
                "some objects could not be applied; nothing was pruned and the parent keeps "
                "covering every object that may exist:\n" + self._failures(),
                obj=f"ApplySet {self.parent.ref}", fix="fix the errors listed per object and run again",
            )
        if self.opts.prune:
            if self.claim:
                self.claim.check()
            # Again with the UIDs the applies returned (kubectl's visitedUids): whatever was
            # listed before, nothing this run applied is deleted or taken out of the set.
            applied = {o.uid for o in self.report.objects
                       if o.uid and o.action in ("created", "configured", "replaced", "unchanged")}
            delete, keep, skip = self._classify(self._candidates, applied | self._about_to_apply)
            if not self._prune(delete, keep, skip, live):
                return ApplySetError(
                    "some objects could not be pruned; the parent keeps covering them so the next run "
                    "retries:\n" + self._failures(), obj=f"ApplySet {self.parent.ref}",
                    fix="fix the errors listed per object and run again",
                )
        return None

    def _ensure_parent_namespace(self, plan: plans.Plan, live: dict) -> None:
        """Create the parent's namespace first when the set defines it or create_namespace asks.

        The parent must exist before any member is written, but it cannot be
        created in a namespace that does not exist yet. Applying just that
        Namespace first keeps the order crash-safe enough: the Namespace is in
        this run's desired set, so the parent written next records its kind.
        A namespace made for create_namespace is no member (see _create_namespace).
        """
        if self._namespace_to_create:
            result = self._create_namespace(self._namespace_to_create)
            self.report.objects.append(result)
            if result.action == "failed":
                raise ApplySetError(
                    f"could not create namespace {self._namespace_to_create}: {result.reason}",
                    obj=f"ApplySet {self.parent.ref}",
                    fix="the credentials need create on namespaces for create_namespace: true; or create it "
                    "beforehand; nothing else was changed")
        if self.parent.exists:
            return
        namespace_id = spec.ObjectId.of(spec.NAMESPACE_KIND, None, self.parent.namespace)
        member = next((m for m in plan.members if m.key == namespace_id), None)
        if member is None or namespace_id in live:
            return
        result = self._apply_one(member, live, set())
        self.report.objects.append(result)
        self._pre_applied.add(member.key)
        if result.action == "failed":
            raise ApplySetError(
                f"could not create namespace {self.parent.namespace} for the parent",
                obj=f"ApplySet {self.parent.ref}", fix="see the error of the Namespace object")

    # -- namespaces and recreate: checks before the first write ---------------------------------
    def _check_before_writes(self, plan: plans.Plan, live: dict) -> None:
        """Input problems only the server can show: recreate settings, missing namespaces."""
        problems = plans.recreate_problems(plan.members, self.opts.recreate_on_immutable)
        if problems:
            raise InputErrors(problems)
        self._check_namespaces(plan)

    def _home_namespace(self) -> str | None:
        """The namespace create_namespace makes: the parent's, else the default one of members."""
        return self.parent.namespace or self.namespace or None

    def _check_namespaces(self, plan: plans.Plan) -> None:
        """One GET per namespace that this run writes into and does not create itself.

        Without it, a missing namespace surfaces as the parent write's 404 (blamed on RBAC)
        or as one failure per member, after other writes. A GET that is refused (credentials
        limited to a namespace) tells nothing; the writes then report what they meet. A
        namespace whose members are all skipped (unchanged) gets no write, so no GET: a re-run
        costs its LISTs alone.
        """
        made_by_set = {m.name for m in plan.members if m.resource.group_kind == spec.NAMESPACE_KIND}
        needed = {m.namespace for m in plan.members
                  if m.resource.namespaced and m.namespace and m.key not in self._unchanged}
        if self.parent.namespace and not self.parent.exists:
            needed.add(self.parent.namespace)
        home = self._home_namespace()
        if self.opts.create_namespace and home:
            needed.add(home)
        if self.parent.exists and self.parent.namespace:
            needed.discard(self.parent.namespace)  # the parent lives there
        names = sorted(needed - made_by_set)
        ns_res = self.discovery.for_group_kind(spec.NAMESPACE_KIND) if names else None
        if ns_res is None:
            return
        found = self.client.map(lambda name: self.client.get(ns_res, name), names)
        missing = [n for n, obj in zip(names, found) if obj is None]
        terminating = [n for n, obj in zip(names, found)
                       if isinstance(obj, dict) and (obj.get("metadata") or {}).get("deletionTimestamp")]
        if self.opts.create_namespace and home in missing:
            missing.remove(home)
            self._namespace_to_create = home
            if self.opts.dry_run:
                self.report.objects.append(self._create_namespace(home))
        if missing or terminating:
            raise self._namespace_error(plan, missing, terminating, home)

    def _namespace_error(self, plan, missing, terminating, home) -> NamespaceMissingError:
        users = {}
        for m in plan.members:
            if m.namespace in missing or m.namespace in terminating:
                users.setdefault(m.namespace, []).append(m.ref)
        parts = []
        for name in missing + terminating:
            who = users.get(name, [])
            if name == self.parent.namespace and not self.parent.exists:
                who = [f"the parent {self.parent.ref}"] + who
            notes = []
            if name in missing:
                # The server's own words too, as kubectl shows them: people search for them.
                notes.append(f'namespaces "{name}" not found')
            if who:
                notes.append("needed by " + ", ".join(who[:3]) + (f" and {len(who) - 3} more" if len(who) > 3 else ""))
            state = "does not exist" if name in missing else "is being deleted"
            parts.append(f"namespace {name} {state}" + (f" ({'; '.join(notes)})" if notes else ""))
        fixes = []
        if missing:
            fixes.append("add a Namespace object for " + ", ".join(missing) + " to the set (it is then "
                         "created first, and a later prune of it is guarded)")
            if home in missing:
                fixes.append(f"set create_namespace: true to create {home} as helm --create-namespace does "
                             "(it stays out of the set)")
            else:
                fixes.append("create it beforehand")
        if terminating:
            fixes.append("wait until " + ", ".join(terminating) + " is gone and run again")
        return NamespaceMissingError(
            "; ".join(parts), obj=f"ApplySet {self.parent.ref}", fix=", or ".join(fixes) + "; nothing was changed",
            details={"missing": missing, "terminating": terminating})

    def _create_namespace(self, name: str) -> ObjectResult:
        """create_namespace: the namespace is made, but does not join the set.

        As with helm --create-namespace, uninstall leaves it: it may hold what other tools put
        there (Secrets, PVCs), and as a member its removal from the set would be a prune the
        guard refuses anyway. Apply without the part-of label, so it is never a prune candidate.
        """
        res = self.discovery.for_group_kind(spec.NAMESPACE_KIND)
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        reason = "create_namespace: true; not a member of the set, so state=absent leaves it"
        try:
            resp = self.client.apply(res, body, field_manager=self.opts.field_manager, dry_run=self.opts.dry_run)
        except ApiError as err:
            return ObjectResult(api_version="v1", kind="Namespace", namespace=None, name=name, action="failed",
                                reason=err.message, error=err.to_dict())
        self._diff_entry(f"Namespace {name}", None, resp.body)
        return ObjectResult(api_version="v1", kind="Namespace", namespace=None, name=name, action="created",
                            reason=reason, uid=None if self.opts.dry_run else resp.body["metadata"].get("uid"))

    def _failures(self, limit: int = 10) -> str:
        failed = [o for o in self.report.objects if o.action == "failed"]
        lines = [f"- {o.ref}: {o.reason}" for o in failed[:limit]]
        if len(failed) > limit:
            lines.append(f"- ... and {len(failed) - limit} more (see objects)")
        return "\n".join(lines)

    def _hint_differs(self, group_kinds, namespaces) -> bool:
        p = self.parent
        return bool(p.legacy_annotation or p.dropped_group_kinds or p.tooling != spec.tooling_value()
                    or set(group_kinds) != p.recorded_group_kinds or set(namespaces) != p.namespaces)

    def _check_overlap(self, plan: plans.Plan, live: dict) -> None:
        """Raise when desired objects belong to another set (prune.overlap) and adopt is off."""
        refusal = prunes.overlap(plan.members, live, self.parent.id, adopt=self.opts.adopt)
        if refusal is not None:
            raise ApplySetError(refusal.message, obj=f"ApplySet {self.parent.ref}", fix=refusal.fix,
                                details=refusal.details)

    def _apply_members(self, plan: plans.Plan, live: dict) -> bool:
        """Apply the members phase by phase (``plan.phases``), each phase at once; False when a
        member failed, which stops the later phases. Results keep rank order, then input order."""
        ok = True
        created_namespaces = set()
        for phase_members in plan.phases:
            if self.claim:
                self.claim.check()
            phase_members = [m for m in phase_members if m.key not in self._pre_applied]
            results = self.client.map(lambda m: self._apply_one(m, live, created_namespaces), phase_members)
            for member, result in zip(phase_members, results):
                if isinstance(result, Exception):
                    err = result if isinstance(result, ApplySetError) else ApplySetError(str(result))
                    result = _result_for(member, "failed", reason=str(err), error=err)
                if result.action == "failed":
                    ok = False
                if member.resource.group_kind == spec.NAMESPACE_KIND and result.action == "created":
                    created_namespaces.add(member.name)
                self.report.objects.append(result)
            if not ok:
                return False  # later phases depend on this one
            crds = [m for m in phase_members if m.resource.group_kind == spec.CRD_KIND]
            if crds and not self.opts.dry_run:
                self._wait_for_crds(crds)
        return ok

    def _apply_one(self, member: plans.DesiredObject, live: dict, created_namespaces: set) -> ObjectResult:
        """Apply one desired object; API errors become its failed result, never an exception."""
        before_entry = live.get(member.key)
        before = before_entry[1] if before_entry else None
        if member.key in self._unchanged:
            # The live object already is what this apply would make (nochange.why_apply): not sent.
            return self._unchanged_result(member, live)
        if self.opts.dry_run and member.crd_in_set:
            self._diff_entry(member.ref, None, member.body)
            return _result_for(member, "created", reason="its CRD is created by this run, so the server "
                               "cannot dry-run it yet")
        sent = self._send_apply(member, before, created_namespaces)
        if isinstance(sent, ObjectResult):
            return sent
        for warning in sent.warnings:
            self.report.warnings.append(f"{member.ref}: {warning}")
        return self._applied_result(member, before, sent)

    def _send_apply(self, member: plans.DesiredObject, before: dict | None, created_namespaces: set):
        """The server-side apply of ``member``: its response, or the object's result when refused.

        Retried while the endpoint of a CRD this run created comes up, and once after taking
        the part-of label for ``adopt`` when only that label conflicts.
        """
        opts = self.opts
        deadline = time.monotonic() + (opts.crd_timeout if member.crd_in_set else 0)
        force = opts.force_conflicts
        label_taken = False
        while True:
            try:
                return self.client.apply(member.resource, member.body, field_manager=opts.field_manager,
                                         force=force, dry_run=opts.dry_run, field_validation=opts.field_validation)
            except ConflictError as err:
                if label_taken or not (opts.adopt and _only_part_of_conflicts(err) and before is not None):
                    return _result_for(member, "failed", reason=_conflict_message(err, member), error=err)
                # adopt: true means "take the part-of label", and only that field: the other
                # tool's apply owns it with another set's id.
                label_taken = True
                if opts.dry_run:
                    force = True  # nothing is written; the conflict was on the label alone
                    continue
                try:
                    self._take_part_of_label(member, before)
                except ApiError as patch_err:
                    return _result_for(member, "failed", reason="adopting it failed: could not take its "
                                       f"part-of label: {patch_err.message}", error=patch_err)
            except ApiError as err:
                if err.status == 404 and member.crd_in_set and time.monotonic() < deadline:
                    time.sleep(0.5)  # the new CRD's endpoint is not served yet
                    continue
                return self._apply_refused(member, before, err, created_namespaces)

    def _apply_refused(self, member: plans.DesiredObject, before: dict | None, err: ApiError,
                       created_namespaces: set) -> ObjectResult:
        """The result of an apply the server refused: a check-mode create in a namespace this run
        creates, a missing namespace, an immutable change (maybe recreated), or a plain failure."""
        if (self.opts.dry_run and err.status == 404
                and (member.namespace in created_namespaces or member.namespace == self._namespace_to_create)):
            self._diff_entry(member.ref, None, member.body)
            return _result_for(member, "created", reason=f"namespace {member.namespace} is created by "
                               "this run, so the server cannot dry-run it yet")
        if missing_namespace(err):
            return self._missing_namespace_result(member, err)
        immutable = immutable_refusal(err)
        if immutable:
            return self._immutable(member, before, err, immutable)
        return _result_for(member, "failed", reason=err.message, error=err)

    def _applied_result(self, member: plans.DesiredObject, before: dict | None, resp) -> ObjectResult:
        """What an accepted apply did: created, configured or unchanged, with its diff entry."""
        opts = self.opts
        after = self._take_over_client_side_fields(member, resp.body)
        uid = after["metadata"].get("uid")
        if before is None or resp.status == 201:
            action = "created"
        elif opts.dry_run or opts.diff:
            action = "unchanged" if _normalize(before) == _normalize(after) else "configured"
        else:
            action = "unchanged" if _apply_changed_nothing(before, after, opts.field_manager) else "configured"
        if action != "unchanged":
            self._diff_entry(member.ref, before, after)
        return _result_for(member, action, uid=None if opts.dry_run and action == "created" else uid)

    def _take_over_client_side_fields(self, member: plans.DesiredObject, applied: dict) -> dict:
        """Make fields that client-side tools own ours where csa.py says so, as kubectl's
        managed-fields upgrade does; returns the object as it is afterwards.

        Runs after a successful apply, like kubectl: one extra request in the rare case, none
        otherwise. A failure is a warning (the apply itself went through), and the next run
        tries again.
        """
        opts = self.opts
        meta = applied.get("metadata") or {}
        migration = csa.plan(meta.get("managedFields"), opts.field_manager)
        if migration is None:
            return applied
        if opts.dry_run:
            self.report.warnings.append(
                f"{member.ref}: a real run takes over {migration.describe()}"
                + ("; fields they set that the manifest does not are then removed" if migration.needs_reapply
                   else ""))
            return applied
        res, name, namespace = member.resource, member.name, member.namespace
        try:
            for _attempt in range(3):
                try:
                    applied = self.client.json_patch(res, name, namespace,
                                                     csa.patch(migration, meta.get("resourceVersion")),
                                                     field_manager=opts.field_manager).body
                    break
                except ConflictError:  # changed since our apply: plan again on what is there now
                    applied = self.client.get(res, name, namespace) or applied
                    meta = applied.get("metadata") or {}
                    migration = csa.plan(meta.get("managedFields"), opts.field_manager)
                    if migration is None:
                        return applied
            else:
                raise ApiError("the object kept changing", status=409)
            self.report.warnings.append(f"{member.ref}: took over {migration.describe()}")
            if migration.needs_reapply:
                applied = self.client.apply(res, member.body, field_manager=opts.field_manager,
                                            force=opts.force_conflicts,
                                            field_validation=opts.field_validation).body
        except ApiError as err:
            self.report.warnings.append(f"{member.ref}: could not take over the fields of client-side tools "
                                        f"({err.message}); the next run tries again")
        return applied

    def _missing_namespace_result(self, member: plans.DesiredObject, err: ApiError) -> ObjectResult:
        """The namespace went missing after the check (or could not be read): say so, not just 404."""
        name = missing_namespace(err)
        fix = f"add a Namespace object for {name} to the set, or create it beforehand"
        if name == self._home_namespace():
            fix += ", or set create_namespace: true"
        error = ApiError(f"namespace {name} does not exist ({err.message})", status=err.status, reason=err.reason, body=err.body,
                         obj=member.ref, fix=fix, details=err.details)
        return _result_for(member, "failed", reason=f"{error.message}. Fix: {fix}", error=error)

    def _immutable(self, member: plans.DesiredObject, before: dict | None, err: ApiError, immutable: list) -> ObjectResult:
        """A change the server refuses in place: recreate when asked to, else name the fields and the way out."""
        fields = "; ".join(text for _field, text in immutable)
        gk = member.resource.group_kind
        if gk in plans.PROTECTED_KINDS:
            fix = (f"revert the change; a {member.resource.kind} is a protected kind and is never deleted to be "
                   "created again (its data or contents would be lost)")
        elif plans.update_strategy(member, self.opts.recreate_on_immutable) == plans.STRATEGY_RECREATE:
            return self._recreate(member, before, fields)
        else:
            fix = (f"revert the change, or let it be deleted and created again: list {member.resource.kind} in "
                   f"recreate_on_immutable, or annotate the object {plans.ANNOTATION_UPDATE_STRATEGY}: "
                   f"{plans.STRATEGY_RECREATE}")
        message = f"the server cannot change it in place: {fields}"
        error = ApiError(message, status=err.status, reason=err.reason, obj=member.ref, fix=fix,
                         details={**(err.details or {}), "immutable_fields": [f for f, _text in immutable if f]})
        return _result_for(member, "failed", reason=f"{message}. Fix: {fix}", error=error)

    def _recreate(self, member: plans.DesiredObject, before: dict | None, fields: str) -> ObjectResult:
        """Delete (UID precondition), wait until gone (bounded), and apply again.

        The replacement is first sent as a dry-run create: the server validates and admits
        a create before it finds the name taken, so AlreadyExists means the new object
        will be accepted. An invalid manifest never gets the live object deleted.
        """
        live = before if before is not None else self.client.get(member.resource, member.name, member.namespace)
        if live is None or not live["metadata"].get("uid"):
            return _result_for(member, "failed", reason=f"{fields}; and it was not found to recreate it; run again")
        uid = live["metadata"]["uid"]
        why = f"the server cannot change it in place ({fields})"
        refused = self._replacement_refused(member, why)
        if refused is not None:
            return refused
        if self.opts.dry_run:
            self._diff_entry(member.ref, live, member.body)
            return _result_for(member, "replaced", reason=f"would be replaced (deleted and created again): {why}",
                               uid=uid)
        not_deleted = self._delete_to_recreate(member, uid, why)
        if not_deleted is not None:
            return not_deleted
        try:
            resp = self.client.apply(member.resource, member.body, field_manager=self.opts.field_manager,
                                     force=self.opts.force_conflicts, field_validation=self.opts.field_validation)
        except ApiError as err:
            return _result_for(member, "failed", reason=f"{why}; it was deleted, but creating it again failed: "
                               f"{err.message}; the next run creates it", error=err)
        for warning in resp.warnings:
            self.report.warnings.append(f"{member.ref}: {warning}")
        self._diff_entry(member.ref, live, resp.body)
        return _result_for(member, "replaced", reason=f"deleted and created again: {why}",
                           uid=resp.body["metadata"].get("uid"))

    def _replacement_refused(self, member: plans.DesiredObject, why: str) -> ObjectResult | None:
        """The failed result when the server would refuse the replacement (a dry-run create), else None."""
        try:
            self.client.create(member.resource, member.body, field_manager=self.opts.field_manager, dry_run=True)
        except ConflictError as err:
            if err.reason != "AlreadyExists":
                return _result_for(member, "failed", reason=f"{why}; its replacement was refused, so it was "
                                   f"not deleted: {err.message}", error=err)
        except ApiError as err:
            return _result_for(member, "failed", reason=f"{why}; its replacement would be refused, so it was "
                               f"not deleted: {err.message}", error=err)
        return None

    def _delete_to_recreate(self, member: plans.DesiredObject, uid: str, why: str) -> ObjectResult | None:
        """Delete the object with ``uid`` and wait until it is gone; the failed result if not, else None."""
        try:
            self.client.delete(member.resource, member.name, member.namespace, uid=uid,
                               propagation_policy=self.opts.propagation_policy)
        except ApiError as err:
            if err.status == 409:
                return _result_for(member, "failed", reason=f"{why}; it was replaced by someone else meanwhile, "
                                   "so it was not deleted; run again", error=err)
            if err.status != 404:
                return _result_for(member, "failed", reason=f"{why}; deleting it to recreate it failed: "
                                   f"{err.message}", error=err)
        left = self._wait_deleted(member, uid)
        if left is None:
            return None
        finalizers = (left.get("metadata") or {}).get("finalizers") or []
        held = f" (finalizers: {', '.join(finalizers)})" if finalizers else ""
        return _result_for(member, "failed", reason=f"{why}; it was deleted but is still there after "
                           f"{self.opts.recreate_timeout:.0f}s{held}; the next run creates it once it is gone")

    def _wait_deleted(self, member: plans.DesiredObject, uid: str) -> dict | None:
        """Wait until the object with ``uid`` is gone; returns it if it is still there at the deadline."""
        deadline = time.monotonic() + self.opts.recreate_timeout
        pause = 0.1
        while True:
            live = self.client.get(member.resource, member.name, member.namespace)
            if live is None or live["metadata"].get("uid") != uid:
                return None
            if time.monotonic() >= deadline:
                return live
            time.sleep(pause)
            pause = min(1.0, pause * 2)

    def _take_part_of_label(self, member: plans.DesiredObject, before: dict) -> None:
        """Set the part-of label to this set's id with a merge patch guarded by the resourceVersion
        that was listed: an update takes a field over from another manager without a conflict,
        and touches nothing else."""
        patch = {"metadata": {"labels": {spec.LABEL_PART_OF: self.parent.id},
                              "resourceVersion": before["metadata"].get("resourceVersion")}}
        self.client.merge_patch(member.resource, member.name, member.namespace, patch,
                                field_manager=self.opts.field_manager)

    def _wait_for_crds(self, crd_members: list) -> None:
        deadline = time.monotonic() + self.opts.crd_timeout
        crd_res = crd_members[0].resource
        pending = {m.name for m in crd_members}
        while pending:
            for name in sorted(pending):
                crd = self.client.get(crd_res, name)
                # The one CRD readiness rule (health.crd_ready): Established, or a final refusal
                # such as NamesAccepted=False, which no amount of waiting changes.
                ready, reason = health.crd_ready(crd or {})
                if ready:
                    pending.discard(name)
                elif isinstance(reason, health.Final):
                    raise ApplySetError(
                        f"CustomResourceDefinition {name} will not become Established: {reason}",
                        obj=f"ApplySet {self.parent.ref}",
                        fix=f"fix the CRD (kubectl describe crd {name}); its custom resources were not applied")
            if not pending:
                return
            if time.monotonic() > deadline:
                raise ApplySetError(
                    f"CustomResourceDefinitions not Established after {self.opts.crd_timeout:.0f}s: "
                    + ", ".join(sorted(pending)),
                    obj=f"ApplySet {self.parent.ref}",
                    fix="check the CRDs' status conditions (kubectl describe crd NAME)",
                )
            time.sleep(0.25)

    # -- prune -----------------------------------------------------------------------------
    def _prune(self, delete: list, keep: list, skip: list, live: dict) -> bool:
        opts = self.opts
        for res, meta, reason in skip:
            self.report.objects.append(_live_result(res, meta, "skipped", reason))
        for res, meta, reason in keep:
            result = _live_result(res, meta, "kept", f"{reason}; removed from the set")
            if not opts.dry_run:
                patch = {"metadata": {"labels": {spec.LABEL_PART_OF: None}}}
                try:
                    self.client.merge_patch(res, meta["name"], meta.get("namespace"), patch,
                                            field_manager=opts.field_manager)
                except ApiError as err:
                    result = _live_result(res, meta, "failed", f"could not remove it from the set: {err.message}")
                    result.error = err.to_dict()
            self.report.objects.append(result)
        by_rank: dict[int, list] = {}
        for res, meta in delete:
            by_rank.setdefault(plans.rank_of(res.group_kind, res.namespaced), []).append((res, meta))
        ok = all(o.action != "failed" for o in self.report.objects)
        adopted_uids = {meta.get("uid") for _res, meta in self._adopted}
        for rank in sorted(by_rank, reverse=True):
            batch = sorted(by_rank[rank], key=lambda p: (p[0].kind, p[1].get("namespace") or "", p[1]["name"]))
            for (res, meta), result in zip(batch, self.client.map(self._delete_one, batch)):
                if isinstance(result, Exception):
                    result = _live_result(res, meta, "failed", f"pruning failed: {result}")
                ok = ok and result.action != "failed"
                if result.action == "pruned" and meta.get("uid") in adopted_uids:
                    result.reason = (f"taken over from the legacy prune set ({self.opts.adopt_legacy.selector}) and "
                                     "no longer in the manifests")
                self.report.objects.append(result)
                if result.action == "pruned":
                    before = live.get(spec.ObjectId.from_metadata(res, meta), (None, None))[1]
                    self._diff_entry(result.ref, before if before is not None else {"metadata": meta}, None)
        return ok

    def _delete_one(self, pair) -> ObjectResult:
        res, meta = pair
        try:
            self.client.delete(res, meta["name"], meta.get("namespace"), uid=meta.get("uid"),
                               propagation_policy=self.opts.propagation_policy, dry_run=self.opts.dry_run)
        except ApiError as err:
            if err.status == 404:
                return _live_result(res, meta, "pruned", "already gone")
            if err.status == 409:
                # UID precondition failed: a new object with this name is not ours to delete.
                return _live_result(res, meta, "skipped", "replaced by a new object with the same name")
            result = _live_result(res, meta, "failed", f"pruning failed: {err.message}")
            result.error = err.to_dict()
            return result
        return _live_result(res, meta, "pruned")

    # -- uninstall and disband ---------------------------------------------------------------
    def _members_in_scope(self, action: str) -> list:
        """Every listed member; refuses when some recorded kind cannot be listed, since removing
        the parent would then leave its members labelled, with no parent to find them by."""
        selector = f"{spec.LABEL_PART_OF}={self.parent.id}"
        scope = self._scope()
        if self._not_listed:
            raise ApplySetError(
                f"cannot {action} the set: the members of {spec.format_group_kinds(self._not_listed)} cannot be "
                "listed (see the warnings), and removing the parent would leave them behind for good",
                obj=f"ApplySet {self.parent.ref}",
                fix="run again once the server serves and lists those kinds; nothing was changed")
        listed = self._list(scope, selector_for=lambda pair: selector,
                            full_for=set(scope) if self.opts.diff else frozenset())
        return [(res, item) for (res, _ns), items in listed.items() for item in items]

    def _uninstall(self) -> Report:
        parent = self._load_parent()
        if not parent.exists:
            self.report.warnings.append(f"ApplySet parent {parent.ref} does not exist; nothing to remove")
            return self.report
        members = self._members_in_scope("remove")
        live = {spec.ObjectId.from_metadata(res, item["metadata"]): (res, item) for res, item in members}
        delete, keep, skip = self._classify([(res, item["metadata"]) for res, item in members])
        self._guard(delete, 0, emptying=False, removing=True)
        if not self.opts.dry_run:
            self._claim(parent.group_kinds, parent.namespaces)
        try:
            pruned = self._prune(delete, keep, skip, live)
        except BaseException:
            self._release(parent.group_kinds, parent.namespaces, failing=True)
            raise
        if not pruned:
            self._release(parent.group_kinds, parent.namespaces, failing=True)
            raise ApplySetError(
                "some members could not be deleted; the parent is kept so that a re-run finds them:\n"
                + self._failures(), obj=f"ApplySet {parent.ref}", fix="fix the errors listed per object and run again")
        if self.claim:
            self.claim.stop()
        parents.delete(self.client, parent, dry_run=self.opts.dry_run)
        self.report.parent_changed = True
        self._diff_entry(f"{parent.resource.kind} {parent.name}", {"metadata": {"name": parent.name}}, None)
        if self.opts.wait and not self.opts.dry_run:
            # Like kubectl delete: return once the members are gone, finalizers done (a CRD
            # only after its custom resources), so that an install right after does not race
            # the deletion. The parent is gone already: what is left is being deleted anyway.
            by_uid = {item["metadata"].get("uid"): res for res, item in members}
            gone = [(by_uid[o.uid], o.namespace, o.name, o.uid)
                    for o in self.report.objects if o.action == "pruned" and o.uid in by_uid]
            self._wait_gone(gone, timeout=self.opts.wait_timeout)
        return self.report

    def _disband(self) -> Report:
        parent = self._load_parent()
        if not parent.exists:
            self.report.warnings.append(f"ApplySet parent {parent.ref} does not exist; nothing to disband")
            return self.report
        patch = {"metadata": {"labels": {spec.LABEL_PART_OF: None}}}
        members = self._members_in_scope("disband")
        if not self.opts.dry_run:
            self._claim(parent.group_kinds, parent.namespaces)

        def unlabel(pair):
            res, item = pair
            meta = item["metadata"]
            if not self.opts.dry_run:
                self.client.merge_patch(res, meta["name"], meta.get("namespace"), patch,
                                        field_manager=self.opts.field_manager)
            return _live_result(res, meta, "disbanded", "left in place without the part-of label")

        for (res, item), result in zip(members, self.client.map(unlabel, members)):
            if isinstance(result, Exception):
                result = _live_result(res, item["metadata"], "failed", f"could not remove the label: {result}")
            self.report.objects.append(result)
        if self.report.failed_objects:
            self._release(parent.group_kinds, parent.namespaces, failing=True)
            raise ApplySetError("some members kept the label; the parent is kept",
                                obj=f"ApplySet {parent.ref}", fix="run again")
        if self.claim:
            self.claim.stop()
        parents.delete(self.client, parent, dry_run=self.opts.dry_run)
        self.report.parent_changed = True
        return self.report
