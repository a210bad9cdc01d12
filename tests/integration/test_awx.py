"""playbooks/deploy.yml run the way AWX runs it: through ansible-runner, authenticated only by
the four variables of AWX's "OpenShift or Kubernetes API Bearer Token" credential.

The token belongs to a ServiceAccount whose RBAC is one namespaced Role covering exactly
the kinds the playbook deploys, so the test also proves which permissions a job needs
(docs/awx.md lists the same rules). KUBECONFIG points at a file that does not exist, so
nothing can come from a kubeconfig.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
import awx_jobs
from awx_jobs import manifest_dir, module_result

ansible_runner = pytest.importorskip("ansible_runner")

PART_OF = "applyset.kubernetes.io/part-of"

# What deploy.yml needs for a set of ConfigMaps, a Deployment and a Service under a Secret
# parent, and nothing more: the parent is read, created and patched; members are listed
# (live state, prune candidates, readiness), applied (a server-side apply PATCH that creates
# an object needs create as well as patch) and pruned (DELETE). No get on members: the
# engine never GETs them. docs/awx.md shows the same Role.
DEPLOYER_RULES = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch"]},
    {"apiGroups": [""], "resources": ["configmaps", "services"], "verbs": ["list", "create", "patch", "delete"]},
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list", "create", "patch", "delete"]},
]


@pytest.fixture
def bearer_credential(cluster, kube, namespace):
    """The environment AWX's bearer-token credential injects, for a ServiceAccount limited to `namespace`."""
    if cluster.local is None:
        pytest.skip("needs the local control plane's CA file (run without APPLYSET_TEST_KUBECONFIG)")
    account = "awx-deployer"
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}})
    kube.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles",
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "deployer"},
                 "rules": DEPLOYER_RULES})
    kube.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                 "metadata": {"name": "deployer"},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployer"},
                 "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]})
    token_request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                     "spec": {"expirationSeconds": 3600}}
    token = kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
                        token_request)["status"]["token"]
    kubeconfig = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    return {
        "K8S_AUTH_HOST": kubeconfig["clusters"][0]["cluster"]["server"],
        "K8S_AUTH_API_KEY": token,
        "K8S_AUTH_VERIFY_SSL": "True",  # AWX sets 'True' when the credential has a CA certificate
        "K8S_AUTH_SSL_CA_CERT": str(cluster.local.state_dir / "pki" / "ca.crt"),
    }


@pytest.fixture
def runner_env(monkeypatch, tmp_path):
    """The job's process environment: no K8S_AUTH_* of ours, no usable kubeconfig anywhere."""
    awx_jobs.isolate_job_environment(monkeypatch, tmp_path)


def run_job(tmp_path, credential, extravars, cmdline=None):
    """One AWX job of playbooks/deploy.yml with the bearer-token ``credential`` and no kubeconfig."""
    envvars = dict(credential, KUBECONFIG=str(tmp_path / "no-such-kubeconfig"), ANSIBLE_NOCOLOR="1")
    return awx_jobs.run_job(tmp_path, envvars, "playbooks/deploy.yml", extravars, cmdline)


def job_output(run) -> str:
    return run.stdout.read()


def test_deploy_playbook_runs_under_ansible_runner_with_the_bearer_token_credential(
        tmp_path, kube, namespace, bearer_credential, runner_env):
    extravars = {"shop_namespace": namespace, "shop_manifests": str(manifest_dir(tmp_path))}

    run = run_job(tmp_path, bearer_credential, extravars)
    output = job_output(run)
    assert (run.status, run.rc) == ("successful", 0), output
    configmaps = {i["metadata"]["name"]: i for i in kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]}
    set_id = configmaps["shop-settings"]["metadata"]["labels"][PART_OF]
    assert configmaps["holiday-banner"]["metadata"]["labels"][PART_OF] == set_id
    deployment = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert deployment["metadata"]["labels"][PART_OF] == set_id
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/shop")["metadata"]["labels"][
        "applyset.kubernetes.io/id"] == set_id

    # The check-mode preview job template: the prune is shown, nothing changes.
    versions = {i["metadata"]["name"]: i["metadata"]["resourceVersion"]
                for i in kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]}
    preview = run_job(tmp_path, bearer_credential, dict(extravars, shop_without_banner=True), cmdline="--check --diff")
    output = job_output(preview)
    assert (preview.status, preview.rc) == ("successful", 0), output
    result = module_result(preview)
    assert result["summary"]["pruned"] == 1
    assert [o["name"] for o in result["objects"] if o["action"] == "pruned"] == ["holiday-banner"]
    assert "holiday-banner" in output  # the diff is printed
    assert {i["metadata"]["name"]: i["metadata"]["resourceVersion"]
            for i in kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]} == versions

    # And the real prune.
    run = run_job(tmp_path, bearer_credential, dict(extravars, shop_without_banner=True))
    assert (run.status, run.rc) == ("successful", 0), job_output(run)
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/holiday-banner") is None


def test_the_token_grants_nothing_outside_the_namespace(tmp_path, kube, namespace, bearer_credential, runner_env):
    """The RBAC really is limited: the same job aimed at another namespace is refused."""
    extravars = {"shop_namespace": "default", "shop_manifests": str(manifest_dir(tmp_path))}
    run = run_job(tmp_path, bearer_credential, extravars)
    output = job_output(run)
    assert run.status == "failed", output
    assert "forbidden" in output.lower()
    assert kube.get("/api/v1/namespaces/default/secrets/shop") is None
