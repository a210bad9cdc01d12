"""The AWX approval workflow of issue 39, run the way AWX runs it: through ansible-runner.

Node 1, the preview job template, runs playbooks/preview.yml (check mode); the deploy role
publishes each set's plan with ``set_stats``, which ansible-runner reports as the
``artifact_data`` of the ``playbook_on_stats`` event: what AWX stores as the job's artifacts
and passes to the next nodes of the workflow as extra vars. Node 2 is the approval (a person).
Node 3, the deploy job template, runs playbooks/deploy.yml with those artifacts as extra vars:
it applies exactly the approved plan, or fails before any write when the cluster changed since.
"""

from __future__ import annotations

import os
import sys

import pytest
import yaml
import awx_jobs
from ansible_cli import REPO_ROOT
from awx_jobs import artifacts, manifest_dir, run_job
from kubeapi import wait_for

ansible_runner = pytest.importorskip("ansible_runner")


@pytest.fixture
def job_env(monkeypatch, tmp_path, cluster):
    """The job's environment: the cluster's kubeconfig only, no ANSIBLE_* of ours."""
    return awx_jobs.job_environment(monkeypatch, tmp_path, cluster)


def module_result(run) -> dict:
    return awx_jobs.module_result(run, events=("runner_on_ok", "runner_on_failed"))


def configmap_versions(kube, namespace):
    return {i["metadata"]["name"]: i["metadata"]["resourceVersion"]
            for i in kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]}


def test_preview_approval_deploy_through_ansible_runner(tmp_path, kube, namespace, job_env):
    extravars = {"shop_namespace": namespace, "shop_manifests": str(manifest_dir(tmp_path))}
    first = run_job(tmp_path, job_env, "playbooks/deploy.yml", extravars)
    assert (first.status, first.rc) == ("successful", 0), first.stdout.read()

    # Node 1: the preview job template. The banner leaves the manifests: the plan prunes it.
    preview = run_job(tmp_path, job_env, "playbooks/preview.yml", dict(extravars, shop_without_banner=True))
    output = preview.stdout.read()
    assert (preview.status, preview.rc) == ("successful", 0), output
    published = artifacts(preview)["applyset_approved_plans"]
    key = f"localhost/{namespace}/shop"
    assert list(published) == [key]
    plan_id = published[key]["plan_id"]
    # Issue 50: the plan's entries as digests (11 characters each), no object names, no bodies.
    assert published[key]["format"] == "plan-digests-v1" and "plan" not in published[key]
    assert len(published[key]["digests"]) == 11 * len(module_result(preview)["plan"])
    # What the approver reads at the approval node: each action, and last the plan id.
    assert f"prune ConfigMap {namespace}/holiday-banner" in output
    assert output.index(f"plan id: {plan_id}") > output.index(f"prune ConfigMap {namespace}/holiday-banner")

    # Node 3: the deploy job template, given the artifacts as extra vars, as AWX passes them.
    deploy = run_job(tmp_path, job_env, "playbooks/deploy.yml",
                     dict(extravars, shop_without_banner=True, **artifacts(preview)))
    assert (deploy.status, deploy.rc) == ("successful", 0), deploy.stdout.read()
    result = module_result(deploy)
    assert result["plan_id"] == plan_id and result["summary"]["pruned"] == 1
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/holiday-banner") is None


def test_a_plan_gone_stale_at_the_approval_node_is_refused(tmp_path, kube, namespace, job_env):
    extravars = {"shop_namespace": namespace, "shop_manifests": str(manifest_dir(tmp_path))}
    first = run_job(tmp_path, job_env, "playbooks/deploy.yml", extravars)
    assert (first.status, first.rc) == ("successful", 0), first.stdout.read()
    preview = run_job(tmp_path, job_env, "playbooks/preview.yml", extravars)
    assert (preview.status, preview.rc) == ("successful", 0), preview.stdout.read()

    # While the approver reads, someone deletes a member by hand.
    kube.delete(f"/api/v1/namespaces/{namespace}/configmaps/shop-settings")
    before = configmap_versions(kube, namespace)
    parent = kube.get(f"/api/v1/namespaces/{namespace}/secrets/shop")["metadata"]["resourceVersion"]
    deploy = run_job(tmp_path, job_env, "playbooks/deploy.yml", dict(extravars, **artifacts(preview)))
    output = deploy.stdout.read()
    assert deploy.status == "failed", output
    line = (f"ConfigMap {namespace}/shop-settings: approved unchanged, now create: "
            "it was deleted on the cluster since")
    assert line in output
    result = module_result(deploy)
    assert result["error"]["type"] == "PlanChanged" and result["requests"]["writes"] == 0
    assert configmap_versions(kube, namespace) == before
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/shop")["metadata"]["resourceVersion"] == parent

    # Approved plans given, but none for this set: the deploy job refuses to go unapproved.
    other = run_job(tmp_path, job_env, "playbooks/deploy.yml",
                    dict(extravars, applyset_approved_plans={"localhost/elsewhere/shop": {"plan_id": "plan-v1:0"}}))
    assert other.status == "failed"
    assert "none for localhost/" in other.stdout.read()


