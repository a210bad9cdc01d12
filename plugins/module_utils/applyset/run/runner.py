"""The loop that runs a route: named steps, one after the other, over one ``RunContext``.

A route is a list of ``Step`` values built before anything is sent (``steps.py`` builds them).
The runner runs each step in order. When a step raises, or records a failure of the run in
``RunContext.failure`` (objects that did not go through), the later steps are passed over,
except those marked ``always`` (the release of the claim): they run while the error is on its
way out, and the first error is the one raised. So every route that takes the claim releases
it, with the hint that is safe for how far the run got, whatever stopped it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

# What a step may send, as the route tables (and their tests) name it.
READ = "read"  # GETs and LISTs, nothing written
DECIDE = "decide"  # no request at all
DRY_RUN = "dry-run"  # server-side dry runs only (check mode)
CLAIM = "claim"  # the parent written with the union hint and this run's claim
WRITE = "write"  # members written (applied, labelled, deleted)
RELEASE = "release"  # the parent written with the hint the run earned, claim dropped
WAIT = "wait"  # GETs until ready or gone, bounded


@dataclass(frozen=True)
class Step:
    """One named step of a route: ``run(ctx)`` does it; ``effect`` says what it may send (``READ``,
    ``DECIDE``, ``DRY_RUN``, ``CLAIM``, ``WRITE``, ``RELEASE``, ``WAIT``); an ``always`` step runs
    even after an earlier step failed."""

    name: str
    run: Callable[[Any], None]
    effect: str
    always: bool = False


@dataclass
class RunContext:
    """What the steps of one attempt of a run share: the connection and options, the recorder of
    the report, and what each step hands on (each field is set by one step, named beside it).

    ``carried`` holds what an earlier attempt without the claim wrote (``without_claim.Carried``):
    it is passed in, never changed by the attempt that reads it.
    """

    client: Any
    opts: Any
    run_id: str
    parent_spec: Any
    namespace: str | None
    manifests: Any  # the desired objects (apply routes), None for teardown
    record: Any  # report.Recorder
    carried: Any  # without_claim.Carried
    discovery: Any = None  # read-parent
    parent: Any = None  # read-parent: parent.Parent
    plan: Any = None  # plan: plan.Plan
    live: dict | None = None  # list-live: {ObjectId: listing.LiveObject}
    hooks: Any = None  # split-hooks or find-hooks: hooks.HookSet
    decisions: Any = None  # decide: decide.Decisions (apply routes)
    removal: Any = None  # list-members: teardown.Removal (uninstall, disband)
    in_place: Any = None  # update-in-place: without_claim.Updates
    pending_revision: Any = None  # update-in-place with a history: the revision created, not yet pointed to
    claim: Any = None  # claim: claim.Claim, until the release
    revision: int | None = None  # record-revision: the number of the revision this run recorded
    rollback_of: int | None = None  # load-revision: the revision a rollback applies again
    set_managers: frozenset = frozenset()  # load-revision: every field manager the set's kept revisions used
    failure: Any = None  # a step's ApplySetError for objects that failed; raised after the release
    stopped_at: str | None = None  # the runner: the name of the step that raised

    @property
    def stopped(self) -> bool:
        """A step raised: the later ones are passed over (but those that always run)."""
        return self.stopped_at is not None

    @property
    def failing(self) -> bool:
        """Whether the run is on its way out with an error (the ``always`` steps then clean up)."""
        return self.stopped or self.failure is not None

    @property
    def report(self):
        """The report of this attempt."""
        return self.record.report

    @property
    def set_ref(self) -> str:
        """``ApplySet Kind namespace/name``, as errors of the run name the set (``parent_model.set_name``)."""
        return self.parent.set_ref

    def describe_hint(self, group_kinds, namespaces) -> None:
        """Show the parent in the result, with the hint it records (or would, in check mode)."""
        report = self.record.report
        report.applyset = {**report.applyset, **self.parent.describe(),
                           "group_kinds": sorted(map(str, group_kinds)), "namespaces": sorted(namespaces)}


def run(steps: list[Step], ctx: RunContext) -> None:
    """Run ``steps`` in order over ``ctx``.

    Raises:
        BaseException: the first error a step raised, once the ``always`` steps have run; else
            ``ctx.failure`` when a step recorded one.
    """
    error = None
    for step in steps:
        if ctx.failing and not step.always:
            continue
        try:
            step.run(ctx)
        except BaseException as err:  # noqa: B036 - the release must run on any way out
            if error is None:
                error = err
                ctx.stopped_at = step.name
    if error is not None:
        raise error
    if ctx.failure is not None:
        raise ctx.failure


def names(steps: list[Step]) -> list[str]:
    """The names of ``steps``, in order: what the route tables show."""
    return [step.name for step in steps]
