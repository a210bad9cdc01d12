"""RBAC and secrets: what a limited user can and cannot make the module do, and what never leaks.

The limited user is a ServiceAccount with a Role (or a ClusterRole bound in one namespace),
authenticated with a TokenRequest token exactly as AWX's "OpenShift or Kubernetes API
Bearer Token" credential does it: K8S_AUTH_HOST, K8S_AUTH_API_KEY and K8S_AUTH_SSL_CA_CERT,
with KUBECONFIG pointing at a file that does not exist. Sets are prepared by the admin
(the test kubeconfig); assertions read the cluster through the independent test client.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from ansible_cli import BIN, REPO_ROOT, ansible_env, run_module, run_playbook

PART_OF = "applyset.kubernetes.io/part-of"
ID = "applyset.kubernetes.io/id"
TOOLING = "applyset.kubernetes.io/tooling"
KINDS = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def cm(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {"v": name}}


def service(name):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"ports": [{"port": 80}], "selector": {"app": name}}}


def secret(name, string_data=None, data=None):
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}}
    if string_data:
        obj["stringData"] = string_data
    if data:
        obj["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return obj


def snapshot(kube, namespace):
    """uid -> (kind, name, resourceVersion) of every object a test could have touched, parent included."""
    state = {}
    for plural in ("configmaps", "secrets", "services"):
        for item in kube.get(f"/api/v1/namespaces/{namespace}/{plural}")["items"]:
            meta = item["metadata"]
            state[meta["uid"]] = (plural, meta["name"], meta["resourceVersion"])
    return state


def names(kube, namespace, plural):
    items = kube.get(f"/api/v1/namespaces/{namespace}/{plural}")["items"]
    return sorted(i["metadata"]["name"] for i in items if i["metadata"]["name"] != "kube-root-ca.crt")


def actions(result):
    return {f"{o['kind']}/{o['name']}": o["action"] for o in result["objects"]}


def admin_apply(cluster, namespace, definition, parent="set1", **options):
    rc, result, out = run_module(cluster, "applyset_apply",
                                 {"parent": parent, "namespace": namespace, "definition": definition, **options})
    assert rc == 0, out
    return result


# ----- a ServiceAccount and its bearer token, as AWX passes them ---------------------------------------------


@dataclass
class Bearer:
    host: str
    token: str
    ca_cert: str
    user: str

    def env(self, cluster, tmp_path) -> dict:
        """The job environment of AWX's bearer token credential; no kubeconfig anywhere."""
        return ansible_env(cluster, KUBECONFIG=str(tmp_path / "no-such-kubeconfig"), K8S_AUTH_HOST=self.host,
                           K8S_AUTH_API_KEY=self.token, K8S_AUTH_SSL_CA_CERT=self.ca_cert,
                           K8S_AUTH_VERIFY_SSL="True")


def ca_file(cluster, tmp_path) -> str:
    if cluster.local is not None:
        return str(cluster.local.state_dir / "pki" / "ca.crt")
    kubeconfig = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    cluster_entry = kubeconfig["clusters"][0]["cluster"]
    if "certificate-authority" in cluster_entry:
        return cluster_entry["certificate-authority"]
    path = tmp_path / "ca.crt"
    path.write_bytes(base64.b64decode(cluster_entry["certificate-authority-data"]))
    return str(path)


def server(cluster) -> str:
    return yaml.safe_load(Path(cluster.kubeconfig).read_text())["clusters"][0]["cluster"]["server"]


def service_account(cluster, kube, namespace, tmp_path, rules, name="deployer", cluster_role=False) -> Bearer:
    """A ServiceAccount allowed exactly ``rules`` in ``namespace``; returns its bearer credential.

    With ``cluster_role`` the rules live in a ClusterRole bound by a RoleBinding (still only
    in ``namespace``); the caller deletes the ClusterRole.
    """
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "rules": rules}
    if cluster_role:
        role_ref = {"kind": "ClusterRole", "name": f"{namespace}-{name}"}
        kube.create(f"{RBAC}/clusterroles", dict(role, kind="ClusterRole", metadata={"name": role_ref["name"]}))
    else:
        role_ref = {"kind": "Role", "name": name}
        kube.create(f"{RBAC}/namespaces/{namespace}/roles", dict(role, kind="Role", metadata={"name": name}))
    return bound(cluster, kube, namespace, tmp_path, name, role_ref)


