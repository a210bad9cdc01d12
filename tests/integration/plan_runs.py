"""Runs of the engine in this process for the approved-plan tests (test_approved_plan.py,
test_plan_binding.py): each with a client of its own, so that the report's request counters are
that run's alone; and the proof that a refused run wrote nothing: its own count of writes is 0,
and the resourceVersion of every ConfigMap and Secret of the namespace (the parent among them) is
what it was, and so are each Deployment's generation, labels and annotations (its status changes
on its own)."""

from __future__ import annotations

import sys
from pathlib import Path

from kubeapi import written_by_clients

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.errors import ApplySetError, PlanChanged  # noqa: E402
from applyset.inputs import manifests  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402
from applyset.run.options import Options  # noqa: E402


def run(cluster, namespace, objs=None, *, state="present", parent="secrets/shop", **options):
    """One run with a client of its own: its Report, or the ApplySetError it raised."""
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    try:
        eng = engine.Engine(client, parent, namespace, Options.from_settings(**options))  # the options are checked here
        if state == "absent":
            return eng.uninstall()
        return eng.apply(manifests.load_definition(objs if objs is not None else []))
    except ApplySetError as err:
        return err


def ok(result):
    assert not isinstance(result, ApplySetError), f"{result}\n{getattr(result, 'fix', '')}"
    return result


def versions(kube, namespace):
    """The resourceVersion of every ConfigMap and Secret (the parent among them) in ``namespace``, and
    what clients wrote on every Deployment (``kubeapi.written_by_clients``: its controller updates its
    status and its revision annotation meanwhile)."""
    found = {}
    for path in ("/api/v1/namespaces/{ns}/configmaps", "/api/v1/namespaces/{ns}/secrets"):
        for item in kube.get(path.format(ns=namespace))["items"]:
            found[(path, item["metadata"]["name"])] = item["metadata"]["resourceVersion"]
    for item in kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments")["items"]:
        found[("deployments", item["metadata"]["name"])] = written_by_clients(item)
    return found


def approved_from(preview):
    """What an approver hands on: the check-mode result's plan and id (as preview.yml publishes it)."""
    return {"plan_id": preview.plan_id, "plan": preview.plan}


def refused(cluster, kube, namespace, objs, approved, expected=PlanChanged, **options):
    """A real run bound to ``approved`` that must be refused before any write: its error (``expected``)."""
    before = versions(kube, namespace)
    err = run(cluster, namespace, objs, approved_plan=approved, **options)
    assert isinstance(err, expected), err
    assert err.report.requests["writes"] == 0, err.report.requests
    assert versions(kube, namespace) == before
    return err
