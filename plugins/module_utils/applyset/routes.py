"""The order of every route of a run, as data: lists of named steps built before anything is sent.

An entry point (apply, uninstall, disband) first runs its reading steps (``reading``): they read
and decide, and write nothing. What they found chooses the route (``choose``); the route's
remaining steps then run. Every route that writes takes the claim with the same ``claim`` step
and ends with the same ``release`` step, which runs whatever stopped the run. Check mode is
decided when the route is built: a preview takes no claim and sends dry runs only.

    apply         read-parent, split-hooks, plan, list-live, decide, plan-id, make-namespaces, claim,
                  pre-apply-hooks, [label-adopted], apply, [prune], post-apply-hooks,
                  on-failure-hooks, release, [wait]
                  with wait and prune: ..., apply, prune-early, wait-ready, prune,
                  post-apply-hooks, on-failure-hooks, release, wait-gone
    preview       read-parent, split-hooks, plan, list-live, decide, plan-id, show-final-hint,
                  preview-namespace, apply, [prune], preview-hooks
    update-only   read-parent, split-hooks, plan, list-live, decide, plan-id, update-in-place,
                  confirm-parent-unchanged, record, [wait]     (never when hooks are due)
    uninstall     read-parent, list-members, decide-removal, find-hooks, plan-id, claim, pre-delete-hooks,
                  delete-members, post-delete-hooks, delete-parent, release, [wait-gone]
                                              (check mode: no claim, no release, no wait)
    disband       read-parent, list-members, plan-id, claim, unlabel-members, delete-parent, release
                                              (check mode: no claim, no release)
    a teardown whose parent does not exist: read-parent, warn-missing-parent

With a history (``history_steps.keeps_history``): apply adds record-revision before the release
and trim-history after it, update-only ends with record-revision, uninstall and disband with
delete-history; ``rollback_to`` adds load-revision after read-parent; a chart (``helm``) adds
render-chart after read-parent (never with ``rollback_to``: the revision's objects are applied),
and to an uninstall, whose chart's pre-/post-delete hooks then run.

plan-id (steps/approval.py) is the plan and its id, and the refusal of a plan that is not the
approved one: after every read, before every write.

Each step declares what it reads, may read and sets of the values steps hand on (``Step``);
``tests/unit/test_routes.py`` checks that every read is set by an earlier step of each route.
``docs/architecture.md`` shows the same tables; ``tests/unit/test_routes.py`` checks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .apply import member_inputs
from .steps import applying, approval, chart_crds_apply, chart_render, claim, decide, digesting, history_steps, hook_run
from .steps import pruning, release_takeover, rollback, set_dependencies
from .steps import settling, teardown, without_claim
from .run.options import Options, RunOptions
from .run.runner import CLAIM, DECIDE, DRY_RUN, READ, RELEASE, WAIT, WRITE, RunContext, Step

APPLY, PREVIEW, UPDATE_ONLY = "apply", "preview", "update-only"
UNINSTALL, DISBAND, NOTHING_TO_REMOVE = "uninstall", "disband", "nothing-to-remove"
# What applying and pruning members read of what the reading steps hand on.
_APPLY_READS = "decisions live parent plan"
_PRUNE_READS = "decisions live parent"

READ_PARENT = Step("read-parent", decide.read_parent, READ, sets="discovery parent")
CLAIM_STEP = Step("claim", claim.take, CLAIM, reads="parent", may_read="decisions removal")
RELEASE_STEP = Step("release", claim.release, RELEASE, always=True, reads="discovery parent",
                    may_read="decisions plan removal")


@dataclass(frozen=True)
class Route:
    """A route: its ``name`` and every step in order; the first ``reading`` of them are the entry
    point's reading steps, which ran before the route was chosen."""

    name: str
    steps: tuple[Step, ...]
    reading: int

    @property
    def rest(self) -> list[Step]:
        """The steps after the reading ones."""
        return list(self.steps[self.reading:])


def reading(entry: str, opts: RunOptions) -> list[Step]:
    """The steps an entry point (APPLY, UNINSTALL or DISBAND) runs before its route is chosen."""
    if entry == APPLY:
        first = [READ_PARENT, rollback.LOAD_REVISION] if rollback.rolls_back(opts) else [READ_PARENT]
        if set_dependencies.waits_for_sets(opts):
            first.insert(0, set_dependencies.WAIT_FOR_SETS)  # before any read of the set: no claim while it waits
        if chart_render.renders_chart(opts):
            first.append(chart_render.RENDER_CHART)
        return [*first,
                Step("split-hooks", hook_run.split_hooks, DECIDE, reads="discovery parent", may_read="rendered",
                     sets="desired hooks"),
                digesting.VERSIONING,
                *([digesting.CONFIG_DIGEST] if digesting.digests_config(opts) else []),
                Step("plan", decide.make_plan, DECIDE, reads="desired discovery parent", may_read="chart_crds",
                     sets="plan"),
                Step("list-live", decide.list_live, READ, reads="discovery parent plan", sets="live"),
                Step("decide", decide.decide, READ, reads="discovery live parent plan", may_read="chart_crds",
                     sets="decisions"),
                Step("plan-id", approval.plan_apply, DECIDE, reads="decisions hooks live parent plan")]
    if entry == UNINSTALL and chart_render.renders_chart(opts):
        return [READ_PARENT, chart_render.RENDER_CHART]  # for the chart's delete hooks
    return [READ_PARENT]