def bound(cluster, kube, namespace, tmp_path, name, role_ref) -> Bearer:
    """The bearer credential of the ServiceAccount ``name``, bound to ``role_ref`` (a Role or a
    ClusterRole) in ``namespace`` by a RoleBinding."""
    kube.create(f"{RBAC}/namespaces/{namespace}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
        "roleRef": dict(role_ref, apiGroup="rbac.authorization.k8s.io"),
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]})
    token = kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}})["status"]["token"]
    return Bearer(host=server(cluster), token=token, ca_cert=ca_file(cluster, tmp_path),
                  user=f"system:serviceaccount:{namespace}:{name}")


def run_as(bearer, cluster, tmp_path, args, **kwargs):
    return run_module(cluster, "applyset_apply", args, env=bearer.env(cluster, tmp_path), **kwargs)


PARENT_RULE = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch"]}
ALL_MEMBER_VERBS = ["list", "create", "patch", "delete"]


# ----- (a) a recorded kind the user cannot list ---------------------------------------------------------------


def test_user_who_cannot_list_a_recorded_kind_gets_a_clear_refusal_and_nothing_is_deleted(
        cluster, kube, namespace, tmp_path):
    admin_apply(cluster, namespace, [cm("a"), cm("b"), secret("s1", {"k": "v"})])
    # May read and write the parent Secret, but not list Secrets: the set records Secret.
    bearer = service_account(cluster, kube, namespace, tmp_path, [
        PARENT_RULE, {"apiGroups": [""], "resources": ["configmaps"], "verbs": ALL_MEMBER_VERBS}])
    before = snapshot(kube, namespace)
    rc, result, out = run_as(bearer, cluster, tmp_path, {
        "parent": "set1", "namespace": namespace, "definition": [cm("a")], "guard": {"max_prune_percent": 100}})
    assert rc != 0, out
    message = result["msg"]
    assert f"listing Secret objects in namespace {namespace} failed" in message, message
    assert f'User "{bearer.user}" cannot list resource "secrets"' in message, message
    assert "need list on every kind the set records; nothing was changed" in message, message
    assert result["objects"] == [] and result["changed"] is False
    # Nothing at all was deleted or written: the check happens before the first write.
    assert snapshot(kube, namespace) == before
    assert names(kube, namespace, "configmaps") == ["a", "b"]


# ----- (b) a user who cannot delete ---------------------------------------------------------------------------


def test_user_who_cannot_delete_gets_per_object_errors_and_the_parent_keeps_covering_them(
        cluster, kube, namespace, tmp_path):
    admin_apply(cluster, namespace, [cm("keep"), cm("gone"), service("web1"), service("web2")])
    # A ClusterRole bound in the namespace: everything but deleting Services.
    bearer = service_account(cluster, kube, namespace, tmp_path, [
        PARENT_RULE,
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ALL_MEMBER_VERBS},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "create", "patch"]},
    ], cluster_role=True)
    try:
        rc, result, out = run_as(bearer, cluster, tmp_path, {
            "parent": "set1", "namespace": namespace, "definition": [cm("keep")],
            "guard": {"max_prune_percent": 100}})
        assert rc != 0, out
        got = actions(result)
        # Every object is handled: the undeletable ones fail one by one, the others go on.
        assert got == {"ConfigMap/keep": "unchanged", "Service/web1": "failed", "Service/web2": "failed",
                       "ConfigMap/gone": "pruned"}, got
        message = result["msg"]
        assert "some objects could not be pruned; the parent keeps covering them" in message, message
        for name in ("web1", "web2"):
            assert f"- Service {namespace}/{name}: pruning failed: " in message, message
            assert f'services "{name}" is forbidden: User "{bearer.user}" cannot delete resource' in message
        failed = {o["name"]: o for o in result["objects"] if o["action"] == "failed"}
        assert failed["web1"]["reason"].startswith("pruning failed:")
        assert names(kube, namespace, "services") == ["web1", "web2"]
        assert names(kube, namespace, "configmaps") == ["keep"]
        # The parent still records Service (the superset), so a later run can prune them.
        parent = kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1")["metadata"]
        assert parent["annotations"][KINDS] == "ConfigMap,Service"
        assert "applyset.kubernetes.ansible/lock" not in parent["annotations"]  # the claim was released

        # Someone allowed to delete converges the set from there.
        result = admin_apply(cluster, namespace, [cm("keep")], guard={"max_prune_percent": 100})
        assert actions(result) == {"ConfigMap/keep": "unchanged", "Service/web1": "pruned", "Service/web2": "pruned"}
        assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1")["metadata"]["annotations"][KINDS] == "ConfigMap"
    finally:
        kube.delete(f"{RBAC}/clusterroles/{namespace}-deployer")


