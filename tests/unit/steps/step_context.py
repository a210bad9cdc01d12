"""A small context for testing one step at a time: a ``RunContext`` that holds steps to what they
declare (``strict_steps``), with the values earlier steps would have handed on set directly."""

from __future__ import annotations

from types import SimpleNamespace

from applyset.inputs.redact import SecretDigester
from applyset.kube.discovery import Discovery, Resource
from applyset.run import runner
from applyset.run.options import Options
from applyset.run.report import Recorder, Report

CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", True)
JOBS = Resource("batch", "v1", "Job", "jobs", True)
SET_ID = "applyset-test-v1"


SECRETS = Resource("", "v1", "Secret", "secrets", True)


def parent(namespace="shop", exists=True):
    """What the steps read of a parent read by read-parent (a Secret named shop)."""
    return SimpleNamespace(id=SET_ID, namespace=namespace, name="shop", resource=SECRETS, exists=exists,
                           set_ref=f"ApplySet Secret {namespace}/shop")


def context(manifests=None, opts=None, namespace="shop", **handed_on) -> runner.RunContext:
    """A run's context before the step under test: ``handed_on`` are the values earlier steps set
    (``discovery`` and ``parent`` default to a ConfigMap-and-Job server and an existing parent)."""
    opts = opts or Options()
    ctx = runner.RunContext(client=None, opts=opts, run_id="test", parent_spec="shop", namespace=namespace,
                            manifests=manifests, record=Recorder(Report(), SecretDigester(), opts.diff), carried={})
    ctx.strict_steps = True
    handed_on.setdefault("discovery", Discovery([CONFIGMAPS, JOBS]))
    handed_on.setdefault("parent", parent(namespace))
    for name, value in handed_on.items():
        setattr(ctx, name, value)
    return ctx


def run_step(step: runner.Step, ctx: runner.RunContext) -> None:
    """Run ``step`` alone over ``ctx`` as the runner does: what it does not declare fails."""
    runner.run([step], ctx)
