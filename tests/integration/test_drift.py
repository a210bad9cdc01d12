"""Drift per member (issue 29): why each member differs from what this collection last applied,
and a check-mode run that reports a field conflict instead of failing.

Through ansible-playbook, as a nightly AWX schedule runs it; drift is made with kubectl itself
(patch, delete) and read back from the registered result. Assertions read the cluster through
the independent test client.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from ansible_cli import ansible_env, run_playbook
from module_runner import module_run, run_module_forked

MEMBERS = "applyset.kubernetes.ansible/members"


def kubectl(cluster, *args):
    proc = subprocess.run(["kubectl", *args], capture_output=True, text=True, timeout=120, env=ansible_env(cluster))
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc.stdout


def cm(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {"v": "1"}}


def play(cluster, tmp_path, namespace, objs, *, check=False, playbook=False, **options):
    """One applyset_apply task; returns (rc, registered result, output). Forked (``module_runner``),
    the result as a playbook registers it; with ``playbook``, through ansible-playbook, which the
    first test does so that the registered result is Ansible's own at least once."""
    if not playbook:
        task = {"parent": "drift-set", "namespace": namespace, "definition": objs, **options}
        rc, result, out = run_module_forked(cluster, "applyset_apply", task, check=check, registered=True)
        return (1 if result.get("failed") else rc), result, out
    out_file = tmp_path / "result.json"
    if out_file.exists():
        out_file.unlink()
    task = {"parent": "drift-set", "namespace": namespace, "definition": objs, **options}
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [
            {"applyset.kubernetes.applyset_apply": task, "register": "result", "ignore_errors": True},
            {"ansible.builtin.copy": {"content": "{{ result | to_json }}", "dest": str(out_file)},
             "check_mode": False},
        ],
    }]))
    proc = run_playbook(cluster, playbook, check=check)
    result = json.loads(out_file.read_text()) if out_file.exists() else {}
    return (1 if result.get("failed") else proc.returncode), result, proc.stdout + proc.stderr


def by_name(result):
    return {o["name"]: o for o in result.get("objects", [])}


def test_each_drift_kind_in_check_mode_and_in_a_real_run(cluster, kube, namespace, tmp_path):
    objs = [cm("same"), cm("edited"), cm("patched"), cm("both"), cm("deleted")]
    rc, result, out = play(cluster, tmp_path, namespace, objs, playbook=True)
    assert rc == 0, out
    assert {o["name"]: o["drift"] for o in result["objects"]} == {n: "manifest_changed" for n in
                                                                    ("same", "edited", "patched", "both", "deleted")}
    kubectl(cluster, "-n", namespace, "patch", "configmap", "patched", "-p", '{"data":{"v":"by-hand"}}')
    kubectl(cluster, "-n", namespace, "patch", "configmap", "both", "-p", '{"data":{"v":"by-hand"}}')
    kubectl(cluster, "-n", namespace, "delete", "configmap", "deleted")
    desired = [cm("same"), cm("edited", v="2"), cm("patched"), cm("both", v="3"), cm("deleted")]

    for check in (True, False):
        # a real run takes back the fields kubectl patch took only when told to
        rc, result, out = play(cluster, tmp_path, namespace, desired, check=check, force_conflicts=not check)
        assert rc == 0, out
        objects = by_name(result)
        assert {n: o["drift"] for n, o in objects.items()} == {
            "same": "none", "edited": "manifest_changed", "patched": "cluster_changed", "both": "both",
            "deleted": "missing"}, (check, result["objects"])
        assert objects["same"]["action"] == "unchanged" and "changed_by" not in objects["same"]
        for name in ("patched", "both"):
            who = objects[name]["changed_by"]
            assert [c["manager"] for c in who] == ["kubectl-patch"], who
            assert who[0]["operation"] == "Update" and who[0]["time"] and who[0]["fields"] == [".data.v"]
        assert objects["deleted"]["action"] == "created"
        assert "deleted out of band" in objects["deleted"]["reason"]
    # the real run put everything back: no drift left, and a no-op re-run writes nothing
    for check in (True, False):
        rc, result, out = play(cluster, tmp_path, namespace, desired, check=check)
        assert rc == 0, out
        assert {o["drift"] for o in result["objects"]} == {"none"}, result["objects"]
        assert not result["changed"]
    assert result["requests"]["writes"] == 0, result["requests"]
    print(f"no-op re-run with drift detection: {result['requests']}")