# ----- (c) a copied part-of label on an object that something else controls ------------------------------------


def test_object_with_copied_label_and_foreign_controller_is_never_pruned(cluster, kube, namespace, tmp_path):
    result = admin_apply(cluster, namespace, [cm("a"), cm("b")])
    set_id = result["applyset"]["id"]
    # An operator's object, outside the set, controls a ConfigMap that copied our label.
    operator = kube.create(f"/api/v1/namespaces/{namespace}/configmaps",
                           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "operator-state"}})
    copied = kube.create(f"/api/v1/namespaces/{namespace}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "copied", "labels": {PART_OF: set_id}, "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "operator-state",
            "uid": operator["metadata"]["uid"], "controller": True}]}})
    bearer = service_account(cluster, kube, namespace, tmp_path, [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ALL_MEMBER_VERBS}])
    expected_reason = "controlled by ConfigMap operator-state; its controller manages it, so it is never pruned"

    # A prune that removes b skips the copy, in check mode and for real.
    for check in (True, False):
        rc, result, out = run_as(bearer, cluster, tmp_path, {
            "parent": "set1", "namespace": namespace, "definition": [cm("a")],
            "guard": {"max_prune_percent": 100}}, check=check)
        assert rc == 0, out
        assert actions(result) == {"ConfigMap/a": "unchanged", "ConfigMap/copied": "skipped", "ConfigMap/b": "pruned"}
        skipped = next(o for o in result["objects"] if o["name"] == "copied")
        assert skipped["reason"] == expected_reason
    # Removing the whole set leaves it too.
    rc, result, out = run_as(bearer, cluster, tmp_path, {"parent": "set1", "namespace": namespace,
                                                          "state": "absent"})
    assert rc == 0, out
    assert actions(result) == {"ConfigMap/copied": "skipped", "ConfigMap/a": "pruned"}
    live = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/copied")
    assert live["metadata"]["uid"] == copied["metadata"]["uid"]
    assert live["metadata"]["resourceVersion"] == copied["metadata"]["resourceVersion"]
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1") is None


# ----- (d) a forged parent ---------------------------------------------------------------------------------------


