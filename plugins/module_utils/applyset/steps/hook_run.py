"""Running the hooks of a run (hooks.py finds them): the steps of each phase and one hook's run.

Hooks run only in runs that write members: a re-run that changes nothing stays a no-op
(``changed=0``, no hook run), and a run with hooks to run takes the claim (never the update-only
route), so two runs never run the hooks of one set at once. A hook is server-side applied under
the run's field manager, then waited for under the readiness rules (a Job until it completes; a
Job removed by its ``ttlSecondsAfterFinished`` once finished counts as done) within
``wait_timeout``; the hooks of a phase go one after the other, in their tool's order
(``hooks.Hook.order_key``). A hook that does not become ready says why, as the members' wait does
(``wait_reasons``: a Job whose pods cannot be created shows its ``FailedCreate`` event, such as a
ServiceAccount not found). ``before-hook-creation`` deletes the object first (a Job's template
is immutable, so a Job runs again only that way). The other policies delete it in the background
(its pods go too), when its tool does (Helm's ``pkg/action/hooks.go``, Argo CD's gitops-engine
sync): Helm's ``hook-succeeded`` hooks (and ours) once every hook of the phase succeeded, last run
first, each waited for until gone, so a Job's ServiceAccount hook is there for the Job's pods;
Argo CD's once the run succeeded. Helm's ``hook-failed`` deletes the hook that failed; Argo CD's
``HookFailed`` every hook of a failed run that has it.

A failed hook fails the run, naming the hook: a pre-apply failure leaves every member as it
was. on-failure hooks run when a step after the claim failed; the run still fails with the
first error. In check mode each hook is a server-side dry run, never run, and the result lists
what a real run would do. Every hook gets one entry in the result's ``hooks``, in the order run.
"""

from __future__ import annotations

import dataclasses

from ..object_meta import uid_of
from ..wait import reasons as wait_reasons
from ..wait.waiting import Target
from . import settling
from .. import spec
from ..rules import hooks as hks
from ..rules import prune as prunes
from ..errors import ApiError, ApplySetError
from ..kube.http_requests import Response
from ..rules.plan import DesiredObject
from ..run import phases
from ..run.report import NOT_TRIED_HOOK, HookEntry, Recorder
from ..rules.plan import Plan
from ..run.records import Decisions, LiveState
from ..inputs.manifests import Manifest
from ..kube.api import KubeApi
from ..kube.discovery import Discovery
from ..parent.model import Parent
from ..run.options import RunOptions
from ..run.runner import RunContext

COMPLETED, FAILED, WOULD_RUN, WOULD_RUN_ON_FAILURE = "completed", "failed", "would run", "would run on failure"
# The name of the step that runs the pre-apply hooks: a run stopped there wrote no member.
PRE_APPLY_STEP = "pre-apply-hooks"
# The hooks run so far, each with its result entry, in the order they ran (``HookSet.ran``).
HooksRan = tuple[tuple[hks.Hook, HookEntry], ...]


def due(ctx: RunContext) -> bool:
    """Whether the hooks of this apply run: it has hooks and writes members (applies one that
    is not unchanged, prunes, adopts or takes members out of the set)."""
    if not (ctx.has("hooks") and ctx.has("decisions")) or not ctx.hooks.hooks:
        return False
    decisions = ctx.decisions
    return bool(any(m.key not in decisions.unchanged for m in ctx.plan.members)
                or decisions.prune.with_verdict(prunes.PRUNE) or decisions.prune.with_verdict(prunes.KEEP)
                or decisions.adopted)


# ----- the steps that find the hooks ------------------------------------------------------------


def split_hooks(ctx: RunContext) -> None:
    """Step split-hooks: the objects given (``ctx.manifests``, or the chart's or revision's:
    ``ctx.rendered``) split into the hooks (``ctx.hooks``) and the members to apply (``ctx.desired``),
    before the plan."""
    given = ctx.rendered if ctx.has("rendered") else ctx.manifests
    ctx.desired, ctx.hooks = _split(given, ctx.namespace, ctx.parent, ctx.discovery, ctx.record)


def find_delete_hooks(ctx: RunContext) -> None:
    """Step find-hooks (uninstall): the hooks among the objects given with ``state: absent``; the
    other objects are not used (the members are what the cluster holds)."""
    given = ctx.rendered if ctx.has("rendered") else ctx.manifests
    _members, ctx.hooks = _split(given, ctx.namespace, ctx.parent, ctx.discovery, ctx.record)