def test_a_new_member_is_not_missing_and_a_pruned_one_leaves_the_record(cluster, kube, namespace, tmp_path):
    rc, result, out = play(cluster, tmp_path, namespace, [cm("a"), cm("b")])
    assert rc == 0, out
    rc, result, out = play(cluster, tmp_path, namespace, [cm("a"), cm("c")])
    assert rc == 0, out
    objects = by_name(result)
    assert objects["c"]["action"] == "created" and objects["c"]["drift"] == "manifest_changed"
    assert objects["b"]["action"] == "pruned"
    parent = kube.get(f"/api/v1/namespaces/{namespace}/secrets/drift-set")
    assert len(parent["metadata"]["annotations"][MEMBERS].split(",")) == 2
    # b was pruned: coming back it is new, not missing
    rc, result, out = play(cluster, tmp_path, namespace, [cm("a"), cm("b"), cm("c")], check=True)
    assert rc == 0, out
    assert by_name(result)["b"]["drift"] == "manifest_changed"


def test_check_mode_reports_a_field_conflict_and_a_real_run_still_refuses_it(cluster, kube, namespace, tmp_path):
    rc, result, out = play(cluster, tmp_path, namespace, [cm("cfg", v="1", w="1")])
    assert rc == 0, out
    # another tool takes .data.v with a forced server-side apply
    kube.apply(f"/api/v1/namespaces/{namespace}/configmaps/cfg",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"v": "theirs"}},
               field_manager="other-tool", force=True)
    rc, result, out = play(cluster, tmp_path, namespace, [cm("cfg", v="2", w="1")], check=True)
    assert rc == 0, out
    cfg = by_name(result)["cfg"]
    assert cfg["action"] == "configured" and cfg["drift"] == "both", cfg
    assert cfg["changed_by"][0]["manager"] == "other-tool" and cfg["changed_by"][0]["operation"] == "Apply"
    assert "a real run refuses this apply" in cfg["reason"] and "other-tool" in cfg["reason"]
    assert any("conflicts with another field manager" in w for w in result.get("warnings", []))
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/cfg")["data"]["v"] == "theirs"
    rc, result, out = play(cluster, tmp_path, namespace, [cm("cfg", v="2", w="1")])
    assert rc != 0
    assert by_name(result)["cfg"]["action"] == "failed"
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/cfg")["data"]["v"] == "theirs"


def deployment(name, replicas=2, image="registry.k8s.io/pause:3.10", **extra):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": image}], **extra}}}}


REPLICAS_RULE = [{"kind": "Deployment", "group": "apps", "json_pointers": ["/spec/replicas"]}]


def test_replicas_scaled_by_hand_are_kept_under_ignore_fields(cluster, kube, namespace, tmp_path):
    objs = [deployment("web"), cm("cfg")]
    rc, result, out = play(cluster, tmp_path, namespace, objs, ignore_fields=REPLICAS_RULE)
    assert rc == 0, out
    # only we own replicas: the live value is sent, the body and its digest stay the same
    rc, result, out = play(cluster, tmp_path, namespace, objs, ignore_fields=REPLICAS_RULE)
    assert rc == 0, out
    web = by_name(result)["web"]
    assert web["action"] == "unchanged" and web["drift"] == "none", web
    assert web["ignored_fields"] == [{"pointer": "/spec/replicas", "action": "kept live value",
                                      "owners": ["applyset.kubernetes"]}]
    assert result["requests"]["writes"] == 0

    # a field left to others, changed by its owner: nothing to write, the drift is theirs
    kubectl(cluster, "-n", namespace, "scale", "deployment", "web", "--replicas=5")
    for check in (True, False):
        rc, result, out = play(cluster, tmp_path, namespace, objs, check=check, ignore_fields=REPLICAS_RULE)
        assert rc == 0, out
        web = by_name(result)["web"]
        assert web["action"] == "unchanged" and result["requests"]["writes"] == 0, (check, web, result["requests"])
        assert web["drift"] == "cluster_changed" and web["drift_left_to_others"] is True, web
        assert [(c["manager"], c.get("subresource"), c["fields"]) for c in web["changed_by"]] == \
            [("kubectl", "scale", [".spec.replicas"])], web
        assert web["ignored_fields"][0]["action"] == "left to others" and web["ignored_fields"][0]["owners"], web
        assert by_name(result)["cfg"]["drift"] == "none"
    assert kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")["spec"]["replicas"] == 5

    kubectl(cluster, "-n", namespace, "set", "image", "deployment/web", "app=registry.k8s.io/pause:3.9")
    kubectl(cluster, "-n", namespace, "patch", "configmap", "cfg", "-p", '{"data":{"v":"by-hand"}}')
    rc, result, out = play(cluster, tmp_path, namespace, objs, force_conflicts=True, ignore_fields=REPLICAS_RULE)
    assert rc == 0, out
    web, cfg = by_name(result)["web"], by_name(result)["cfg"]
    assert web["action"] == "configured" and cfg["action"] == "configured"
    assert web["drift"] == "cluster_changed" and "drift_left_to_others" not in web, web  # the image was changed
    assert {c["manager"] for c in web["changed_by"]} == {"kubectl-set", "kubectl"}, web
    assert web["ignored_fields"][0]["action"] == "left to others" and web["ignored_fields"][0]["owners"], web
    assert cfg["drift"] == "cluster_changed"
    live = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert live["spec"]["replicas"] == 5  # kept
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.10"  # reverted
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/cfg")["data"] == {"v": "1"}  # reverted
    # a no-op re-run with the rule writes nothing, in check mode and for real; the replicas stay
    # kubectl's, and say so
    for check in (True, False):
        rc, result, out = play(cluster, tmp_path, namespace, objs, check=check, ignore_fields=REPLICAS_RULE)
        assert rc == 0, out
        objects = by_name(result)
        assert not result["changed"] and objects["cfg"]["drift"] == "none", result["objects"]
        assert objects["web"]["drift"] == "cluster_changed" and objects["web"]["drift_left_to_others"], objects["web"]
        assert result["requests"]["writes"] == 0, result["requests"]
    assert kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")["spec"]["replicas"] == 5


