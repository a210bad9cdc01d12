"""A fleet preview sliced as AWX slices a job (issue 50), through ansible-runner: each slice runs
playbooks/fleet-deploy.yml --tags preview on its part of the fleet with deploy_publish_part and
publishes its plans and its part of the preview report under names of its own; AWX merges the slices'
artifacts key by key and hands them on: playbooks/fleet-preview-merge.yml writes the one report, and
the rollout given the merged artifacts applies each cluster's approved plan and refuses a changed one.

The fleet is two inventory hosts on the session's one control plane, each with its own namespace (a
small set: one ConfigMap and one Secret from the manifests, the per-cluster settings from the
playbook's template); the slices are the two ``--limit``s AWX gives them.
"""

from __future__ import annotations

import json
import textwrap

import pytest
import awx_jobs
from awx_jobs import artifacts, run_job

ansible_runner = pytest.importorskip("ansible_runner")

HOSTS = ("eu-1", "us-1")
PASSWORD = "s3cret-of-the-fleet-preview"


@pytest.fixture
def job_env(monkeypatch, tmp_path, cluster):
    return awx_jobs.job_environment(monkeypatch, tmp_path, cluster)


@pytest.fixture
def namespaces(kube, namespace):
    """A namespace per cluster of the fleet: the two hosts share one control plane."""
    other = f"{namespace[:50]}-us"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    yield dict(zip(HOSTS, (namespace, other)))
    kube.delete(f"/api/v1/namespaces/{other}")


def manifests(tmp_path):
    directory = tmp_path / "manifests"
    directory.mkdir()
    (directory / "20-config.yaml").write_text(textwrap.dedent(f"""
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: shop-settings}}
        data: {{currency: EUR}}
        ---
        apiVersion: v1
        kind: Secret
        metadata: {{name: shop-db}}
        stringData: {{password: {PASSWORD}}}
        """).lstrip())
    return str(directory)


def test_the_slices_of_a_fleet_preview_merge_into_one_report_and_bind_the_rollout(tmp_path, kube, cluster, namespaces,
                                                                                    job_env):
    def inventory(name, us_currency="EUR"):
        hosts = {host: {"shop_namespace": ns} for host, ns in namespaces.items()}
        hosts["us-1"]["shop_currency"] = us_currency
        return awx_jobs.fleet_inventory_file(tmp_path / name, hosts, applyset_kubeconfig=cluster.kubeconfig)

    fleet = inventory("fleet.yml")
    extravars = {"shop_manifests": manifests(tmp_path), "deploy_publish_part": True}
    merged = {}
    for name in HOSTS:  # AWX: one slice per part of the inventory, their artifacts merged key by key
        part = run_job(tmp_path, job_env, "playbooks/fleet-deploy.yml",
                       dict(extravars, fleet_preview_report_dir=str(tmp_path / f"slice-{name}")),
                       cmdline="--tags preview --diff", inventory=fleet, limit=name)
        assert (part.status, part.rc) == ("successful", 0), part.stdout.read()
        published = artifacts(part)
        suffix = name.replace("-", "_")
        assert sorted(published) == [f"applyset_approved_plans_part_{suffix}", f"applyset_preview_report_part_{suffix}"]
        assert list(published[f"applyset_approved_plans_part_{suffix}"]) == [f"{name}/{namespaces[name]}/shop"]
        merged.update(published)
    plan_ids = {key: plan["plan_id"] for name in HOSTS
                for key, plan in merged[f"applyset_approved_plans_part_{name.replace('-', '_')}"].items()}

    report_dir = tmp_path / "fleet-report"
    merge = run_job(tmp_path, job_env, "playbooks/fleet-preview-merge.yml",
                    dict(merged, preview_report_dir=str(report_dir)))
    output = merge.stdout.read()
    assert (merge.status, merge.rc) == ("successful", 0), output
    assert "Preview report of 2 set(s) from 2 part(s)" in " ".join(output.split())
    report = json.loads((report_dir / "applyset-preview.json").read_text())
    assert {s["key"]: s["plan_id"] for s in report["sets"]} == plan_ids and report["ok"]
    for entry in report["sets"]:
        assert {g["action"]: len(g["changes"]) for g in entry["groups"]} == {"create": 3}, entry
    markdown, page = (report_dir / "applyset-preview.md").read_text(), (report_dir / "applyset-preview.html").read_text()
    assert all(plan_id in markdown and plan_id in page for plan_id in plan_ids.values())
    for text in (markdown, page, json.dumps(report), json.dumps(merged), output):
        assert PASSWORD not in text

    # us-1's set changes after the approval (its host_vars); the rollout (host_pinned), given every slice's
    # artifacts, deploys the canary eu-1 as approved and refuses us-1 before any write there.
    rollout = run_job(tmp_path, job_env, "playbooks/fleet-deploy.yml", dict(extravars, fleet_strategy="host_pinned", **merged),
                      cmdline="--skip-tags preview", inventory=inventory("changed.yml", us_currency="USD"))
    output = rollout.stdout.read()
    assert rollout.status == "failed", output
    eu, us = namespaces["eu-1"], namespaces["us-1"]
    assert kube.get(f"/api/v1/namespaces/{eu}/configmaps/shop-cluster-settings")["data"]["cluster"] == "eu-1"
    assert kube.get(f"/api/v1/namespaces/{eu}/secrets/shop") is not None  # the set's parent
    assert f"ConfigMap {us}/shop-cluster-settings: approved " in output and "nothing was written" in output
    assert kube.get(f"/api/v1/namespaces/{us}/configmaps/shop-cluster-settings") is None
    assert kube.get(f"/api/v1/namespaces/{us}/secrets/shop") is None