def _split(given: list[Manifest] | None, namespace: str | None, parent: Parent, discovery: Discovery,
           record: Recorder) -> tuple[list, hks.HookSet]:
    """The objects ``given``, split into members and hooks (``hooks.split``; ``namespace`` is the
    run's default one); warns about hooks."""
    if not given:
        return list(given or []), hks.NO_HOOKS
    default_namespace = namespace or parent.namespace or None
    members, hook_set = hks.split(given, discovery, parent.id, default_namespace)
    record.warn(*hook_set.warnings)
    return members, dataclasses.replace(hook_set, installing=not parent.exists)


# ----- the steps that run them -------------------------------------------------------------------


def pre_apply(ctx: RunContext) -> None:
    """Step pre-apply-hooks, right after the claim and before any member is written; when one
    fails, every member is listed as not tried."""
    if due(ctx):
        ctx.hooks = dataclasses.replace(ctx.hooks, started=True)
        ctx.hooks, error = run_phase(ctx.client, ctx.opts, ctx.record, ctx.hooks, hks.PRE_APPLY)
        if error is not None:
            ctx.record.untried(ctx.plan.in_apply_order, NOT_TRIED_HOOK)
            raise error


def post_apply(ctx: RunContext) -> None:
    """Step post-apply-hooks, once the members are applied (and, with ``wait``, ready: the wait
    is done here when it has not been, so that a failed wait runs the on-failure hooks)."""
    if not due(ctx):
        return
    installing = ctx.hooks.installing
    later = ctx.hooks.of_phase(hks.POST_APPLY, installing) + ctx.hooks.of_phase(hks.ON_FAILURE, installing)
    if ctx.opts.waiting.enabled and later:
        settling.wait_until_settled(ctx)
    ctx.hooks, error = run_phase(ctx.client, ctx.opts, ctx.record, ctx.hooks, hks.POST_APPLY)
    if error is not None:
        raise error
    finish_run(ctx.client, ctx.opts, ctx.record, ctx.hooks.ran)


def on_failure(ctx: RunContext) -> None:
    """Step on-failure-hooks (always): when a step after the pre-apply hooks' start failed. The
    run fails with its first error whatever these hooks do; a failed one is a warning too."""
    if not (ctx.failing and ctx.has("hooks") and ctx.hooks.started):
        return
    delete_after_failed_run(ctx.client, ctx.opts, ctx.record, ctx.hooks.ran)
    try:
        ctx.hooks, error = run_phase(ctx.client, ctx.opts, ctx.record, ctx.hooks, hks.ON_FAILURE)
        if error is not None:
            raise error
        finish_run(ctx.client, ctx.opts, ctx.record, ctx.hooks.ran, hks.ON_FAILURE)
    except ApplySetError as err:
        ctx.record.warn(f"an on-failure hook failed too: {err}")


def pre_delete(ctx: RunContext) -> None:
    """Step pre-delete-hooks (uninstall), after the claim and before any member is deleted."""
    if ctx.has("hooks") and ctx.hooks.hooks:
        ctx.hooks, error = run_phase(ctx.client, ctx.opts, ctx.record, ctx.hooks, hks.PRE_DELETE)
        if error is not None:
            raise error


def post_delete(ctx: RunContext) -> None:
    """Step post-delete-hooks (uninstall), once the members are deleted (with ``wait``: gone),
    before the parent: a failed one leaves the parent, so the next uninstall runs them again."""
    if ctx.has("hooks") and ctx.hooks.of_phase(hks.POST_DELETE, False) and ctx.opts.waiting.enabled and not ctx.opts.dry_run:
        settling.wait_members_gone(ctx)
    if ctx.has("hooks") and ctx.hooks.hooks:
        ctx.hooks, error = run_phase(ctx.client, ctx.opts, ctx.record, ctx.hooks, hks.POST_DELETE)
        if error is not None:
            raise error
    if ctx.has("hooks"):
        finish_run(ctx.client, ctx.opts, ctx.record, ctx.hooks.ran)


def preview(ctx: RunContext) -> None:
    """Step preview-hooks (check mode): what a real run would run, each hook a dry run."""
    if due(ctx):
        made = _created_namespaces(ctx.plan, ctx.live, ctx.decisions)
        for phase in (hks.PRE_APPLY, hks.POST_APPLY, hks.ON_FAILURE):
            ctx.hooks, error = run_phase(ctx.client, ctx.opts, ctx.record, ctx.hooks, phase, made)
            if error is not None:
                raise error


# ----- one phase, one hook ---------------------------------------------------------------------


