"""A fleet audit sliced as AWX slices a job (issue 50), through ansible-runner: each slice runs
playbooks/fleet-audit.yml on its part of the fleet and publishes its clusters' results as an artifact
of its own name; AWX merges the slices' artifacts key by key and hands them to the next node, which
runs playbooks/fleet-audit-merge.yml and writes the one report (JSON, Markdown, the web page).

The fleet is two inventory hosts on the session's one control plane (the audit reads only); the
slices are the two ``--limit``s AWX gives them.
"""

from __future__ import annotations

import json

import pytest
import awx_jobs
from awx_jobs import artifacts
from module_runner import run_module_forked

ansible_runner = pytest.importorskip("ansible_runner")

HOSTS = ("eu-1", "us-1")


@pytest.fixture
def job_env(monkeypatch, tmp_path, cluster):
    return awx_jobs.job_environment(monkeypatch, tmp_path, cluster)


def job(tmp_path, envvars, playbook, extravars, inventory, limit=None):
    return awx_jobs.run_job(tmp_path, envvars, playbook, extravars, inventory=inventory, limit=limit)


def test_the_slices_of_a_fleet_audit_merge_into_one_report(tmp_path, cluster, namespace, job_env):
    definition = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}}]
    rc, _result, out = run_module_forked(cluster, "applyset_apply", {"parent": "shop", "namespace": namespace,
                                                                      "definition": definition})
    assert rc == 0, out
    inventory = awx_jobs.fleet_inventory_file(tmp_path / "fleet.yml", {name: {} for name in HOSTS},
                                              applyset_kubeconfig=cluster.kubeconfig)
    extravars = {"audit_scope_namespace": namespace, "audit_publish_part": True,
                 "audit_output_dir": str(tmp_path / "slice-reports")}

    merged = {}
    for name in HOSTS:  # AWX: one slice per part of the inventory, their artifacts merged key by key
        part = job(tmp_path, job_env, "playbooks/fleet-audit.yml", extravars, inventory, limit=name)
        assert (part.status, part.rc) == ("successful", 0), part.stdout.read()
        published = artifacts(part)
        assert list(published) == [f"applyset_fleet_audit_part_{name.replace('-', '_')}"]
        merged.update(published)

    report_dir = tmp_path / "fleet-report"
    merge = job(tmp_path, job_env, "playbooks/fleet-audit-merge.yml",
                dict(merged, audit_scope_namespace=namespace, audit_output_dir=str(report_dir)), inventory)
    output = merge.stdout.read()
    assert (merge.status, merge.rc) == ("successful", 0), output
    report = json.loads((report_dir / "applyset-audit.json").read_text())
    assert [c["name"] for c in report["clusters"]] == list(HOSTS) and report["summary"]["clusters"] == 2
    assert report["ok"] and report["summary"]["sets"] == 1 and report["drift"] == []
    (entry,) = report["sets"]
    assert sorted(entry["cells"]) == list(HOSTS) and {c["state"] for c in entry["cells"].values()} == {"ok"}
    assert "eu-1" in (report_dir / "applyset-audit.md").read_text()
    assert "us-1" in (report_dir / "applyset-audit.html").read_text()
    assert "on 2 cluster(s) from 2 part(s)" in " ".join(output.split())
