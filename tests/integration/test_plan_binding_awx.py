"""playbooks/deploy.yml as AWX runs it (issue 45, item 4), through ansible-runner: with Job type
Check it is a preview that publishes the plan, as playbooks/preview.yml does, and the deploy job
given its artifacts applies exactly that plan; inside a workflow without approved plans it warns,
or fails before any write with ``deploy_require_approved_plan``."""

from __future__ import annotations

import pytest
import awx_jobs
from awx_jobs import artifacts, manifest_dir, run_job

pytest.importorskip("ansible_runner")


@pytest.fixture
def job_env(monkeypatch, tmp_path, cluster):
    """The job's environment: the cluster's kubeconfig only, no ANSIBLE_* of ours."""
    return awx_jobs.job_environment(monkeypatch, tmp_path, cluster)


def test_a_check_job_of_deploy_yml_publishes_the_plan_the_deploy_job_applies(tmp_path, kube, namespace, job_env):
    extravars = {"shop_namespace": namespace, "shop_manifests": str(manifest_dir(tmp_path))}
    first = run_job(tmp_path, job_env, "playbooks/deploy.yml", extravars)
    assert (first.status, first.rc) == ("successful", 0), first.stdout.read()

    # Job type: Check, Show changes: on (AWX runs ansible-playbook --check --diff).
    check = run_job(tmp_path, job_env, "playbooks/deploy.yml", dict(extravars, shop_without_banner=True),
                    cmdline="--check --diff")
    output = check.stdout.read()
    assert (check.status, check.rc) == ("successful", 0), output
    published = artifacts(check)["applyset_approved_plans"]
    key = f"localhost/{namespace}/shop"
    assert list(published) == [key]
    plan_id = published[key]["plan_id"]
    assert f"prune ConfigMap {namespace}/holiday-banner" in output and f"plan id: {plan_id}" in output
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/holiday-banner") is not None

    deploy = run_job(tmp_path, job_env, "playbooks/deploy.yml",
                     dict(extravars, shop_without_banner=True, awx_workflow_job_id=7, **artifacts(check)))
    output = deploy.stdout.read()
    assert (deploy.status, deploy.rc) == ("successful", 0), output
    result = awx_jobs.module_result(deploy)
    assert result["plan_id"] == plan_id and result["summary"]["pruned"] == 1
    assert "WARNING: this deploy runs inside an AWX workflow" not in output  # the task is skipped


def test_a_workflow_deploy_without_approved_plans_warns_or_fails(tmp_path, kube, namespace, job_env):
    extravars = {"shop_namespace": namespace, "shop_manifests": str(manifest_dir(tmp_path)), "awx_workflow_job_id": 7}
    refused = run_job(tmp_path, job_env, "playbooks/deploy.yml", dict(extravars, deploy_require_approved_plan=True))
    output = refused.stdout.read()
    assert refused.status == "failed", output
    assert "inside an AWX workflow (job 7) but was given no approved plans" in output
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/shop") is None  # nothing was written

    warned = run_job(tmp_path, job_env, "playbooks/deploy.yml", extravars)
    output = warned.stdout.read()
    assert (warned.status, warned.rc) == ("successful", 0), output
    assert "WARNING: this deploy runs inside an AWX workflow (job 7)" in output
    assert awx_jobs.module_result(warned)["summary"]["created"] > 0
