"""An ApplySet run: ``Engine(client, parent, namespace, Options)`` and its three entry points,
``apply()``, ``uninstall()`` and ``disband()``, with one error channel; and a release with
``on_failure: rollback``, ``apply_or_roll_back`` (a failed apply, then the last good revision
applied again in a second run).

The order of each route is data (routes.py): the reading steps read and decide and write
nothing; what they found chooses the route; every route that writes takes the claim with the
union hint before any member is touched and releases it last, with the exact hint when
everything went through and the union otherwise, so a run stopped anywhere leaves a parent that
covers everything that may exist and the next run prunes what it must. Check mode takes its
own route, with every request a server-side dry run and no write at all (not even the parent).

A run whose only writes would be in-place updates of members goes without the claim
(steps/without_claim.py); when it cannot finish that way it starts over on the claim's route, and
what it updated is carried into the new attempt explicitly. A run that loses the race for the
claim to a run started at the same moment (claim.RaceLost) starts over too: it waits for the
winner (``claim_wait``) and decides again on the state the winner left.

Callers build ``run.options.Options`` (an apply's; ``RunOptions`` suffices for a teardown) and read ``run.report.Report`` (its ``ObjectResult`` values).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from .run import early, runner
from .inputs import redact
from . import routes
from .steps.claim import RACES_BEFORE_GIVING_UP, RaceLost, new_run_id
from .errors import ApplySetError, GuardError, InputError, ParentError, WaitTimeout
from .history import revisions as history
from . import spec
from .steps.rollback import rolls_back
from .kube.api import KubeApi
from .kube.discovery import Discovery
from .parent.model import Parent
from .inputs.manifests import Manifest
from .object_meta import KubeObject
from .run.records import CarriedUpdate
from .spec import ObjectId
from .run.options import Options, RunOptions
from .run.report import CHANGING_ACTIONS, Recorder, Report
from .wait import expressions, readiness
from .steps.without_claim import StartOver


class Engine:
    """One ApplySet run. Create it, then call one of ``apply()``, ``uninstall()`` or ``disband()``.

    The three return the ``Report`` of a run that succeeded and raise an ``ApplySetError`` on any
    failure, with what the run did until then as ``err.report``.
    """

    def __init__(self, client: KubeApi, parent_spec: str | KubeObject | None, namespace: str | None,
                 options: RunOptions):
        """Prepare a run; sends no request.

        Args:
            client: the connection (``kube.client.connect``).
            parent_spec: the parent option: ``[RESOURCE][.GROUP]/NAME``, a reference dict
                (``kind``, ``name``, ...) or a whole object to create (see ``parent.resolve.resolve``).
            namespace: the parent's namespace when the reference names none, and the default
                namespace of namespaced objects that name none; None for neither.
            options: how the run behaves; validated here. ``apply`` needs an apply's ``Options``;
                ``uninstall`` and ``disband`` read only what every entry point has (``RunOptions``).

        Raises:
            InputError: an option is invalid (``RunOptions.validate``).
        """
        self.client = client
        self.parent_spec = parent_spec
        self.namespace = namespace
        options.validate()
        self.opts = options
        self.run_id = new_run_id()
        self._masker = redact.SecretDigester()  # one per run: equal Secret values stay equal in diffs
        self._ctx = self._attempt(None, {})

    @property
    def report(self) -> Report:
        """The report of the run (of its latest attempt, when it started over)."""
        return self._ctx.report

    @property
    def parent(self) -> Parent | None:
        """The parent as the run holds it, once read; else None."""
        return self._ctx.parent if self._ctx.has("parent") else None

    @property
    def recorded_revision(self) -> int | None:
        """The number of the revision this run recorded in the set's history, if it did."""
        return self._ctx.revision

    @property
    def parent_discovery(self) -> Discovery | None:
        """What the server served when the run read the parent, or None."""
        return self._ctx.discovery if self._ctx.has("discovery") else None

    def _attempt(self, manifests: list[Manifest] | None, carried: dict[ObjectId, CarriedUpdate]) -> runner.RunContext:
        """The state of one attempt of the run before its first request."""
        report = Report(dry_run=self.opts.dry_run)
        return runner.RunContext(client=self.client, opts=self.opts, run_id=self.run_id, parent_spec=self.parent_spec,
                                 namespace=self.namespace, manifests=manifests, carried=carried,
                                 record=Recorder(report, self._masker, self.opts.diff))

    # -- the entry points: one error channel ------------------------------------------------
    def apply(self, manifests: list[Manifest]) -> Report:
        """Apply the desired set and prune what left it (unless ``Options.prune`` is off).

        Args:
            manifests: the desired objects (``manifests.load_*``, validated).

        Returns:
            The report of the run; also when it waited (``Options.waiting``) for readiness.

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
        if not isinstance(self.opts, Options):
            raise TypeError(f"apply needs an apply's Options, not {type(self.opts).__name__}")
        return self._run(self._apply, manifests, self.opts)

    def uninstall(self, manifests: list[Manifest] | None = None) -> Report:
        """Delete every member (same safety rules as prune), then the parent.

        Args:
            manifests: objects given with the uninstall: only their pre-delete and post-delete
                hooks are used (rules/hooks.py); the members are what the cluster holds.

        Returns:
            The report of the run; a set whose parent does not exist gives one with a warning.

        Raises:
            GuardError: the members include protected kinds that are not allowed.
            ApplySetError: some members could not be listed or deleted (the parent is kept).
            WaitTimeout: with ``Options.waiting``, members not gone in time (the parent is gone).
            ParentError, ApiError: as for ``apply``.
        """
        return self._run(self._teardown, routes.UNINSTALL, manifests)

    def disband(self) -> Report:
        """Leave every member in place without our part-of label, then delete the parent.

        Returns:
            The report of the run; a set whose parent does not exist gives one with a warning.

        Raises:
            ApplySetError: some members could not be listed or kept the label (the parent is kept).
            ParentError, ApiError: as for ``apply``.
        """
        return self._run(self._teardown, routes.DISBAND)

    def _run(self, run: Callable[..., None], *args: Any) -> Report:
        """Run ``run``; the one place where a failed run gets its partial report attached.

        Any failure, including objects that failed without an error of the run (a check-mode
        namespace creation, say), leaves as an ``ApplySetError`` with ``err.report``.
        """
        try:
            run(*args)
        except ApplySetError as err:
            err.report = self.report
            raise
        finally:
            # The client's own counters (a stand-in client may keep none).
            self.report.requests = {"sent": getattr(self.client, "requests_sent", 0),
                                    "writes": getattr(self.client, "writes_sent", 0),
                                    "round_trips": getattr(self.client, "round_trips", 0)}
        if self.report.failed_objects:
            failed = ApplySetError("some objects failed; see objects", fix="fix them and run again")
            failed.report = self.report
            raise failed
        return self.report

    def _apply(self, manifests: list[Manifest], opts: Options) -> None:
        # The ready-when / failed-when annotations compile before the first request, like wait_rules.
        expressions.check_annotations((m.source, m.mapping) for m in manifests)
        try:
            self._attempts(routes.APPLY, manifests, may_skip_claim=opts.reapply == "changed" and not opts.dry_run)
        finally:
            if opts.waiting.enabled or opts.dry_run:
                # The members applied: a chart's or a revision's objects, not the task's input.
                applied = self._ctx.desired if self._ctx.has("desired") else manifests
                _show_rules(self.report, applied, opts.waiting.rules or {})

    def _teardown(self, entry: str, manifests: list[Manifest] | None = None) -> None:
        self._attempts(entry, manifests, may_skip_claim=False)

    def _attempts(self, entry: str, manifests: list[Manifest] | None, may_skip_claim: bool) -> None:
        """The reading steps of ``entry``, then the route they choose; once more on the claim's
        route when the update-only route cannot finish (what it updated is carried over), and once
        more on whatever route the new state chooses when another run took the claim between this
        attempt's read of the parent and its own claim (the next read waits for that run)."""
        carried: dict[ObjectId, CarriedUpdate] = {}
        races = 0
        while True:
            self._ctx = self._attempt(manifests, carried)
            try:
                runner.run(routes.reading(entry, self.opts), self._ctx)
            finally:
                early.drop(self.client)  # what the run read early and did not take is out of date now
            try:
                runner.run(routes.choose(entry, self._ctx, may_skip_claim).rest, self._ctx)
                return
            except StartOver as again:
                # The parent changed while this run read or updated the set (another run,
                # kubectl), or an update was refused: what was listed may be out of date.
                carried, may_skip_claim = again.carried, False
            except RaceLost as lost:
                races += 1
                if races >= RACES_BEFORE_GIVING_UP:
                    raise lost.error from None


