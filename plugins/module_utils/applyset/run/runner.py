"""The loop that runs a route: named steps, one after the other, over one ``RunContext``.

A route is a list of ``Step`` values built before anything is sent (``steps.py`` builds them).
The runner runs each step in order. When a step raises, or records a failure of the run in
``RunContext.failure`` (objects that did not go through), the later steps are passed over,
except those marked ``always`` (the release of the claim): they run while the error is on its
way out, and the first error is the one raised. So every route that takes the claim releases
it, with the hint that is safe for how far the run got, whatever stopped it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar, overload

from ..errors import ApplySetError
from ..inputs.manifests import Manifest
from ..kube.api import KubeApi
from ..kube.discovery import Discovery
from ..parent.model import Parent
from ..rules.chart_crds import ChartCrds
from ..rules.hooks import HookSet
from ..rules.plan import Plan
from ..spec import ObjectId
from . import phases
from .options import Options, RunOptions
from .report import Recorder, Report

from .records import CarriedUpdate, Decisions, LiveState, Removal, Updates

if TYPE_CHECKING:  # the claim is a step's object with a heartbeat, not a record: named for the annotations only
    from ..steps.claim import Claim

_T = TypeVar("_T")

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
    even after an earlier step failed.

    What it reads and sets of the values steps hand on (``RunContext``'s ``HandedOn`` fields), each
    a space-separated list of names: ``reads`` it needs, so an earlier step of every route it is on
    sets them (tests/unit/test_routes.py checks each route); ``may_read`` it reads only when an
    earlier step set them (``ctx.has``); ``sets`` it hands on. With ``APPLYSET_STRICT_STEPS=1`` (the
    tests set it) a step that reads or sets one it does not declare is a ``StepOrderError``.
    """

    name: str
    run: Callable[[RunContext], None]
    effect: str
    always: bool = False
    reads: str = ""
    may_read: str = ""
    sets: str = ""

    def declared(self, which: str) -> frozenset[str]:
        """The names of ``which`` (``reads``, ``may_read`` or ``sets``)."""
        return frozenset(str(getattr(self, which)).split())


class StepOrderError(RuntimeError):
    """A step read what an earlier step of its route hands on, and that step has not run: a route
    built in the wrong order (tests/unit/test_routes.py checks every route), never a user's error."""


class HandedOn(Generic[_T]):
    """A value one step of a route hands on to the later ones (``RunContext.parent`` ...): read as
    the type the step sets, and refused (``StepOrderError``) while that step has not run."""

    def __init__(self, step: str):
        self.step = step
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def is_set(self, ctx: object) -> bool:
        """Whether the step has set the value on ``ctx``."""
        return vars(ctx).get("_" + self.name) is not None

    @overload
    def __get__(self, ctx: None, owner: type) -> HandedOn[_T]:
        ...

    @overload
    def __get__(self, ctx: object, owner: type | None = None) -> _T:
        ...

    def __get__(self, ctx: object | None, owner: type | None = None) -> Any:
        if ctx is None:  # on the class: the descriptor itself
            return self
        if not self.is_set(ctx):
            raise StepOrderError(f"{self.name} is read before the {self.step} step has set it")
        _check_declared(ctx, self.name, "reads", ("reads", "may_read", "sets"))
        return vars(ctx)["_" + self.name]

    def __set__(self, ctx: object, value: _T) -> None:
        _check_declared(ctx, self.name, "sets", ("sets",))
        vars(ctx)["_" + self.name] = value


def _check_declared(ctx: object, name: str, doing: str, allowed: tuple[str, ...]) -> None:
    """With strict steps, the running step must declare ``name`` among ``allowed``."""
    running = vars(ctx).get("step")
    if not vars(ctx).get("strict_steps") or running is None:
        return
    if not any(name in running.declared(which) for which in allowed):
        raise StepOrderError(f"the {running.name} step {doing} {name}, which it does not declare (routes.py)")


def strict_steps() -> bool:
    """Whether steps are held to what they declare (``APPLYSET_STRICT_STEPS=1``; the tests set it)."""
    return os.environ.get("APPLYSET_STRICT_STEPS") == "1"