# After the apply (and the prune), before the release: the post-apply hooks, and the on-failure
# hooks, which run whatever stopped the run.


def _hooks(name: str, run: Callable[[RunContext], None], effect: str, always: bool = False,
           reads: str = "hooks") -> Step:
    """A step that runs hooks: it reads the hooks found (and the plan, decisions and live state where
    there are some: what a wait before the hooks and a refused dry run of one look up) and hands on
    which ran."""
    return Step(name, run, effect, always, reads=reads, may_read="decisions discovery live plan", sets="hooks")


_HOOKS_AFTER_APPLY = (_hooks("post-apply-hooks", hook_run.post_apply, WRITE),
                      _hooks("on-failure-hooks", hook_run.on_failure, WRITE, always=True))


def for_apply(opts: Options) -> Route:
    """The route of a real apply: the claim before any member write (but the namespaces the parent
    needs), the release last and always, the wait after it."""
    # A take-over first dry-runs the release's objects: a conflict refuses it before any write.
    check = [release_takeover.CHECK_TAKE_OVER] if opts.helm.take_over else []
    tail = [*check, Step("make-namespaces", applying.make_namespaces, WRITE, reads="decisions discovery live parent"),
            CLAIM_STEP, *_chart_crds(opts, WRITE), _hooks(hook_run.PRE_APPLY_STEP, hook_run.pre_apply, WRITE)]
    if (opts.adopt_legacy is not None and opts.prune) or opts.helm.take_over:
        tail.append(Step("label-adopted", applying.label_adopted, WRITE, reads="decisions parent"))
    tail.append(Step("apply", applying.apply_phases, WRITE, reads=_APPLY_READS))
    if opts.prune and opts.waiting.enabled:
        # Prune after ready (prune_order.py): a wait that fails prunes nothing; the parent stays the union.
        tail += [Step("prune-early", pruning.prune_early_step, WRITE, reads=_PRUNE_READS),
                 Step("wait-ready", settling.wait_ready_before_prune, WAIT, reads="plan"),
                 Step("prune", pruning.prune_step, WRITE, reads=_PRUNE_READS), *_retire(opts), *_release(opts),
                 Step("wait-gone", settling.wait_pruned_gone, WAIT, reads="discovery plan")]
        return _route(APPLY, APPLY, opts, tail)
    if opts.prune:
        tail.append(Step("prune", pruning.prune_step, WRITE, reads=_PRUNE_READS))
    tail += [*_retire(opts), *_release(opts)]
    if opts.waiting.enabled:
        tail.append(Step("wait", settling.wait_until_settled, WAIT, reads="plan", may_read="discovery"))
    return _route(APPLY, APPLY, opts, tail)


def _chart_crds(opts: RunOptions, effect: str) -> list[Step]:
    """With a chart rendered: its crds/ CRDs applied before its hooks and members, outside the set."""
    if not chart_render.renders_chart(opts):
        return []
    return [Step("apply-chart-crds", chart_crds_apply.apply_chart_crds, effect, reads="chart_crds discovery")]


def _retire(opts: RunOptions) -> list[Step]:
    """With ``helm.take_over``: the release's records deleted once its objects are members."""
    if not opts.helm.take_over:
        return []
    return [Step("retire-helm-release", release_takeover.retire, WRITE, reads="decisions discovery")]


def _release(opts: RunOptions) -> list[Step]:
    """The end of an apply: the hooks after it, the revision (history.py) written just before the
    release that points at it, and the trim of old revisions after it."""
    if not history_steps.keeps_history(opts):
        return [*_HOOKS_AFTER_APPLY, RELEASE_STEP]
    return [*_HOOKS_AFTER_APPLY, history_steps.RECORD, RELEASE_STEP, history_steps.TRIM]


def for_preview(opts: Options) -> Route:
    """The route of check mode: dry runs only, no claim, no release, no wait."""
    tail = [Step("show-final-hint", decide.show_final_hint, DECIDE, reads="decisions parent"),
            Step("preview-namespace", applying.preview_namespace, DRY_RUN, reads="decisions discovery"),
            *_chart_crds(opts, DRY_RUN), Step("apply", applying.apply_phases, DRY_RUN, reads=_APPLY_READS)]
    if opts.prune:
        tail.append(Step("prune", pruning.prune_step, DRY_RUN, reads=_PRUNE_READS))
    tail.append(_hooks("preview-hooks", hook_run.preview, DRY_RUN))
    return _route(PREVIEW, APPLY, opts, tail)


