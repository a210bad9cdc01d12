"""A realistic multi-file app from the conformance corpus, through the deploy role.

Files nobody here wrote, read at test time from the Go module cache: kubectl's test inputs
(a Deployment, a v1 List of a Service and a Deployment, a JSON stream of a Service and a
ReplicationController, a ConfigMap, a Secret, a LimitRange), a Jinja2 template made from one of
them, and kwok's RBAC kustomization (a ServiceAccount in kube-system, a ClusterRole, a
ClusterRoleBinding, a FlowSchema) built by the role with ``kubectl kustomize``. The role installs
them as one set and waits, runs again as a no-op, prunes the List's two objects, the set is
verified, and the uninstall role removes everything. The step times are printed. About 40 s.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from ansible_cli import run_module, run_playbook
from test_conformance_corpus import KUBERNETES, module_cache
from test_roles import write

PART_OF = "applyset.kubernetes.io/part-of"
FILES = [
    "test/fixtures/doc-yaml/user-guide/deployment.yaml",
    "hack/testdata/list.yaml",
    "hack/testdata/multi-resource-json.json",
    "test/fixtures/doc-yaml/user-guide/configmap/configmap.yaml",
    "hack/testdata/secret.yaml",
    "test/fixtures/doc-yaml/admin/limitrange/limits.yaml",
]


@pytest.fixture
def corpus_app(tmp_path):
    cache = module_cache()
    kubernetes = cache / KUBERNETES
    kwoks = sorted((cache / "sigs.k8s.io").glob("kwok@v*")) if (cache / "sigs.k8s.io").is_dir() else []
    if not kubernetes.is_dir() or not kwoks:
        pytest.skip(f"the Go module cache ({cache}) lacks {KUBERNETES} or sigs.k8s.io/kwok: "
                    "run the control plane build (hack/local-cluster build) first")
    # A template made from a corpus file: its name comes from a play variable.
    source = (kubernetes / "hack" / "testdata" / "configmap.yaml").read_text()
    # Plus a document that only kubectl's YAML rules accept: "n" is false to go-yaml v2, a string
    # to PyYAML (and so to Ansible's from_yaml), which the server would refuse for immutable.
    write(tmp_path / "templates" / "config.yaml.j2",
          re.sub(r"(?m)^  name: (.*)$", r"  name: {{ config_prefix }}-\1", source)
          + "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ config_prefix }}-yaml11\n"
            "immutable: n\ndata:\n  port: '0o17'\n")
    write(tmp_path / "deploy.yml", """
        - name: Deploy a corpus app
          hosts: localhost
          gather_facts: false
          roles:
            - role: applyset.kubernetes.deploy
              vars:
                deploy_app: corpus
                deploy_namespace: "{{ app_namespace }}"
                deploy_files: "{{ corpus_files }}"
                deploy_templates: [templates/config.yaml.j2]
                deploy_kustomize_dirs: ["{{ kwok_rbac }}"]
                deploy_wait_timeout: 180
          post_tasks:
            - name: Save the result for the test
              ansible.builtin.copy:
                content: "{{ deploy_result | to_json }}"
                dest: "{{ result_file }}"
                mode: "0600"
              check_mode: false
        """)
    write(tmp_path / "uninstall.yml", """
        - name: Remove the corpus app
          hosts: localhost
          gather_facts: false
          roles:
            - role: applyset.kubernetes.uninstall
              vars:
                uninstall_app: corpus
                uninstall_namespace: "{{ app_namespace }}"
                uninstall_wait_timeout: 180
        """)
    return tmp_path, kubernetes, kwoks[-1]


def test_corpus_app_install_noop_prune_verify_uninstall(cluster, kube, namespace, corpus_app):
    app_dir, kubernetes, kwok = corpus_app
    times = {}

    def deploy(files, step):
        result_file = app_dir / "result.json"
        result_file.unlink(missing_ok=True)
        started = time.monotonic()
        proc = run_playbook(cluster, app_dir / "deploy.yml", extra_vars={
            "app_namespace": namespace, "result_file": str(result_file), "config_prefix": "tpl",
            "corpus_files": [str(kubernetes / f) for f in files], "kwok_rbac": str(kwok / "kustomize" / "rbac")})
        times[step] = time.monotonic() - started
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        return json.loads(result_file.read_text())

    installed = deploy(FILES, "install")
    assert installed["changed"] is True
    actions = {(o["kind"], o["name"]): o["action"] for o in installed["objects"]}
    assert set(actions.values()) == {"created"}, actions
    expected = {("Deployment", "nginx-deployment"), ("Service", "list-service-test"),
                ("Deployment", "list-deployment-test"), ("Service", "mock"), ("ReplicationController", "mock"),
                ("ConfigMap", "test-configmap"), ("Secret", "test-set-env-secret"), ("LimitRange", "mylimits"),
                ("ConfigMap", "tpl-test-set-env-config"), ("ConfigMap", "tpl-yaml11"),
                ("ServiceAccount", "kwok-controller"),
                ("ClusterRole", "kwok-controller"), ("ClusterRoleBinding", "kwok-controller"),
                ("FlowSchema", "kwok-controller")}
    assert set(actions) == expected
    parent = kube.get(f"/api/v1/namespaces/{namespace}/secrets/corpus")
    set_id = parent["metadata"]["labels"]["applyset.kubernetes.io/id"]
    sa = kube.get("/api/v1/namespaces/kube-system/serviceaccounts/kwok-controller")
    assert sa["metadata"]["labels"][PART_OF] == set_id
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/tpl-yaml11")["immutable"] is False
    web = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/nginx-deployment")
    assert web["status"].get("availableReplicas") == web["spec"]["replicas"]  # the role waited

    again = deploy(FILES, "no-op")
    assert again["changed"] is False
    assert {o["action"] for o in again["objects"]} == {"unchanged"}

    pruned = deploy([f for f in FILES if f != "hack/testdata/list.yaml"], "prune")
    gone = {(o["kind"], o["name"]) for o in pruned["objects"] if o["action"] == "pruned"}
    assert gone == {("Service", "list-service-test"), ("Deployment", "list-deployment-test")}
    assert kube.get(f"/api/v1/namespaces/{namespace}/services/list-service-test") is None

    started = time.monotonic()
    rc, verified, out = run_module(cluster, "applyset_verify", {"parent": "corpus", "namespace": namespace})
    times["verify"] = time.monotonic() - started
    assert rc == 0 and verified["ok"] is True, out[-3000:]

    started = time.monotonic()
    proc = run_playbook(cluster, app_dir / "uninstall.yml", extra_vars={"app_namespace": namespace})
    times["uninstall"] = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert kube.get("/api/v1/namespaces/kube-system/serviceaccounts/kwok-controller") is None
    assert kube.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/kwok-controller") is None
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/corpus") is None
    print(f"\ncorpus app through the deploy role ({len(expected)} objects in the test namespace, kube-system "
          "and cluster-scoped): "
          + ", ".join(f"{step} {seconds:.1f}s" for step, seconds in times.items()), flush=True)