# Actions after which nothing of the object is waited for to be ready.
_NOT_AWAITED = frozenset({"pruned", "deleted", "kept", "disbanded", "failed", "skipped"})


def _show_rules(report: Report, manifests: list[Manifest], rule_options: Mapping[str, Any]) -> None:
    """Each applied (or, in check mode, previewed) member's result names the readiness rule it is
    judged by (``readiness_rule``), found from its manifest: kind, annotations and spec."""
    # By the namespace the manifest names, else (the set's namespace, given by the run) by name alone:
    # two members of one kind and name in two namespaces may be judged by different rules.
    by_name: dict[tuple[str, str, str | None], KubeObject] = {}
    by_id: dict[ObjectId, KubeObject] = {}
    for manifest in manifests:
        gk = readiness.group_kind_of(manifest.mapping)
        name, namespace = manifest.metadata.get("name"), manifest.metadata.get("namespace")
        by_name.setdefault((gk.group, gk.kind, name), manifest.mapping)
        if namespace and name:
            by_id.setdefault(ObjectId(gk.group, gk.kind, namespace, name), manifest.mapping)
    for result in report.objects:
        obj = by_id.get(result.id) or by_name.get((result.id.group, result.kind, result.name))
        if obj is not None and result.action not in _NOT_AWAITED:
            result.readiness_rule = readiness.rule_for(obj, **rule_options)


