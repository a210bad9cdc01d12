"""Drift per member (issue 29): why each member differs from what this collection last applied,
and a check-mode run that reports a field conflict instead of failing.

Through ansible-playbook, as a nightly AWX schedule runs it; drift is made with kubectl itself
(patch, delete) and read back from the registered result. Assertions read the cluster through
the independent test client.
"""

from __future__ import annotations

import json
import subprocess

import yaml
from ansible_cli import ansible_env, run_playbook

MEMBERS = "applyset.kubernetes.ansible/members"


def kubectl(cluster, *args):
    proc = subprocess.run(["kubectl", *args], capture_output=True, text=True, timeout=120, env=ansible_env(cluster))
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc.stdout


def cm(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {"v": "1"}}


def play(cluster, tmp_path, namespace, objs, *, check=False, **options):
    """One applyset_apply task through ansible-playbook; returns (rc, registered result, output)."""
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
    rc, result, out = play(cluster, tmp_path, namespace, objs)
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