def test_forged_parent_copying_another_sets_id_is_refused_for_a_limited_user(cluster, kube, namespace, tmp_path):
    real_id = admin_apply(cluster, namespace, [cm("victim")], parent="real")["applyset"]["id"]
    bearer = service_account(cluster, kube, namespace, tmp_path, [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch", "list", "delete"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ALL_MEMBER_VERBS}])
    # The limited user may write Secrets, so it can forge a parent that copies the real set's id.
    status, body, _ = kube.request("POST", f"/api/v1/namespaces/{namespace}/secrets", {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "forged", "labels": {ID: real_id},
                     "annotations": {TOOLING: "applyset.kubernetes/0.1.0", KINDS: "ConfigMap", NAMESPACES: ""}}})
    assert status == 201, body
    before = snapshot(kube, namespace)
    # Even asking to take the set over does not help (the corpus covers the plain case).
    rc, result, out = run_as(bearer, cluster, tmp_path, {
        "parent": "forged", "namespace": namespace, "definition": [cm("other")], "takeover": True,
        "guard": {"max_prune_percent": 100, "allow_empty": True}})
    assert rc != 0, out
    assert 'exists and has incorrect value for label "applyset.kubernetes.io/id"' in result["msg"]
    assert f"got: {real_id}" in result["msg"] and "impersonation" in result["msg"]
    assert snapshot(kube, namespace) == before
    assert names(kube, namespace, "configmaps") == ["victim"]


# ----- secrets never leak -----------------------------------------------------------------------------------------

# Distinctive values, so that a match anywhere in the output is a leak and nothing else.
OLD = {"string": "old-stringdata-7Qx9vLm2", "data": "old-data-Kp4wZr8s", "pruned": "pruned-secret-Ht6yBn3c"}
NEW = {"string": "new-stringdata-Wd5jFq1x", "data": "new-data-Mv2eSu7k", "file": "from-file-Zc8gRt4p"}


def secret_forms(values):
    """Each value as written and base64-encoded (how data holds it and the API returns it)."""
    forms = set()
    for value in values:
        forms |= {value, base64.b64encode(value.encode()).decode()}
    return forms


def leaks(text, values):
    return sorted(v for v in secret_forms(values) if v in text)


def secret_set(version):
    values = OLD if version == "old" else NEW
    objs = [cm("plain"), secret("creds", string_data={"password": values["string"]}),
            secret("tls", data={"key": values["data"]})]
    if version == "old":
        objs.append(secret("retired", string_data={"token": values["pruned"]}))
    return objs


@pytest.fixture(scope="module")
def registered_result(cluster, kube, tmp_path_factory):
    """A check-mode preview, then the real run, both with --diff; the playbook registers and saves both results."""
    tmp_path = tmp_path_factory.mktemp("registered")
    namespace = f"t-registered-{secrets.token_hex(3)}"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    try:
        admin_apply(cluster, namespace, secret_set("old"))
        saved = tmp_path / "result.json"
        playbook = tmp_path / "play.yml"
        task = {"applyset.kubernetes.applyset_apply": {"parent": "set1", "namespace": namespace,
                                                       "definition": secret_set("new"),
                                                       "guard": {"max_prune_percent": 100}}}
        playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
            dict(task, name="preview", check_mode=True, register="preview"),
            dict(task, name="deploy", register="deployed"),
            {"ansible.builtin.copy": {"dest": str(saved), "content": "{{ [preview, deployed] | to_json }}"}},
        ]}]))
        proc = run_playbook(cluster, playbook, diff=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        live = kube.get(f"/api/v1/namespaces/{namespace}/secrets/creds")["data"]["password"]
        preview, deployed = json.loads(saved.read_text())
        yield {"preview": preview, "result": deployed, "output": proc.stdout + proc.stderr,
               "namespace": namespace, "applied": base64.b64decode(live).decode()}
    finally:
        kube.delete(f"/api/v1/namespaces/{namespace}")


def test_secret_values_are_masked_in_check_mode_diff_output(registered_result):
    output, namespace = registered_result["output"], registered_result["namespace"]
    # The preview and the real run print their diffs: changed and pruned Secrets, by name, values hidden.
    assert output.count(f"--- before: Secret {namespace}/creds") == 2, output
    assert output.count(f"Secret {namespace}/retired") >= 2
    assert "<hidden " in output
    assert leaks(output, [*OLD.values(), *NEW.values()]) == []
    preview = registered_result["preview"]
    assert actions(preview) == actions(registered_result["result"])
    assert leaks(json.dumps(preview), [*OLD.values(), *NEW.values()]) == []


def test_secret_values_are_masked_in_diff_and_results(registered_result):
    result = registered_result["result"]
    assert registered_result["applied"] == NEW["string"]  # the values really were applied
    assert actions(result) == {"ConfigMap/plain": "unchanged", "Secret/creds": "configured",
                               "Secret/tls": "configured", "Secret/retired": "pruned"}
    assert len(result["diff"]) == 3
    assert "invocation" not in result  # Ansible drops it from registered results
    shown = json.dumps(result)
    assert shown.count("<hidden ") == 5  # before and after of creds and tls, before of retired
    assert leaks(shown, [*OLD.values(), *NEW.values()]) == []


def test_secret_values_given_inline_never_reach_awx_job_events(cluster, kube, namespace, tmp_path):
    ansible_runner = pytest.importorskip("ansible_runner")
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"applyset.kubernetes.applyset_apply": {"parent": "set1", "namespace": namespace,
                                                "definition": secret_set("new")}}]}]))
    (tmp_path / "job").mkdir()
    run = ansible_runner.run(
        private_data_dir=str(tmp_path / "job"), project_dir=str(REPO_ROOT), playbook=str(playbook),
        inventory=f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
        envvars=dict(ansible_env(cluster)), process_isolation=False, quiet=True, timeout=240)
    assert (run.status, run.rc) == ("successful", 0), run.stdout.read()
    events = [e["event_data"]["res"] for e in run.events
              if e.get("event") == "runner_on_ok" and "applyset_apply" in str(e["event_data"].get("resolved_action"))]
    assert len(events) == 1
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/creds") is not None
    assert leaks(json.dumps(events[0]), NEW.values()) == []