# ----- a release that rolls back when it fails (on_failure: rollback) --------------------------


class RolledBack(ApplySetError):
    """A release failed and the set was rolled back to ``revision``: the task fails all the same."""

    revision: int | None = None  # the revision the set was rolled back to
    cause: ApplySetError | None = None  # the error of the release that failed


def apply_or_roll_back(make_engine: Callable[[Options], Engine], opts: Options, manifests: list[Manifest]) -> Report:
    """Run ``make_engine(opts).apply(manifests)``; with ``on_failure: rollback`` (and not in check
    mode), a failure applies the last good revision before it in a second run, whose wait (if
    any) has ``rollback_timeout`` of its own.

    Returns:
        The report of a run that went through.

    Raises:
        RolledBack: the release failed and the rollback went through (``err.report`` is the
            rollback's, ``err.revision`` the revision returned to).
        ApplySetError: the release failed and there was nothing to roll back to, or the rollback
            failed too (the message names both errors).
    """
    engine = make_engine(opts)
    try:
        return engine.apply(manifests)
    except ApplySetError as err:
        settings = opts.history
        parent = engine.parent
        # A release whose wait failed after it recorded its revision is no deployed revision (helm
        # marks it failed too); on_failure: rollback marks it before it looks for the last good one.
        waited_in_vain = isinstance(err, WaitTimeout) and settings is not None and settings.on_failure != "rollback"
        if settings is not None and (rolls_back(opts) or waited_in_vain):
            _mark_failed(engine, parent, settings, err)
        refused = isinstance(err, (InputError, GuardError, ParentError))  # before any member write
        if opts.dry_run or settings is None or settings.on_failure != "rollback" or parent is None or refused:
            raise
        if engine.recorded_revision is None and not _wrote_members(err.report):
            _say(err, "nothing needed rolling back: the release wrote no member")
            raise
        target, why_none = _last_good_before(engine, parent, settings)
        if target is None:
            if why_none:
                _say(err, why_none)
            raise
        # The rollback is a plan of its own, which nobody approved: it is bound to none.
        again = dataclasses.replace(opts, waiting=dataclasses.replace(opts.waiting, timeout=settings.rollback_timeout),
                                    approved_plan=None,
                                    history=dataclasses.replace(settings, rollback_to=target, on_failure=None))
        rollback = make_engine(again)
        try:
            rollback.apply([])
        except ApplySetError as second:
            second.message = (f"the release failed ({err.message}), and so did the rollback to revision "
                              f"{target}: {second.message}")
            _mark_failed(rollback, parent, settings, second)
            _keep_release_plan(rollback.report, err.report)
            raise
        raise _rolled_back(err, rollback.report, target) from err