def for_update_only(opts: Options) -> Route:
    """The route of a run whose only writes are in-place updates (without_claim.py): each
    conditional on the listed object, no claim, no parent write; a refusal or a parent written
    meanwhile starts the run over on the apply route."""
    history = history_steps.keeps_history(opts)
    # With a history, the revision's first Secret is created alongside the updates when the set
    # differs from the recorded one; its pointer's conditional write then stands in for the
    # confirmation's GET (history_steps.py).
    update = without_claim.update_in_place(history_steps.revision_alongside if history else None)
    tail = [Step("update-in-place", update, WRITE, reads="decisions discovery live parent plan", sets="in_place"),
            Step("confirm-parent-unchanged", without_claim.confirm_parent_unchanged, READ,
                 reads="decisions in_place parent"),
            Step("record", without_claim.record_in_plan_order, DECIDE, reads="decisions in_place live parent plan")]
    if history:
        tail.append(history_steps.RECORD_IN_PLACE)
    if opts.waiting.enabled:
        tail.append(Step("wait", settling.wait_until_settled, WAIT, reads="plan", may_read="discovery"))
    return _route(UPDATE_ONLY, APPLY, opts, tail)


def for_uninstall(opts: RunOptions) -> Route:
    """The route of ``state: absent``: members deleted under the prune rules, then the parent."""
    effect = DRY_RUN if opts.dry_run else WRITE
    tail = [Step("list-members", teardown.list_members("remove"), READ, reads="discovery parent", sets="removal"),
            Step("decide-removal", teardown.decide_removal, DECIDE, reads="parent removal", may_read="chart_crds",
                 sets="removal"),
            Step("find-hooks", hook_run.find_delete_hooks, DECIDE, reads="discovery parent", may_read="rendered",
                 sets="hooks"),
            Step("plan-id", approval.plan_uninstall, DECIDE, reads="hooks parent removal")]
    tail += _claimed(opts, [_hooks("pre-delete-hooks", hook_run.pre_delete, effect),
                            Step("delete-members", teardown.delete_members, effect, reads="parent removal"),
                            _hooks("post-delete-hooks", hook_run.post_delete, effect, reads="hooks removal"),
                            Step("delete-parent", teardown.delete_parent(show_diff=True), effect, reads="parent")])
    if history_steps.keeps_history(opts) and not opts.dry_run:
        tail.append(history_steps.DELETE_ALL)
    if opts.waiting.enabled and not opts.dry_run:
        tail.append(Step("wait-gone", settling.wait_members_gone, WAIT, reads="removal"))
    return _route(UNINSTALL, UNINSTALL, opts, tail)


def for_disband(opts: RunOptions) -> Route:
    """The route of ``state: disbanded``: members left in place without the label, then the parent."""
    effect = DRY_RUN if opts.dry_run else WRITE
    tail = [Step("list-members", teardown.list_members("disband"), READ, reads="discovery parent", sets="removal"),
            Step("plan-id", approval.plan_disband, DECIDE, reads="parent removal")]
    tail += _claimed(opts, [Step("unlabel-members", teardown.unlabel_members, effect, reads="parent removal"),
                            Step("delete-parent", teardown.delete_parent(show_diff=False), effect, reads="parent")])
    if history_steps.keeps_history(opts) and not opts.dry_run:
        tail.append(history_steps.DELETE_ALL)
    return _route(DISBAND, DISBAND, opts, tail)


def _claimed(opts: RunOptions, writes: list[Step]) -> list[Step]:
    """``writes`` between the claim and its release; in check mode, neither."""
    return list(writes) if opts.dry_run else [CLAIM_STEP, *writes, RELEASE_STEP]


def for_missing_parent(entry: str, opts: RunOptions) -> Route:
    """The route of an uninstall or disband whose parent does not exist: a warning."""
    action = "remove" if entry == UNINSTALL else "disband"
    return _route(NOTHING_TO_REMOVE, entry, opts,
                  [Step("warn-missing-parent", teardown.warn_missing_parent(action), DECIDE, reads="parent")])


def _route(name: str, entry: str, opts: RunOptions, tail: list[Step]) -> Route:
    first = reading(entry, opts)
    return Route(name, tuple(first + tail), len(first))


def choose(entry: str, ctx: RunContext, may_skip_claim: bool) -> Route:
    """The route to take once the reading steps of ``entry`` have run over ``ctx``.

    Args:
        may_skip_claim: whether this attempt may take the update-only route (``reapply: changed``,
            not check mode, and not an attempt that already started over).
    """
    if entry == APPLY:
        opts = ctx.apply_options
        if opts.dry_run:
            return for_preview(opts)
        # A run with hooks to run takes the claim: two runs never run one set's hooks at once.
        # A Helm release to take over is retired under the claim; a chart's CRDs are applied under it.
        crds_due = ctx.has("chart_crds") and bool(ctx.chart_crds.to_apply)
        if (may_skip_claim and not hook_run.due(ctx) and ctx.decisions.helm is None and not crds_due
                and without_claim.blocker(member_inputs.of_run(ctx), ctx.parent, ctx.decisions, ctx.plan,
                                          ctx.live) is None):
            return for_update_only(opts)
        return for_apply(opts)
    if not ctx.parent.exists:
        return for_missing_parent(entry, ctx.opts)
    return for_uninstall(ctx.opts) if entry == UNINSTALL else for_disband(ctx.opts)