# Values of the failing runs at -vvv below, one per way a run can fail before or without loading
# `definition` (the module masks Secret values once it has loaded the input).
FAILING = {"src-problem": "failing-src-Ap3kLw9q", "state-absent": "failing-absent-Rt5mXe2v",
           "unparsable-text": "failing-text-Jd8cNy4h"}


@pytest.fixture(scope="module")
def verbose_run(cluster, kube, tmp_path_factory):
    """Real runs at -vvv --diff, authenticated by api_key given as a module option (an SA token).

    The deploy task has Secrets inline (changed and pruned) and one from a src file, and a
    ConfigMap; more tasks with Secrets inline fail on purpose: with the same token in a
    namespace it may not use, with a src entry that does not exist, with state: absent
    (which does not read definition), and with definition text that is not YAML. Every value
    comes from an extra-vars file, as from a vault: on a failure Ansible 2.19 quotes the
    playbook's source lines around the task, and those must hold no value.
    """
    tmp_path = tmp_path_factory.mktemp("verbose")
    namespace = f"t-verbose-{secrets.token_hex(3)}"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    try:
        admin_apply(cluster, namespace, secret_set("old"))
        bearer = service_account(cluster, kube, namespace, tmp_path, [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch", "list", "delete"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ALL_MEMBER_VERBS}])
        from_file = tmp_path / "file-secret.yaml"
        from_file.write_text(yaml.safe_dump(secret("from-file", string_data={"pem": NEW["file"]})))
        extra_vars = tmp_path / "vars.json"
        extra_vars.write_text(json.dumps({
            "token": bearer.token, "deploy_definition": secret_set("new"),
            "src_problem_definition": [secret("s1", {"password": FAILING["src-problem"]})],
            "absent_definition": [secret("s2", {"password": FAILING["state-absent"]})],
            "text_definition": f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s3\n"
                               f"stringData: {{password: {FAILING['unparsable-text']}}}\n",
        }))
        auth = {"host": bearer.host, "api_key": "{{ token }}", "ca_cert": bearer.ca_cert, "validate_certs": True}
        base = dict(auth, parent="set1", namespace=namespace)
        playbook = tmp_path / "play.yml"
        playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
            {"name": "deploy", "applyset.kubernetes.applyset_apply": dict(
                base, definition="{{ deploy_definition }}", src=[str(from_file)], guard={"max_prune_percent": 100})},
            {"name": "forbidden namespace", "ignore_errors": True, "applyset.kubernetes.applyset_apply": dict(
                base, namespace="default", definition="{{ deploy_definition }}")},
            {"name": "src-problem", "ignore_errors": True, "applyset.kubernetes.applyset_apply": dict(
                base, src=[str(tmp_path / "no-such-dir") + "/"], definition="{{ src_problem_definition }}")},
            {"name": "state-absent", "ignore_errors": True, "applyset.kubernetes.applyset_apply": dict(
                base, parent="no-such-set", state="absent", definition="{{ absent_definition }}")},
            {"name": "unparsable-text", "ignore_errors": True, "applyset.kubernetes.applyset_apply": dict(
                base, definition="{{ text_definition }}")},
        ]}]))
        env = ansible_env(cluster, KUBECONFIG=str(tmp_path / "no-such-kubeconfig"))
        proc = subprocess.run([str(BIN / "ansible-playbook"), "-vvv", "--diff", "-e", f"@{extra_vars}", str(playbook)],
                              capture_output=True, text=True, timeout=300, env=env, cwd=REPO_ROOT)
        yield {"proc": proc, "output": proc.stdout + proc.stderr, "bearer": bearer, "namespace": namespace}
    finally:
        kube.delete(f"/api/v1/namespaces/{namespace}")