@pytest.mark.parametrize("pointer", ["/metadata/name", "/metadata/namespace", "/kind", "/metadata", "/spec/~2x"])
def test_ignore_fields_refuses_identity_and_malformed_pointers_before_any_write(cluster, kube, namespace, pointer):
    rule = [{"kind": "ConfigMap", "json_pointers": [pointer]}]
    rc, result, out = module_run(cluster, "applyset_apply", {
        "parent": "drift-set", "namespace": namespace, "definition": [cm("cfg")], "ignore_fields": rule})
    assert rc != 0, out
    error = result["error"]
    assert error["type"] == "InputError" and "ignore_fields[0]" in error["message"] and pointer in error["message"], error
    assert error["fix"], error
    # refused before any request that writes: neither the parent nor the member exists
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/drift-set") is None
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/cfg") is None


def test_ignore_fields_warns_about_a_rule_that_matches_nothing(cluster, kube, namespace, tmp_path):
    rules = [{"kind": "Deploymnet", "group": "apps", "json_pointers": ["/spec/replicas"]},
             {"kind": "Deployment", "group": "apps", "json_pointers": ["/spec/replicas", "/spec/paused"]}]
    rc, result, out = play(cluster, tmp_path, namespace, [deployment("web"), cm("cfg")], ignore_fields=rules)
    assert rc == 0, out
    warnings = result.get("warnings", [])
    print(warnings)
    assert any("ignore_fields[0]" in w and "matches no member" in w and "did you mean kind Deployment" in w
               for w in warnings), warnings
    assert any("ignore_fields[1]" in w and "/spec/paused matches no field" in w for w in warnings), warnings
    assert not any("/spec/replicas matches no field" in w for w in warnings), warnings