@phases.spanned("hooks")
def run_phase(client: KubeApi, opts: RunOptions, record: Recorder, hooks: hks.HookSet, phase: str,
              made_namespaces: frozenset[str] = frozenset()) -> tuple[hks.HookSet, ApplySetError | None]:
    """The hooks of ``phase`` one after the other, each recorded; the first that fails stops the
    phase (in check mode all are tried, then the first refusal is the answer). Once all
    succeeded, the hook-succeeded ones of Helm's scope are deleted, last run first (Helm's
    execHook); Argo CD's wait for the end of the run (``finish_run``).

    Returns ``hooks`` with those that ran added (``HookSet.ran``, for the later phases and the
    deletions by policy), and the phase's failure for the step to raise, or None. In check mode,
    ``made_namespaces`` are those the real apply would create before its hooks run."""
    first_error, succeeded = None, []
    for hook in hooks.of_phase(phase, hooks.installing):
        obj = hook.desired
        entry: HookEntry = {"phase": phase, "apiVersion": obj.body.get("apiVersion"), "kind": obj.resource.kind,
                            "namespace": obj.namespace, "name": obj.name, "weight": hook.weight,
                            "delete_policy": sorted(hook.delete_policies)}
        if opts.dry_run:
            first_error = first_error or _preview(client, opts, hook, phase, entry, made_namespaces)
            record.hook(entry)
            continue
        entry["deleted"] = False
        error = _run(client, opts, record, hook, phase, entry)
        record.hook(entry)
        hooks = dataclasses.replace(hooks, ran=hooks.ran + ((hook, entry),))
        if error is not None:
            _delete_after_failure(client, opts, record, hook, entry, hooks.ran)
            return hooks, error
        succeeded.append((hook, entry))
    if first_error is not None:
        return hooks, first_error
    _delete_succeeded(client, opts, record, [(h, e) for h, e in succeeded if h.succeeded_scope == hks.AFTER_PHASE])
    return hooks, None


@phases.spanned("hooks")
def finish_run(client: KubeApi, opts: RunOptions, record: Recorder, ran: HooksRan, phase: str | None = None) -> None:
    """The run (or, with ``phase``, its last phase: on-failure) succeeded: Argo CD's hook-succeeded
    hooks among those that ``ran`` (``HookSet.ran``) are deleted now, last run first."""
    if opts.dry_run:
        return
    finished = [(h, e) for h, e in ran if h.succeeded_scope == hks.AFTER_RUN
                and e.get("action") == COMPLETED and (phase is None or e["phase"] == phase)]
    _delete_succeeded(client, opts, record, finished)


def _delete_succeeded(client: KubeApi, opts: RunOptions, record: Recorder, ran: list[tuple[hks.Hook, HookEntry]]) -> None:
    for hook, entry in reversed(ran):
        if hks.SUCCEEDED in hook.delete_policies and not entry["deleted"]:
            entry["deleted"] = _delete(client, opts, record, hook, entry)


def _delete_after_failure(client: KubeApi, opts: RunOptions, record: Recorder, failed: hks.Hook, failed_entry: HookEntry,
                          ran: HooksRan) -> None:
    """A hook failed, so the run fails: Helm deletes that hook if its policy says hook-failed; Argo
    CD deletes every hook of the run (``ran``) whose policy says HookFailed (``delete_after_failed_run``)."""
    if failed.succeeded_scope == hks.AFTER_PHASE and hks.FAILED in failed.delete_policies:
        failed_entry["deleted"] = _delete(client, opts, record, failed, failed_entry)
    delete_after_failed_run(client, opts, record, ran)


def delete_after_failed_run(client: KubeApi, opts: RunOptions, record: Recorder, ran: HooksRan) -> None:
    """The run failed: Argo CD's hooks among those that ``ran`` (``HookSet.ran``) with HookFailed are
    deleted (its sync deletes them whether each hook itself failed or succeeded)."""
    if opts.dry_run:
        return
    for hook, entry in reversed(ran):
        if hook.succeeded_scope == hks.AFTER_RUN and hks.FAILED in hook.delete_policies and not entry["deleted"]:
            entry["deleted"] = _delete(client, opts, record, hook, entry)


def _failure(obj: DesiredObject, phase: str, reason: str) -> ApplySetError:
    return ApplySetError(f"the {phase} hook {obj.ref} failed: {reason}", obj=f"{obj.manifest.source} ({obj.ref})",
                         fix="look at the hook object and its pods (kubectl describe, kubectl logs), fix it and "
                         "run again")


def _apply(client: KubeApi, opts: RunOptions, obj: DesiredObject, dry_run: bool) -> Response:
    return client.apply(obj.resource, obj.body, field_manager=opts.field_manager, force=opts.force_conflicts,
                        dry_run=dry_run, field_validation=opts.field_validation)