def test_vvv_run_succeeds_and_never_shows_the_token(verbose_run, kube):
    proc, output, token = verbose_run["proc"], verbose_run["output"], verbose_run["bearer"].token
    assert proc.returncode == 0, output[-5000:]
    assert "<hidden " in output  # the diff is printed, masked
    assert "forbidden" in output  # the failing task's error is printed
    assert token not in output
    assert token.split(".")[-1] not in output  # not even the signature alone
    assert "eyJ" not in output  # nor any JSON Web Token (their header always starts so)
    assert "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in output  # api_key is masked in the invocation
    # Values read from src files never reach the output; nor do values the module read back.
    assert leaks(output, [NEW["file"], OLD["string"], OLD["data"], OLD["pruned"]]) == []
    live = kube.get(f"/api/v1/namespaces/{verbose_run['namespace']}/secrets/from-file")["data"]["pem"]
    assert base64.b64decode(live).decode() == NEW["file"]


def test_vvv_run_never_shows_secret_values_given_inline(verbose_run):
    # Applied (and failing for lack of rights after loading): masked in the echoed arguments.
    assert leaks(verbose_run["output"], [NEW["string"], NEW["data"]]) == []


@pytest.mark.parametrize("case", FAILING, ids=FAILING)
def test_vvv_failing_run_never_shows_secret_values_given_inline(verbose_run, case):
    output = verbose_run["output"]
    assert f"TASK [{case}]" in output
    assert leaks(output, [FAILING[case]]) == []


# ----- a history the user may not write ------------------------------------------------------------------------


def test_a_revision_refused_for_rights_on_the_update_only_route_is_tried_once_and_warned_once(
        cluster, kube, namespace, tmp_path):
    """A user who may update the members and read and patch the parent, but not create Secrets:
    the changed set's revision is refused (403), the update goes through, one warning says the
    release is not recorded, and the revision is not tried again after the confirmation."""
    assert admin_apply(cluster, namespace, [cm("a", v="1"), cm("b")])["revision"] == 1
    bearer = service_account(cluster, kube, namespace, tmp_path, [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "patch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ALL_MEMBER_VERBS}])
    rc, result, out = run_as(bearer, cluster, tmp_path, {
        "parent": "set1", "namespace": namespace, "definition": [cm("a", v="2"), cm("b")]})
    assert rc == 0, out
    assert actions(result) == {"ConfigMap/a": "configured", "ConfigMap/b": "unchanged"}
    assert out.count("this release is not recorded in the set's history") == 1, out
    assert result["requests"]["writes"] == 2, result["requests"]  # the member's PATCH, the revision's refused POST
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/a")["data"] == {"v": "2"}
    annotations = kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1")["metadata"]["annotations"]
    assert annotations["applyset.kubernetes.ansible/revision"] == "1"  # still the last recorded release
