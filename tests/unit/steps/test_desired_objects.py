"""The steps that turn the input into the members to apply, one at a time: split-hooks and plan take
their Step from the route as declared, so a read it does not declare fails here too."""

from __future__ import annotations

import pytest

from applyset import routes
from applyset.inputs.manifests import Manifest
from applyset.run import runner
from applyset.run.options import Options

from step_context import context, run_step


def configmap(name, **annotations):
    return Manifest({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": name, **({"annotations": annotations} if annotations else {})}}, "test")


def hook(name):
    return Manifest({"apiVersion": "batch/v1", "kind": "Job",
                     "metadata": {"name": name, "annotations": {"helm.sh/hook": "pre-install"}},
                     "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                         {"name": "m", "image": "busybox"}]}}}}, "test")


def step(name):
    """The step ``name`` of the apply route's reading steps, as routes.py declares it."""
    return next(s for s in routes.reading(routes.APPLY, Options()) if s.name == name)


def test_split_hooks_hands_on_the_members_and_the_hooks_and_leaves_the_input_as_given():
    given = [configmap("settings"), hook("migrate")]
    ctx = context(manifests=given)
    run_step(step("split-hooks"), ctx)
    assert [m.name for m in ctx.desired] == ["settings"]
    assert [h.desired.name for h in ctx.hooks.hooks] == ["migrate"]
    assert ctx.manifests is given and [m.name for m in given] == ["settings", "migrate"]


def test_split_hooks_takes_a_charts_objects_when_render_chart_handed_some_on():
    given = [configmap("from-the-task")]
    ctx = context(manifests=given, rendered=[configmap("from-the-chart")])
    run_step(step("split-hooks"), ctx)
    assert [m.name for m in ctx.desired] == ["from-the-chart"]
    assert ctx.manifests is given


def test_plan_builds_on_the_desired_members_only():
    ctx = context(manifests=[configmap("input-is-not-read")], desired=[configmap("settings")])
    run_step(step("plan"), ctx)
    assert [m.name for m in ctx.plan.members] == ["settings"]


def test_plan_before_split_hooks_is_a_route_built_in_the_wrong_order():
    ctx = context(manifests=[configmap("settings")])
    with pytest.raises(runner.StepOrderError, match="desired is read before the split-hooks step has set it"):
        run_step(step("plan"), ctx)