def _run(client: KubeApi, opts: RunOptions, record: Recorder, hook: hks.Hook, phase: str,
         entry: HookEntry) -> ApplySetError | None:
    """Run one hook: delete it first (before-hook-creation), apply it, wait. Fills ``entry`` (its
    ``uid`` too, for the deletion by policy); returns the hook's failure, or None."""
    obj = hook.desired
    try:
        if hks.BEFORE_CREATION in hook.delete_policies:
            entry["replaced"] = _delete_existing(client, opts, record, obj)
        uid = uid_of(_apply(client, opts, obj, dry_run=False).body)
        entry["uid"] = uid
        _wait(client, opts, record, obj, uid)
    except ApplySetError as err:
        entry.update({"action": FAILED, "reason": err.message})
        return _failure(obj, phase, err.message)
    entry["action"] = COMPLETED
    return None


@phases.spanned("hook waits")
def _wait(client: KubeApi, opts: RunOptions, record: Recorder, obj: DesiredObject, uid: str | None) -> None:
    """Wait until the hook is ready (a Job: complete); a timeout says why, as the members' wait
    does: the Job's and its pods' Warning events (a pod that cannot be created names its cause)."""
    target = Target(obj.resource, obj.namespace, obj.name)
    wait_reasons.wait_ready_or_explain(client, [target], {target: wait_reasons.as_applied(obj.body, uid)},
                                       opts.wait_settings(), warn=record.warn)


def _delete_existing(client: KubeApi, opts: RunOptions, record: Recorder, obj: DesiredObject) -> bool:
    """Delete a hook object left by an earlier run and wait (bounded) until it is gone; whether
    there was one."""
    live = client.get(obj.resource, obj.name, obj.namespace)
    if live is None:
        return False
    uid = uid_of(live)
    try:
        client.delete(obj.resource, obj.name, obj.namespace, uid=uid, propagation_policy="Background")
    except ApiError as err:
        if err.status not in (404, 409):
            raise
    settling.wait_gone(client, [settling.Gone(obj.resource, obj.namespace, obj.name, uid)],
                       timeout=opts.waiting.timeout, warn=record.warn)
    return True


def _delete(client: KubeApi, opts: RunOptions, record: Recorder, hook: hks.Hook, entry: HookEntry) -> bool:
    """Delete the hook object this run created by its policy (in the background: a Job's pods go
    too); Helm's scope then waits until it is gone, as Helm does, so that what runs next never
    meets it. A failure is a warning, not the run's."""
    obj, uid = hook.desired, entry.get("uid")
    try:
        client.delete(obj.resource, obj.name, obj.namespace, uid=uid, propagation_policy="Background")
        if hook.succeeded_scope == hks.AFTER_PHASE:
            settling.wait_gone(client, [settling.Gone(obj.resource, obj.namespace, obj.name, uid)],
                               timeout=opts.waiting.timeout, warn=record.warn)
    except ApiError as err:
        if err.status in (404, 409):
            return True  # gone already (a Job's ttlSecondsAfterFinished), or replaced by someone else's
        record.warn(f"hook {obj.ref}: could not delete it by its delete policy: {err.message}")
        return False
    except ApplySetError as err:
        record.warn(f"hook {obj.ref}: deleted by its delete policy, but not gone: {err.message}")
    return True


def _preview(client: KubeApi, opts: RunOptions, hook: hks.Hook, phase: str, entry: HookEntry,
             made_namespaces: frozenset[str]) -> ApplySetError | None:
    """Check mode: a server-side dry run of the hook's apply; never run, never waited for."""
    obj = hook.desired
    entry["action"] = WOULD_RUN_ON_FAILURE if phase == hks.ON_FAILURE else WOULD_RUN
    try:
        _apply(client, opts, obj, dry_run=True)
    except ApiError as err:
        if hks.BEFORE_CREATION in hook.delete_policies and err.status in (409, 422):
            entry["reason"] = "the object left by an earlier run would be deleted and created again"
            return None
        if err.status == 404 and "namespaces" in (err.message or "") and obj.namespace in made_namespaces:
            entry["reason"] = f"namespace {obj.namespace} would be created by this run"
            return None
        entry.update({"action": FAILED, "reason": err.message})
        return _failure(obj, phase, f"its dry run was refused: {err.message}")
    return None


def _created_namespaces(plan: Plan, live: LiveState, decisions: Decisions) -> frozenset[str]:
    """The namespaces a real apply would create before its hooks run (check mode)."""
    made = {m.name for m in plan.members if m.resource.group_kind == spec.NAMESPACE_KIND and m.key not in live}
    return frozenset(made | ({decisions.namespace_to_create} if decisions.namespace_to_create else set()))