def _keep_release_plan(report: Report, release: Report | None) -> None:
    """The result of a release rolled back shows the release's plan (the one approved) as
    ``plan_id`` and ``plan``, and the rollback's id apart, as ``rollback_plan_id``."""
    if release is None or release.plan_id is None:
        return
    report.rollback_plan_id = report.plan_id
    report.plan_id, report.plan = release.plan_id, release.plan


def _mark_failed(engine: Engine, parent: Parent | None, settings: history.Settings, err: ApplySetError) -> None:
    """The revision a release or a rollback recorded marked failed, as it failed after recording it
    (its wait); when it cannot be, ``err`` says so (the history then shows it deployed)."""
    number, discovery = engine.recorded_revision, engine.parent_discovery
    namespace = history.home(parent, settings) if parent is not None and settings is not None else None
    secrets = discovery.for_group_kind(spec.SECRET_KIND) if discovery is not None else None
    if number is None or namespace is None or parent is None or secrets is None:
        return
    try:
        history.mark_failed(engine.client, secrets, parent, namespace, number)
    except ApplySetError as failed:
        _say(err, f"revision {number} could not be marked failed in the history ({failed.message}), so it is listed "
                  "as deployed though it did not go through")


def _wrote_members(report: Report | None) -> bool:
    """Whether the failed release changed a member (a stop before any member write did not)."""
    return report is not None and any(o.action in CHANGING_ACTIONS for o in report.objects)


def _say(err: ApplySetError, aftermath: str) -> None:
    """Add to the failed release's error what the rollback did not do, and why."""
    err.message = f"{err.message}; {aftermath}"
    err.args = (err.message,)


def _rolled_back(err: ApplySetError, report: Report, target: int) -> RolledBack:
    """The error of a release that failed and was rolled back: what the rollback did (from its
    report), then what failed, without what the failed run said it left as it was (the rollback
    changed that); named by the objects that failed. The result shows the rollback's objects
    and, before its own, the hooks and warnings of the failed release."""
    done = RolledBack(f"the release failed and the set was rolled back to revision {target} (the rollback "
                      f"{_what_it_did(report)}); what failed: {err.what_failed}",
                      obj=_failed_objects(err) or err.obj, fix=err.fix or "fix the release and run again")
    if err.report is not None:
        report.hooks[:0] = err.report.hooks
        report.warnings[:0] = err.report.warnings
    _keep_release_plan(report, err.report)
    done.report, done.revision, done.cause = report, target, err
    return done


def _what_it_did(report: Report) -> str:
    counts = report.summary()
    applied = counts["created"] + counts["configured"] + counts.get("replaced", 0)
    done = [f"re-applied {applied} object{'s' if applied != 1 else ''}"] if applied else []
    done += [f"pruned {counts['pruned']}"] if counts["pruned"] else []
    return " and ".join(done) if done else "changed nothing"


def _failed_objects(err: ApplySetError) -> str | None:
    """The objects that failed (or were not ready), as messages name them; None when none is named."""
    named = [o.ref for o in err.report.failed_objects] if err.report is not None else []
    for entry in (err.details or {}).get("unready") or ():
        where = f"{entry['namespace']}/{entry['name']}" if entry.get("namespace") else entry.get("name")
        named.append(f"{entry.get('kind')} {where}")
    return ", ".join(named) or None


def _last_good_before(engine: Engine, parent: Parent, settings: history.Settings) -> tuple[int | None, str | None]:
    """``(number, None)``: the newest deployed revision before the failed one; ``(None, why)``
    when there is none (``why`` None when the set keeps no history). The failed run's own
    revision, if it recorded one, is marked failed first."""
    namespace = history.home(parent, settings)
    if namespace is None or not parent.exists:
        return None, None
    client = engine.client
    discovery = engine.parent_discovery
    if discovery is None:  # never: read-parent, which gave the parent, read what the server serves too
        raise AssertionError("the parent was read without discovery")
    secrets = history.secrets_resource(discovery)
    failed = engine.recorded_revision
    if failed is not None:
        history.mark_failed(client, secrets, parent, namespace, failed)
    listed = history.revisions(history.list_secrets(client, secrets, namespace, parent.id))
    below = failed if failed is not None else (parent.revision or 0) + 1
    good = history.last_good(listed, below)
    if good is not None:
        return good.number, None
    if any(r.number < below for r in listed):
        return None, f"nothing to roll back to: no revision before revision {below} was deployed"
    return None, "nothing to roll back to: this was the set's first release"