def test_values_the_server_normalises_are_no_drift(cluster, kube, namespace, tmp_path):
    """Issue 36: a Secret given as stringData, quantities the server writes in canonical form, an
    int-or-string port, and fields the server drops or defaults compare like with like: no drift,
    nothing written, in check mode and in a real run."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "creationTimestamp": None},
              "stringData": {"password": "s3cret", "user": "app"}, "data": {"extra": "eA=="}}
    resources = {"limits": {"cpu": "1000m", "memory": "1024Mi"}, "requests": {"cpu": 0.5, "memory": "0.5Gi"}}
    container = {"name": "app", "image": "registry.k8s.io/pause:3.10", "resources": resources, "env": [],
                 "ports": [{"name": "http", "containerPort": 8080}],
                 "readinessProbe": {"tcpSocket": {"port": "http"}, "initialDelaySeconds": 0},
                 "volumeMounts": [{"name": "tmp", "mountPath": "/tmp", "readOnly": False, "subPath": ""}]}
    web = deployment("web", replicas=1, hostNetwork=False,
                     volumes=[{"name": "tmp", "emptyDir": {"sizeLimit": "1024Mi"}}])
    web["spec"]["template"]["spec"]["containers"] = [container]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-svc"},
               "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"},
                                                              {"name": "alt", "port": 81, "targetPort": 8081}]}}
    objs = [secret, web, service, cm("cfg")]
    rc, result, out = play(cluster, tmp_path, namespace, objs)
    assert rc == 0, out
    live = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")["spec"]["template"]["spec"]
    print("stored:", live["containers"][0]["resources"], live["volumes"])
    for check in (True, False):
        rc, result, out = play(cluster, tmp_path, namespace, objs, check=check)
        assert rc == 0, out
        assert {o["name"]: (o["action"], o["drift"]) for o in result["objects"]} == {
            name: ("unchanged", "none") for name in ("db", "web", "web-svc", "cfg")}, (check, result["objects"])
        assert result["requests"]["writes"] == 0 and not result["changed"], (check, result["requests"])
    # a value changed on the cluster is still drift, in the stored form too
    kubectl(cluster, "-n", namespace, "patch", "secret", "db", "-p", '{"data":{"password":"b3RoZXI="}}')
    kubectl(cluster, "-n", namespace, "patch", "deployment", "web", "--type=json", "-p",
            '[{"op":"replace","path":"/spec/template/spec/containers/0/resources/limits/cpu","value":"2"}]')
    rc, result, out = play(cluster, tmp_path, namespace, objs, check=True)
    assert rc == 0, out
    assert {o["name"]: o["drift"] for o in result["objects"]} == {
        "db": "cluster_changed", "web": "cluster_changed", "web-svc": "none", "cfg": "none"}, result["objects"]


def annotated(obj, key, value):
    obj["metadata"]["annotations"] = {key: value}
    return obj


def test_create_only_and_ignored_members(cluster, kube, namespace, tmp_path):
    seed = annotated(cm("seed", v="first"), "applyset.kubernetes.ansible/apply", "create-only")
    flux_seed = annotated(cm("flux-seed", v="first"), "kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent")
    never = annotated(cm("never"), "applyset.kubernetes.ansible/apply", "ignore")
    rc, result, out = play(cluster, tmp_path, namespace, [seed, flux_seed, never, cm("plain")])
    assert rc == 0, out
    objects = by_name(result)
    assert objects["seed"]["action"] == "created" and objects["flux-seed"]["action"] == "created"
    assert objects["never"]["action"] == "skipped" and "never written" in objects["never"]["reason"]
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/never") is None
    kubectl(cluster, "-n", namespace, "patch", "configmap", "seed", "-p", '{"data":{"v":"tuned"}}')
    seed["data"] = {"v": "second"}
    flux_seed["data"] = {"v": "second"}
    rc, result, out = play(cluster, tmp_path, namespace, [seed, flux_seed, never, cm("plain")])
    assert rc == 0, out
    objects = by_name(result)
    assert objects["seed"]["action"] == "unchanged" and "create-only" in objects["seed"]["reason"]
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/seed")["data"] == {"v": "tuned"}
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/flux-seed")["data"] == {"v": "first"}
    # No member is written; the manifests changed, so the history records a new revision: its
    # Secret and the parent's pointer (history.py), and nothing else.
    assert result["requests"]["writes"] == 2 and result["revision"] == 2
    # they stay members: leaving the set prunes them
    rc, result, out = play(cluster, tmp_path, namespace, [cm("plain")], guard={"max_prune_percent": 100})
    assert rc == 0, out
    assert by_name(result)["seed"]["action"] == "pruned" and by_name(result)["flux-seed"]["action"] == "pruned"
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/seed") is None


def test_a_failed_wait_says_why_a_pod_cannot_be_scheduled(cluster, kube, namespace, tmp_path):
    """The local cluster's nodes are kwok fakes (no image is ever pulled, pods run as soon as they
    are placed), so the observable cause is the scheduler's: a nodeSelector that matches no node
    gives PodScheduled=False/Unschedulable and a FailedScheduling Warning event."""
    nowhere = deployment("nowhere", replicas=1, nodeSelector={"drift-test/zone": "nowhere"})
    rc, result, out = play(cluster, tmp_path, namespace, [nowhere, cm("cfg")], wait=True, wait_timeout=20)
    assert rc != 0
    error = result["error"]
    assert error["type"] == "WaitTimeout", error
    print(error["message"])
    assert "why: Deployment" in error["message"] and "cannot be scheduled: Unschedulable" in error["message"], error
    entry = error["details"]["unready"][0]
    assert entry["kind"] == "Deployment" and entry["name"] == "nowhere"
    pod = entry["pods"][0]
    assert pod["phase"] == "Pending" and pod["unschedulable"]["reason"] == "Unschedulable"
    assert "node(s) didn't match" in pod["unschedulable"]["message"]
    assert any(e["reason"] == "FailedScheduling" for e in pod.get("events", [])), pod
    print(json.dumps(entry, indent=1))


def test_the_audit_role_reports_drift_against_the_manifests(cluster, kube, namespace, tmp_path):
    rc, result, out = play(cluster, tmp_path, namespace, [cm("same"), cm("edited"), cm("patched"), cm("deleted")])
    assert rc == 0, out
    kubectl(cluster, "-n", namespace, "patch", "configmap", "patched", "-p", '{"data":{"v":"by-hand"}}')
    kubectl(cluster, "-n", namespace, "delete", "configmap", "deleted")
    manifests = [cm("same"), cm("edited", v="2"), cm("patched"), cm("deleted")]
    reports = tmp_path / "reports"

    def audit(fail_on_drift, objs):
        playbook = tmp_path / "audit.yml"
        playbook.write_text(yaml.safe_dump([{
            "hosts": "localhost", "gather_facts": False,
            "roles": [{"role": "applyset.kubernetes.audit", "vars": {
                "audit_namespace": namespace, "audit_output_dir": str(reports), "audit_fail_on_drift": fail_on_drift,
                "audit_manifests": [{"parent": "drift-set", "namespace": namespace, "definition": objs}]}}],
        }]))
        return run_playbook(cluster, playbook)

    proc = audit(True, manifests)
    assert proc.returncode != 0
    assert "3 member(s) of 1 set(s) differ from their manifests" in " ".join(proc.stdout.split()), proc.stdout
    report = json.loads((reports / "applyset-audit.json").read_text())
    drift_set = report["manifest_drift"]["sets"][0]
    assert {m["name"]: m["drift"] for m in drift_set["members"]} == {
        "same": "none", "edited": "manifest_changed", "patched": "cluster_changed", "deleted": "missing"}
    assert "kubectl-patch (Update" in next(m["who"] for m in drift_set["members"] if m["name"] == "patched")
    markdown = (reports / "applyset-audit.md").read_text()
    assert "## Drift against the manifests" in markdown
    assert "| ConfigMap " + namespace + "/patched | **cluster_changed** | kubectl-patch (Update" in markdown
    html = (reports / "applyset-audit.html").read_text()
    assert "Drift from the manifests</div>" in html and "members drifted from the manifests" in html
    assert "**3 member(s) drifted from the manifests**" in markdown
    assert 'id="manifest-drift"' in html and "<b>kubectl-patch</b>" in html and "3 drifted" in html
    print(markdown[markdown.index("## Drift against the manifests"):][:1500])
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/deleted") is None  # the audit wrote nothing
    # without the switch the audit only reports
    assert audit(False, manifests).returncode == 0


def test_a_failed_wait_names_a_container_waiting_reason(cluster, kube, namespace, tmp_path):
    """No kwok node pulls an image, so the kubelet's part is played by the test: the Pod is kept
    off every node (nodeSelector) and its status is written as a kubelet whose pull fails
    writes it (a container waiting in ImagePullBackOff, and the kubelet's Warning event). What is
    tested is the reading: the failed wait names that reason, through the real API server."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pull"},
           "spec": {"nodeSelector": {"drift-test/zone": "nowhere"},
                    "containers": [{"name": "app", "image": "registry.invalid/nope:1"}]}}
    rc, result, out = play(cluster, tmp_path, namespace, [pod])
    assert rc == 0, out
    path = f"/api/v1/namespaces/{namespace}/pods/pull"
    uid = kube.get(path)["metadata"]["uid"]
    status, body, _ = kube.request("PATCH", path + "/status", {"status": {"containerStatuses": [{
        "name": "app", "image": "registry.invalid/nope:1", "imageID": "", "ready": False, "restartCount": 0,
        "state": {"waiting": {"reason": "ImagePullBackOff",
                              "message": 'Back-off pulling image "registry.invalid/nope:1"'}}}]}},
        content_type="application/strategic-merge-patch+json")
    assert status == 200, body
    kube.create(f"/api/v1/namespaces/{namespace}/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "pull.failed"}, "type": "Warning",
        "reason": "Failed", "message": 'Failed to pull image "registry.invalid/nope:1": not found',
        "involvedObject": {"kind": "Pod", "name": "pull", "namespace": namespace, "uid": uid},
        "source": {"component": "kubelet"}, "lastTimestamp": "2026-11-25T05:00:00Z", "count": 3})
    rc, result, out = play(cluster, tmp_path, namespace, [pod], wait=True, wait_timeout=5)
    assert rc != 0
    error = result["error"]
    print(error["message"])
    assert "why: Pod " + namespace + "/pull: pod pull container app: ImagePullBackOff" in error["message"], error
    entry = error["details"]["unready"][0]
    assert entry["pods"][0]["containers"][0]["reason"] == "ImagePullBackOff"
    assert "Failed" in [e["reason"] for e in entry["events"]], entry  # the kubelet's event, newest first