@dataclass
class RunContext:
    """What the steps of one attempt of a run share: the connection and options, the recorder of
    the report, and what each step hands on (each field is set by one step, named beside it).

    What a step hands on to the later steps of its route (``discovery``, ``parent``, ``plan``,
    ``decisions`` ...) is read as the type that step sets, and refused before it ran
    (``HandedOn``, ``StepOrderError``); ``has`` tells whether it ran. What a run may or may not
    have at any step (``claim``, ``failure`` ...) is a plain optional field.
    ``carried`` holds what an earlier attempt without the claim wrote (``records.CarriedUpdate``
    by object): it is passed in, never changed by the attempt that reads it.
    """

    client: KubeApi
    opts: RunOptions
    run_id: str
    parent_spec: str | dict[str, Any] | None
    namespace: str | None
    manifests: list[Manifest] | None  # the caller's objects (apply routes), None for teardown; never changed
    record: Recorder
    carried: dict[ObjectId, CarriedUpdate]
    pending_revision: dict[str, Any] | None = None  # update-in-place with a history: the revision created, not yet pointed to
    claim: Claim | None = None  # claim, until the release
    revision: int | None = None  # record-revision: the number of the revision this run recorded
    rollback_of: int | None = None  # load-revision: the revision a rollback applies again
    set_managers: frozenset[str] = frozenset()  # load-revision: every field manager the set's kept revisions used
    failure: ApplySetError | None = None  # a step's error for objects that failed; raised after the release
    stopped_at: str | None = None  # the runner: the name of the step that raised
    step: Step | None = None  # the runner: the step running
    strict_steps: bool = field(default_factory=strict_steps)  # steps held to what they declare (Step)

    # What a step hands on to the later steps of its route (see HandedOn), by the step that sets it.
    discovery = HandedOn[Discovery]("read-parent")
    parent = HandedOn[Parent]("read-parent")
    rendered = HandedOn[list[Manifest]]("render-chart or load-revision")  # the chart's objects, or the revision's
    chart_crds = HandedOn[ChartCrds]("render-chart")  # the CRDs of the chart's crds/, outside the set
    desired = HandedOn[list[Manifest]]("split-hooks")  # the members to apply: the input (or rendered) less its hooks
    hooks = HandedOn[HookSet]("split-hooks or find-hooks")
    plan = HandedOn[Plan]("plan")
    live = HandedOn[LiveState]("list-live")
    decisions = HandedOn[Decisions]("decide")
    removal = HandedOn[Removal]("list-members")  # what an uninstall or disband removes
    in_place = HandedOn[Updates]("update-in-place")

    def has(self, name: str) -> bool:
        """Whether the step that hands on ``name`` (discovery, parent, rendered, chart_crds, desired, hooks, plan,
        live, decisions, removal, in_place) has run; a name that is none of those is a StepOrderError."""
        handed_on = vars(type(self)).get(name)
        if not isinstance(handed_on, HandedOn):
            raise StepOrderError(f"{name} is not a value a step hands on")
        return handed_on.is_set(self)

    @property
    def apply_options(self) -> Options:
        """The options of an apply, which its steps read (``prune``, ``reapply`` ...); a teardown's
        options have none of them, and a step reading them there is a StepOrderError."""
        if not isinstance(self.opts, Options):
            raise StepOrderError(f"the {self.step.name if self.step else 'run'} step reads an apply's options "
                                 "on a teardown (routes.py)")
        return self.opts

    @property
    def stopped(self) -> bool:
        """A step raised: the later ones are passed over (but those that always run)."""
        return self.stopped_at is not None

    @property
    def failing(self) -> bool:
        """Whether the run is on its way out with an error (the ``always`` steps then clean up)."""
        return self.stopped or self.failure is not None

    @property
    def report(self) -> Report:
        """The report of this attempt."""
        return self.record.report

    @property
    def set_ref(self) -> str:
        """``ApplySet Kind namespace/name``, as errors of the run name the set (``parent_model.set_name``)."""
        return self.parent.set_ref

    def describe_hint(self, group_kinds: frozenset | set, namespaces: frozenset | set) -> None:
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
        ctx.step = step
        try:
            with phases.step(step.name, step.effect, ctx.client):  # APPLYSET_PHASE_TIMES only
                step.run(ctx)
        except BaseException as err:  # noqa: B036 - the release must run on any way out
            if error is None:
                error = err
                ctx.stopped_at = step.name
        finally:
            ctx.step = None
    if error is not None:
        raise error
    if ctx.failure is not None:
        raise ctx.failure


def names(steps: list[Step]) -> list[str]:
    """The names of ``steps``, in order: what the route tables show."""
    return [step.name for step in steps]
