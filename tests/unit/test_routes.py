"""The order of every route, as data (routes.py), checked without a server; and the runner."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from applyset.run import runner
from applyset import routes
from applyset.errors import ApplySetError
from applyset.history.revisions import Settings
from applyset.inputs.helm_chart import Chart
from applyset.rules.legacy import LegacyAdoption
from applyset.run.options import HelmSettings, Options, SetDependency
from applyset.steps import without_claim

READING = ["read-parent", "split-hooks", "versioning", "plan", "list-live", "decide", "plan-id"]
PRE, POST = ["pre-apply-hooks"], ["post-apply-hooks", "on-failure-hooks"]

# (route builder, options, the expected step names in order)
ROUTES = {
    "apply": (routes.for_apply, Options(),
              READING + ["make-namespaces", "claim", *PRE, "apply", "prune", *POST, "release"]),
    "apply, wait": (routes.for_apply, Options.from_settings(wait=True),
                    READING + ["make-namespaces", "claim", *PRE, "apply", "prune-early", "wait-ready", "prune", *POST,
                               "release", "wait-gone"]),
    "apply, wait, no prune": (routes.for_apply, Options.from_settings(wait=True, prune=False),
                              READING + ["make-namespaces", "claim", *PRE, "apply", *POST, "release", "wait"]),
    "apply, no prune": (routes.for_apply, Options(prune=False),
                        READING + ["make-namespaces", "claim", *PRE, "apply", *POST, "release"]),
    "apply, adopt_legacy": (routes.for_apply, Options(adopt_legacy=LegacyAdoption(selector="app=shop")),
                            READING + ["make-namespaces", "claim", *PRE, "label-adopted", "apply", "prune", *POST,
                                       "release"]),
    "apply, adopt_legacy without prune": (
        routes.for_apply, Options(prune=False, adopt_legacy=LegacyAdoption(selector="app=shop")),
        READING + ["make-namespaces", "claim", *PRE, "apply", *POST, "release"]),
    "apply, helm.take_over": (routes.for_apply, Options(helm=HelmSettings(release="shop", take_over=True)),
                              READING + ["check-take-over", "make-namespaces", "claim", *PRE, "label-adopted", "apply",
                                         "prune", "retire-helm-release", *POST, "release"]),
    "apply, helm.take_over, wait": (
        routes.for_apply, Options.from_settings(helm=HelmSettings(release="shop", take_over=True), wait=True),
        READING + ["check-take-over", "make-namespaces", "claim", *PRE, "label-adopted", "apply", "prune-early",
                   "wait-ready", "prune", "retire-helm-release", *POST, "release", "wait-gone"]),
    "apply, helm.take_over without prune": (
        routes.for_apply, Options(prune=False, helm=HelmSettings(release="shop", take_over=True)),
        READING + ["check-take-over", "make-namespaces", "claim", *PRE, "label-adopted", "apply",
                   "retire-helm-release", *POST, "release"]),
    "preview, helm.take_over": (routes.for_preview, Options(dry_run=True, helm=HelmSettings(release="shop", take_over=True)),
                                READING + ["show-final-hint", "preview-namespace", "apply", "prune", "preview-hooks"]),
    "preview": (routes.for_preview, Options.from_settings(dry_run=True, wait=True),
                READING + ["show-final-hint", "preview-namespace", "apply", "prune", "preview-hooks"]),
    "preview, no prune": (routes.for_preview, Options(dry_run=True, prune=False),
                          READING + ["show-final-hint", "preview-namespace", "apply", "preview-hooks"]),
    "apply, helm chart": (routes.for_apply, Options(helm=HelmSettings(chart=Chart(chart="c", release="r", namespace="n"))),
                          ["read-parent", "render-chart", *READING[1:], "make-namespaces", "claim", "apply-chart-crds",
                           *PRE, "apply", "prune", *POST, "release"]),
    "preview, helm chart": (routes.for_preview,
                            Options(dry_run=True, helm=HelmSettings(chart=Chart(chart="c", release="r", namespace="n"))),
                            ["read-parent", "render-chart", *READING[1:], "show-final-hint", "preview-namespace",
                             "apply-chart-crds", "apply", "prune", "preview-hooks"]),
    "uninstall, helm chart": (routes.for_uninstall, Options(helm=HelmSettings(chart=Chart(chart="c", release="r", namespace="n"))),
                              ["read-parent", "render-chart", "list-members", "decide-removal", "find-hooks", "plan-id", "claim",
                               "pre-delete-hooks", "delete-members", "post-delete-hooks", "delete-parent", "release"]),
    "update-only": (routes.for_update_only, Options(),
                    READING + ["update-in-place", "confirm-parent-unchanged", "record"]),
    "update-only, wait": (routes.for_update_only, Options.from_settings(wait=True),
                          READING + ["update-in-place", "confirm-parent-unchanged", "record", "wait"]),
    "uninstall": (routes.for_uninstall, Options(),
                  ["read-parent", "list-members", "decide-removal", "find-hooks", "plan-id", "claim", "pre-delete-hooks",
                   "delete-members", "post-delete-hooks", "delete-parent", "release"]),
    "uninstall, wait": (routes.for_uninstall, Options.from_settings(wait=True),
                        ["read-parent", "list-members", "decide-removal", "find-hooks", "plan-id", "claim", "pre-delete-hooks",
                         "delete-members", "post-delete-hooks", "delete-parent", "release", "wait-gone"]),
    "uninstall preview": (routes.for_uninstall, Options.from_settings(dry_run=True, wait=True),
                          ["read-parent", "list-members", "decide-removal", "find-hooks", "plan-id", "pre-delete-hooks",
                           "delete-members", "post-delete-hooks", "delete-parent"]),
    "disband": (routes.for_disband, Options(),
                ["read-parent", "list-members", "plan-id", "claim", "unlabel-members", "delete-parent", "release"]),
    "disband preview": (routes.for_disband, Options(dry_run=True),
                        ["read-parent", "list-members", "plan-id", "unlabel-members", "delete-parent"]),
}


@pytest.mark.parametrize("case", sorted(ROUTES))
def test_each_route_is_the_expected_list_of_steps(case):
    build, opts, expected = ROUTES[case]
    assert runner.names(build(opts).steps) == expected


def _effects(route) -> list[str]:
    return [s.effect for s in route.steps]


@pytest.mark.parametrize("case", sorted(ROUTES))
def test_nothing_is_written_before_the_claim_but_the_namespaces_the_parent_needs(case):
    build, opts, _expected = ROUTES[case]
    route = build(opts)
    effects = _effects(route)
    if runner.CLAIM not in effects:
        return
    before_claim = route.steps[:effects.index(runner.CLAIM)]
    # A take-over's dry runs (check-take-over) write nothing: they refuse a conflict before any write.
    assert [s.name for s in before_claim if s.effect in (runner.WRITE, runner.RELEASE, runner.DRY_RUN)
            and s.name != "check-take-over"] in ([], ["make-namespaces"])


@pytest.mark.parametrize("case", sorted(ROUTES))
def test_every_route_that_claims_releases_last_and_always_with_the_one_release_step(case):
    build, opts, _expected = ROUTES[case]
    route = build(opts)
    claims = [s for s in route.steps if s.effect == runner.CLAIM]
    releases = [s for s in route.steps if s.effect == runner.RELEASE]
    assert len(claims) == len(releases) <= 1
    if not claims:
        return
    assert claims[0] is routes.CLAIM_STEP and releases[0] is routes.RELEASE_STEP and releases[0].always
    after_release = route.steps[route.steps.index(releases[0]) + 1:]
    assert all(s.effect == runner.WAIT for s in after_release), "only waits follow the release"
    # Besides the release, only the on-failure hooks run on the way out, inside the claim.
    assert [s for s in route.steps if s.always and s.name != "on-failure-hooks"] == releases
    assert all(s.effect != runner.RELEASE for s in route.steps if s.always and s is not releases[0])


@pytest.mark.parametrize("case", [c for c in sorted(ROUTES) if ROUTES[c][1].dry_run])
def test_a_preview_takes_no_claim_writes_nothing_and_waits_for_nothing(case):
    build, opts, _expected = ROUTES[case]
    assert set(_effects(build(opts))) <= {runner.READ, runner.DECIDE, runner.DRY_RUN}


@pytest.mark.parametrize("case", ["update-only", "update-only, wait"])
def test_the_update_only_route_never_claims_and_reads_the_parent_after_its_updates(case):
    build, opts, _expected = ROUTES[case]
    route = build(opts)
    assert runner.CLAIM not in _effects(route) and runner.RELEASE not in _effects(route)
    names = runner.names(route.steps)
    assert names.index("update-in-place") < names.index("confirm-parent-unchanged") < names.index("record")


def test_the_update_only_route_with_a_history_shares_its_steps_with_the_one_without():
    """One update-in-place and one confirm-parent-unchanged: the history is a parameter of the
    update (the revision's Secret alongside), and the route adds its own record-revision step."""
    plain = routes.for_update_only(Options()).rest
    kept = routes.for_update_only(Options(history=Settings(max=3))).rest
    assert runner.names(kept) == runner.names(plain) + ["record-revision"]
    assert kept[1] == plain[1] and kept[1].run is without_claim.confirm_parent_unchanged
    assert {s.run.__qualname__ for s in (plain[0], kept[0])} == {"update_in_place.<locals>.update"}
    assert (plain[0].name, plain[0].effect) == (kept[0].name, kept[0].effect) == ("update-in-place", runner.WRITE)


@pytest.mark.parametrize("case", sorted(ROUTES))
def test_the_reading_steps_read_and_decide_only(case):
    build, opts, _expected = ROUTES[case]
    route = build(opts)
    entry = routes.UNINSTALL if route.name == routes.UNINSTALL else routes.APPLY if route.reading > 1 else "x"
    assert route.steps[:route.reading] == tuple(routes.reading(entry, opts))
    assert {s.effect for s in route.steps[:route.reading]} <= {runner.READ, runner.DECIDE}
    assert route.rest == list(route.steps[route.reading:])


def test_check_mode_is_decided_when_the_route_is_built():
    ctx = runner.RunContext(client=None, opts=Options(dry_run=True), run_id="r", parent_spec=None, namespace=None,
                            manifests=None, record=None, carried={})
    assert routes.choose(routes.APPLY, ctx, may_skip_claim=True).name == routes.PREVIEW


class _Parent:
    exists = False


def test_a_teardown_without_a_parent_only_warns():
    ctx = runner.RunContext(client=None, opts=Options(), run_id="r", parent_spec=None, namespace=None,
                            manifests=None, record=None, carried={})
    ctx.parent = _Parent()
    for entry in (routes.UNINSTALL, routes.DISBAND):
        route = routes.choose(entry, ctx, may_skip_claim=False)
        assert runner.names(route.steps) == ["read-parent", "warn-missing-parent"]


# ----- the runner -------------------------------------------------------------------------------


def _context():
    return runner.RunContext(client=None, opts=Options(), run_id="r", parent_spec=None, namespace=None,
                             manifests=None, record=None, carried={})


def test_a_value_handed_on_is_refused_before_its_step_ran_and_has_names_only_those():
    ctx = _context()
    assert not ctx.has("plan")
    with pytest.raises(runner.StepOrderError, match="plan is read before the plan step"):
        ctx.plan  # noqa: B018 - the read is the test
    ctx.plan = "the plan"
    assert ctx.has("plan") and ctx.plan == "the plan"
    with pytest.raises(runner.StepOrderError, match="plna is not a value a step hands on"):
        ctx.has("plna")


def _step(name, seen, effect=runner.WRITE, always=False, raises=None, fails=None):
    def run(ctx):
        seen.append((name, ctx.failing))
        if fails is not None:
            ctx.failure = fails
        if raises is not None:
            raise raises

    return runner.Step(name, run, effect, always)


def test_the_runner_runs_every_step_in_order():
    seen = []
    runner.run([_step("a", seen), _step("b", seen), _step("release", seen, always=True)], _context())
    assert seen == [("a", False), ("b", False), ("release", False)]


def test_after_an_error_only_the_always_steps_run_and_the_first_error_is_raised():
    seen = []
    first, second = ApplySetError("first"), ApplySetError("second")
    route = [_step("a", seen, raises=first), _step("b", seen), _step("release", seen, always=True, raises=second),
             _step("wait", seen)]
    with pytest.raises(ApplySetError) as caught:
        runner.run(route, _context())
    assert caught.value is first
    assert seen == [("a", False), ("release", True)]


def test_a_failure_a_step_records_is_raised_once_the_always_steps_ran():
    seen = []
    failure = ApplySetError("some objects could not be applied")
    ctx = _context()
    with pytest.raises(ApplySetError) as caught:
        runner.run([_step("apply", seen, fails=failure), _step("prune", seen), _step("release", seen, always=True)],
                   ctx)
    assert caught.value is failure
    assert seen == [("apply", False), ("release", True)]
    assert not ctx.stopped


def test_an_interrupt_still_runs_the_release():
    seen = []
    with pytest.raises(KeyboardInterrupt):
        runner.run([_step("apply", seen, raises=KeyboardInterrupt()), _step("release", seen, always=True)],
                   _context())
    assert seen == [("apply", False), ("release", True)]


def test_routes_do_not_share_mutable_state():
    one, two = routes.for_apply(Options()), routes.for_apply(Options.from_settings(wait=True))
    assert one.steps != two.steps and isinstance(one.steps, tuple)


def test_a_chart_is_rendered_after_read_parent_but_never_by_a_rollback():
    chart = Chart(chart="./shop", release="shop", namespace="shop")
    rendering = routes.reading(routes.APPLY, Options(helm=HelmSettings(chart=chart), history=Settings()))
    assert runner.names(rendering)[:2] == ["read-parent", "render-chart"]
    # A rollback applies the revision's recorded objects (load-revision): the chart is not rendered again.
    rolling_back = routes.reading(routes.APPLY, Options(helm=HelmSettings(chart=chart), history=Settings(rollback_to=1)))
    assert runner.names(rolling_back)[:2] == ["read-parent", "load-revision"]
    assert "render-chart" not in runner.names(rolling_back)
    assert runner.names(routes.reading(routes.DISBAND, Options(helm=HelmSettings(chart=chart)))) == ["read-parent"]


# ----- what each step reads and sets of what steps hand on ----------------------------------------

HANDED_ON = frozenset(name for name, value in vars(runner.RunContext).items() if isinstance(value, runner.HandedOn))
_CHART = Chart(chart="c", release="r", namespace="n")
_VARIANTS = [Options(), Options.from_settings(wait=True), Options(prune=False), Options.from_settings(wait=True, prune=False),
             Options(dry_run=True), Options.from_settings(dry_run=True, wait=True), Options(history=Settings(max=5)),
             Options.from_settings(history=Settings(max=5), wait=True), Options(history=Settings(max=0)),
             Options(history=Settings(rollback_to=1)), Options.from_settings(history=Settings(rollback_to=1), wait=True),
             Options(helm=HelmSettings(chart=_CHART)), Options.from_settings(helm=HelmSettings(chart=_CHART), history=Settings(), wait=True),
             Options(helm=HelmSettings(chart=_CHART), dry_run=True), Options.from_settings(helm=HelmSettings(release="shop", take_over=True), wait=True),
             Options(adopt_legacy=LegacyAdoption(selector="app=shop")), Options(config_digest=True),
             Options(wait_for_sets=(SetDependency(parent="db"),))]


def _every_route():
    for opts in _VARIANTS:
        for build in (routes.for_apply, routes.for_preview, routes.for_update_only, routes.for_uninstall,
                      routes.for_disband):
            yield build(opts)
        for entry in (routes.UNINSTALL, routes.DISBAND):
            yield routes.for_missing_parent(entry, opts)


def test_every_step_reads_only_what_an_earlier_step_of_its_route_set():
    checked = 0
    for route in _every_route():
        available: set = set()
        for step in route.steps:
            for which in ("reads", "may_read", "sets"):
                assert step.declared(which) <= HANDED_ON, (route.name, step.name, which)
            missing = step.declared("reads") - available
            assert not missing, f"route {route.name}: step {step.name} reads {sorted(missing)}, set by no earlier step"
            available |= step.declared("sets")
            checked += 1
    assert checked > 500


def test_a_strict_step_may_read_and_set_only_what_it_declares():
    def reads_plan(ctx):
        return ctx.plan

    def sets_live(ctx):
        ctx.live = "listed"

    def strict():
        ctx = _context()
        ctx.strict_steps = True
        ctx.plan = "the plan"  # outside a step: the engine's own reads and sets are not checked
        return ctx

    runner.run([runner.Step("plan-reader", reads_plan, runner.DECIDE, reads="plan")], strict())
    with pytest.raises(runner.StepOrderError, match="the sneaky step reads plan, which it does not declare"):
        runner.run([runner.Step("sneaky", reads_plan, runner.DECIDE)], strict())
    with pytest.raises(runner.StepOrderError, match="the lister step sets live, which it does not declare"):
        runner.run([runner.Step("lister", sets_live, runner.READ, reads="live")], strict())
    ctx = strict()
    runner.run([runner.Step("lister", sets_live, runner.READ, sets="live")], ctx)
    assert ctx.live == "listed" and ctx.step is None


def test_a_step_reading_an_apply_s_options_on_a_teardown_is_a_step_order_error():
    from applyset.run.options import RunOptions

    ctx = runner.RunContext(client=None, opts=RunOptions(), run_id="r", parent_spec=None, namespace=None,
                            manifests=None, record=None, carried={})
    with pytest.raises(runner.StepOrderError, match="reads an apply's options on a teardown"):
        ctx.apply_options  # noqa: B018 - the read is the test
    assert _context().apply_options.prune


def test_the_option_steps_of_issue_49_are_on_the_apply_routes_only_with_their_option():
    """config-digest between split-hooks and plan (no request); wait-for-sets first, before the set's
    own parent is read (so before the claim); neither without its option."""
    plain = runner.names(routes.for_apply(Options()).steps)
    assert "config-digest" not in plain and "wait-for-sets" not in plain
    names = runner.names(routes.for_apply(Options(config_digest=True)).steps)
    assert names[names.index("split-hooks") + 1:names.index("plan")] == ["versioning", "config-digest"]
    waiting = routes.for_apply(Options(wait_for_sets=(SetDependency("db"),)))
    assert runner.names(waiting.steps)[:2] == ["wait-for-sets", "read-parent"] and waiting.steps[0].effect == runner.WAIT
    assert runner.names(routes.for_preview(Options(dry_run=True, wait_for_sets=(SetDependency("db"),))).steps)[0] == \
        "wait-for-sets"


def test_a_bad_set_dependency_is_refused_before_any_request():
    bad = Options(wait_for_sets=(SetDependency(""), SetDependency("db", revision=0)))
    with pytest.raises(ApplySetError) as caught:
        bad.validate()
    assert "wait_for_sets[0].parent must name a set's parent" in str(caught.value)
    assert "wait_for_sets[1].revision must be 1 or more" in str(caught.value)


def test_a_ready_expr_that_does_not_compile_is_refused():
    pytest.importorskip("celpy")
    with pytest.raises(ApplySetError) as caught:
        Options(wait_for_sets=(SetDependency("db", ready_expr="members.exists(m, m.kind == 'X'"),)).validate()
    assert "wait_for_sets[0].ready_expr does not parse at line 1, column 29" in str(caught.value), str(caught.value)
    Options(wait_for_sets=(SetDependency("db", ready_expr="members.all(m, has(m.status))"),)).validate()


# ----- who takes the whole run context ------------------------------------------------------------

# Functions of the core that take the run context and are no route step's function, each with why.
# Every other helper takes the values it reads (issue 46), so that what it depends on is in its
# signature; a new one that takes the context fails the test below until it is narrowed or named here.
TAKES_THE_CONTEXT = {
    "routes.choose": "picks the rest of the route from what the reading steps handed on",
    "steps.hook_run.due": "a route's condition (is there a hook phase to run), asked by routes.choose and the steps",
    "steps.history_steps.revision_alongside": "the update-in-place step's hook, called with that step's context",
    "apply.member_inputs.of_run": "takes the members' inputs from the run once, before the apply's workers start",
}
_CORE = Path(routes.__file__).parent


def _step_functions() -> set[str]:
    found = set()
    for route in _every_route():
        for step in route.steps:
            fn = getattr(step.run, "func", step.run)  # functools.partial
            found.add(f"{fn.__module__.removeprefix('applyset.')}.{fn.__name__}")  # a closure by its own name
    return found


def _context_takers() -> set[str]:
    found = set()
    for path in sorted(_CORE.rglob("*.py")):
        module = ".".join(path.relative_to(_CORE).with_suffix("").parts)
        if module == "run.runner":  # the context's own machinery
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and "ctx" in [a.arg for a in node.args.args + node.args.kwonlyargs]:
                found.add(f"{module}.{node.name}")
    return found


def test_only_route_steps_and_the_named_few_take_the_whole_run_context():
    steps = _step_functions()
    takers = _context_takers()
    unexplained = sorted(takers - steps - set(TAKES_THE_CONTEXT))
    assert not unexplained, f"take the values they read instead of the run context, or say why in TAKES_THE_CONTEXT: {unexplained}"
    assert set(TAKES_THE_CONTEXT) <= takers, "TAKES_THE_CONTEXT names a function that no longer takes it"