SHOP_NAMESPACE = "shop-demo"  # the example shop's manifests are written for it


@pytest.fixture
def fleet_inventory(tmp_path, cluster, kube):
    """A fleet of one cluster (the canary), as the kubeconfig inventory plugin makes it; the example
    shop is uninstalled afterwards."""
    inventory = tmp_path / "fleet.yml"
    host = {"applyset_kubeconfig": cluster.kubeconfig, "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable}
    inventory.write_text(yaml.safe_dump({"all": {"children": {
        "kubernetes_clusters": {"hosts": {"eu-1": host}}, "canary": {"hosts": {"eu-1": {}}}}}}))
    yield inventory
    # The example's CRD is cluster-scoped: it would stay labelled part of this test's set.
    kube.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/promotions.shop.example.com")
    kube.delete(f"/api/v1/namespaces/{SHOP_NAMESPACE}")
    wait_for(lambda: kube.get(f"/api/v1/namespaces/{SHOP_NAMESPACE}") is None, timeout=120, what="shop-demo gone")


def test_fleet_rollout_bound_to_each_cluster_s_approved_plan(tmp_path, kube, job_env, fleet_inventory):
    def fleet_job(tags, extravars):
        private_data_dir = tmp_path / f"job-{len(list(tmp_path.glob('job-*')))}"
        private_data_dir.mkdir()
        return ansible_runner.run(
            private_data_dir=str(private_data_dir), project_dir=str(REPO_ROOT), playbook="playbooks/fleet-deploy.yml",
            inventory=str(fleet_inventory), envvars=dict(job_env, KUBECONFIG=os.devnull), cmdline=tags,
            extravars={"shop_wait": False, **extravars}, process_isolation=False, quiet=True, timeout=300)

    # One job: the rollout bound to the plan its own preview showed a moment before.
    first = fleet_job(None, {"fleet_require_approved_plan": True})
    assert (first.status, first.rc) == ("successful", 0), first.stdout.read()
    rollout = [e["event_data"]["res"] for e in first.events if e.get("event") == "runner_on_ok"
               and e["event_data"].get("resolved_action") == "applyset.kubernetes.applyset_apply"]
    assert [r["check_mode"] for r in rollout] == [True, False] and rollout[0]["plan_id"] == rollout[1]["plan_id"]

    # A workflow: the fleet preview job, an approval, the rollout job with the preview's artifacts.
    preview = fleet_job("--tags preview", {"shop_without_banner": True})
    assert (preview.status, preview.rc) == ("successful", 0), preview.stdout.read()
    approved = artifacts(preview)
    assert list(approved["applyset_approved_plans"]) == [f"eu-1/{SHOP_NAMESPACE}/shop"]
    kube.apply(f"/api/v1/namespaces/{SHOP_NAMESPACE}/configmaps/shop-settings",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop-settings"},
                "data": {"currency": "CHF"}}, field_manager="someone", force=True)
    stale = fleet_job("--skip-tags preview", {"shop_without_banner": True, **approved})
    output = stale.stdout.read()
    assert stale.status == "failed", output
    assert (f"ConfigMap {SHOP_NAMESPACE}/shop-settings: approved unchanged, now configure: "
            "it was changed on the cluster since, in a field the plan sends") in output
    assert kube.get(f"/api/v1/namespaces/{SHOP_NAMESPACE}/configmaps/holiday-banner") is not None
