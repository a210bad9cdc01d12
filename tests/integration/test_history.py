"""Release history and rollback (issue 28), through ansible-playbook as users run it.

Two releases are listed by applyset_info; ``rollback_to: 1`` restores a changed ConfigMap value,
a Secret, an object the second release removed and a workload's image, and prunes an object only
the second release had; history Secrets never carry the part-of label, no Secret value shows in
any output, kubectl still reads the set, and ``state: absent`` removes the history. A release
whose pods can never be scheduled, with ``on_failure: rollback`` and ``wait``, leaves the cluster
as the last good release was. A rollback applies with the task's own options (force_conflicts over
a ``kubectl scale``), and takes over the fields of the set's other field managers, so that what
only a later release under another manager set is gone (issue 36).
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess

import yaml
from ansible_cli import ansible_env, run_playbook

PART_OF = "applyset.kubernetes.io/part-of"
HISTORY_OF = "applyset.kubernetes.ansible/history-of"


def cm(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def secret(name, password):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"password": password}}


def deployment(name, image, **pod):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "progressDeadlineSeconds": 600, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": name, "image": image}], **pod}}}}


def task(name, register, check_mode=False, **args):
    return {"name": name, "applyset.kubernetes.applyset_apply": args, "register": register, "ignore_errors": True,
            "check_mode": check_mode}


def play(namespace, tasks, out_file):
    registered = [t["register"] for t in tasks]
    results = "{" + ", ".join(f"'{r}': {r}" for r in registered) + "}"
    return [{"hosts": "localhost", "gather_facts": False, "tasks": tasks + [
        {"copy": {"content": "{{ " + results + " | to_nice_json }}", "dest": str(out_file), "mode": "0644"}}]}]


def run(cluster, tmp_path, namespace, tasks, name="play"):
    book, out = tmp_path / f"{name}.yml", tmp_path / f"{name}.json"
    book.write_text(yaml.safe_dump(play(namespace, tasks, out), sort_keys=False))
    proc = run_playbook(cluster, book, diff=True, env=ansible_env(cluster, ANSIBLE_VERBOSITY="3"))
    assert out.exists(), proc.stdout + proc.stderr
    return json.loads(out.read_text()), proc.stdout + proc.stderr


def history_secrets(kube, namespace):
    return [s for s in kube.get(f"/api/v1/namespaces/{namespace}/secrets")["items"]
            if HISTORY_OF in (s["metadata"].get("labels") or {})]


def test_two_releases_listed_then_rolled_back_to_the_first(cluster, kube, namespace, tmp_path):
    p1, p2 = f"first-{secrets.token_hex(8)}", f"second-{secrets.token_hex(8)}"
    common = {"parent": "shop", "namespace": namespace}
    release1 = [cm("settings", color="blue"), secret("creds", p1), cm("extra", kept="yes"),
                deployment("web", "registry.invalid/web:1")]
    release2 = [cm("settings", color="green"), secret("creds", p2), deployment("web", "registry.invalid/web:2"),
                cm("only-two", new="yes")]
    info = {"name": "history", "applyset.kubernetes.applyset_info": {**common, "revisions": True},
            "register": "info"}
    results, output = run(cluster, tmp_path, namespace, [
        task("release 1", "r1", definition=release1, **common),
        task("release 1 again (no change)", "r1again", definition=release1, **common),
        task("release 2", "r2", definition=release2, **common),
        {**info, "register": "info2"},
        task("preview the rollback", "preview", rollback_to="1", check_mode=True, **common),
        task("roll back", "back", rollback_to="1", **common),
        {**info, "register": "info3"},
    ])
    assert results["r1"].get("revision") == 1, results["r1"]
    assert "revision" not in results["r1again"] and not results["r1again"]["changed"]
    assert results["r2"]["revision"] == 2
    listed = results["info2"]["applysets"][0]["revisions"]
    assert [(r["revision"], r["result"], r["members"]) for r in listed] == [(1, "superseded", 4), (2, "deployed", 4)]
    assert listed[0]["provenance"]["collection_version"] and listed[0]["provenance"]["task"]
    assert not results["preview"].get("failed"), results["preview"]
    assert results["back"]["revision"] == 3 and not results["back"].get("failed"), results["back"]
    listed = results["info3"]["applysets"][0]["revisions"]
    assert [(r["revision"], r["result"], r["rollback_of"]) for r in listed] == [
        (1, "superseded", None), (2, "rolled back", None), (3, "deployed", 1)]

    base = f"/api/v1/namespaces/{namespace}"
    assert kube.get(f"{base}/configmaps/settings")["data"] == {"color": "blue"}
    assert base64.b64decode(kube.get(f"{base}/secrets/creds")["data"]["password"]).decode() == p1
    assert kube.get(f"{base}/configmaps/extra")["data"] == {"kept": "yes"}
    web = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.invalid/web:1"
    assert kube.get(f"{base}/configmaps/only-two") is None
    kept = history_secrets(kube, namespace)
    assert len(kept) == 3 and all(PART_OF not in s["metadata"]["labels"] for s in kept)
    for value in (p1, p2):
        assert value not in output and base64.b64encode(value.encode()).decode() not in output

    # kubectl reads the set as before: it refuses it for its tooling only, and counts no history Secret.
    listing = subprocess.run(["kubectl", "get", "secrets", "-n", namespace, "-l", PART_OF, "-o", "name"],
                             capture_output=True, text=True, env=ansible_env(cluster), timeout=60)
    assert listing.stdout.split() == ["secret/creds"], listing.stdout
    manifest = tmp_path / "kubectl.yaml"
    manifest.write_text(yaml.safe_dump(cm("settings", color="blue")))
    refused = subprocess.run(["kubectl", "apply", "-n", namespace, "--server-side", "--prune", "--applyset=shop",
                              "-f", str(manifest)], capture_output=True, text=True, timeout=60,
                             env=ansible_env(cluster, KUBECTL_APPLYSET="true"))
    assert refused.returncode != 0 and "tooling" in refused.stderr, refused.stderr

    results, _ = run(cluster, tmp_path, namespace, [task("uninstall", "gone", state="absent", **common)], "absent")
    assert not results["gone"].get("failed"), results["gone"]
    assert history_secrets(kube, namespace) == []


def test_a_release_that_cannot_become_ready_rolls_itself_back(cluster, kube, namespace, tmp_path):
    common = {"parent": "shop", "namespace": namespace}
    good = [cm("settings", color="blue"), deployment("web", "registry.invalid/web:1")]
    good[1]["spec"]["replicas"] = 0
    stuck = deployment("web", "registry.invalid/web:2", nodeSelector={"applyset-test/no-such-node": "true"})
    bad = [cm("settings", color="red"), stuck, cm("only-bad", new="yes")]
    results, output = run(cluster, tmp_path, namespace, [
        task("good release", "good", definition=good, **common),
        task("bad release", "bad", definition=bad, wait=True, wait_timeout=10, on_failure="rollback",
             rollback_timeout=60, **common),
        {"name": "history", "applyset.kubernetes.applyset_info": {**common, "revisions": True}, "register": "info"},
    ])
    assert results["good"]["revision"] == 1
    bad_result = results["bad"]
    assert bad_result["failed"] and bad_result["rolled_back_to"] == 1, bad_result
    assert "rolled back to revision 1" in bad_result["msg"] and "revision" in bad_result
    listed = results["info"]["applysets"][0]["revisions"]
    assert [(r["revision"], r["result"], r["rollback_of"]) for r in listed] == [
        (1, "superseded", None), (2, "failed", None), (3, "deployed", 1)]
    base = f"/api/v1/namespaces/{namespace}"
    assert kube.get(f"{base}/configmaps/settings")["data"] == {"color": "blue"}
    assert kube.get(f"{base}/configmaps/only-bad") is None
    web = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    pod = web["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "registry.invalid/web:1" and "nodeSelector" not in pod
    assert web["spec"]["replicas"] == 0


def test_a_release_whose_wait_fails_is_listed_failed(cluster, kube, namespace, tmp_path):
    # As helm upgrade --wait: the release went out, its objects did not become ready: it is no deployed revision.
    # Only in-place updates: the release takes the route without the claim, which waits after it recorded.
    common = {"parent": "shop", "namespace": namespace}
    idle = deployment("web", "registry.invalid/web:1")
    idle["spec"]["replicas"] = 0
    stuck = deployment("web", "registry.invalid/web:2", nodeSelector={"applyset-test/no-such-node": "true"})
    results, output = run(cluster, tmp_path, namespace, [
        task("good release", "good", definition=[cm("settings", color="blue"), idle], **common),
        task("stuck release", "stuck", definition=[cm("settings", color="red"), stuck], wait=True, wait_timeout=5,
             **common),
        {"name": "history", "applyset.kubernetes.applyset_info": {**common, "revisions": True}, "register": "info"},
    ])
    assert results["stuck"]["failed"] and results["stuck"]["revision"] == 2, results["stuck"]
    listed = results["info"]["applysets"][0]["revisions"]
    assert [(r["revision"], r["result"]) for r in listed] == [(1, "superseded"), (2, "failed")], listed


def test_a_rollback_takes_the_tasks_force_conflicts_over_a_kubectl_scale(cluster, kube, namespace, tmp_path):
    # Issue 36, item 2: the rollback used the options stored in the revision and dropped the task's.
    common = {"parent": "shop", "namespace": namespace}
    release1 = [deployment("web", "registry.invalid/web:1")]
    release2 = [deployment("web", "registry.invalid/web:2")]
    results, _ = run(cluster, tmp_path, namespace, [task("release 1", "r1", definition=release1, **common),
                                                     task("release 2", "r2", definition=release2, **common)])
    assert (results["r1"]["revision"], results["r2"]["revision"]) == (1, 2), results
    scale = subprocess.run(["kubectl", "scale", "-n", namespace, "deployment/web", "--replicas=3"],
                           capture_output=True, text=True, env=ansible_env(cluster), timeout=60)
    assert scale.returncode == 0, scale.stderr
    results, _ = run(cluster, tmp_path, namespace, [
        task("roll back without force", "refused", rollback_to="1", **common),
        task("roll back, forced", "back", rollback_to="1", force_conflicts=True, **common),
    ], "rollback")
    assert results["refused"]["failed"] and "force_conflicts" in results["refused"]["msg"], results["refused"]
    assert not results["back"].get("failed") and results["back"]["revision"] == 3, results["back"]
    web = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert web["spec"]["replicas"] == 1
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.invalid/web:1"


def test_a_rollback_takes_over_the_fields_of_the_sets_other_field_managers(cluster, kube, namespace, tmp_path):
    # Issue 36, item 2: release 2 under another field manager (forced) made rolling back to 1 fail
    # every time, and forced through it left what only release 2 set.
    common = {"parent": "shop", "namespace": namespace}
    release1 = [cm("settings", color="blue", size="m"), deployment("web", "registry.invalid/web:1")]
    settings2 = cm("settings", color="green", size="m", extra="only-two")
    settings2["metadata"]["labels"] = {"tier": "only-two"}
    web2 = deployment("web", "registry.invalid/web:2")
    web2["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "ONLY_TWO", "value": "yes"}]
    team_a, team_b = {**common, "field_manager": "team-a"}, {**common, "field_manager": "team-b"}
    results, _ = run(cluster, tmp_path, namespace, [
        task("release 1 by team a", "r1", definition=release1, **team_a),
        task("release 2 by team b", "r2", definition=[settings2, web2], force_conflicts=True, **team_b),
        task("roll back to the current revision", "same", rollback_to="2", **team_b),
        task("preview the rollback to 1", "preview", rollback_to="1", check_mode=True, **team_a),
        task("roll back to 1 by team a", "back", rollback_to="1", **team_a),
        task("roll back to that again", "again", rollback_to="3", **team_a),
    ])
    assert (results["r1"]["revision"], results["r2"]["revision"]) == (1, 2), results
    same = results["same"]
    assert not same.get("failed") and not same["changed"] and same["requests"]["writes"] == 0, same
    back = results["back"]
    assert not back.get("failed") and back["revision"] == 3, back
    assert any("took over all fields of team-b" in w for w in back.get("warnings", [])), back
    preview = results["preview"]  # a real run takes over team-b's fields: no conflict to report
    assert not preview.get("failed") and not any("refuses" in (o.get("reason") or "") for o in preview["objects"])
    assert any("a real run first takes over all fields of team-b" in w for w in preview.get("warnings", []))
    again = results["again"]
    assert not again.get("failed") and not again["changed"] and again["requests"]["writes"] == 0, again

    settings = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/settings")
    assert settings["data"] == {"color": "blue", "size": "m"}
    assert "tier" not in settings["metadata"]["labels"]
    web = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    (container,) = web["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.invalid/web:1" and "env" not in container
    for obj in (settings, web):
        managers = {e["manager"] for e in obj["metadata"]["managedFields"] if not e.get("subresource")}
        assert "team-b" not in managers and "team-a" in managers, managers


def test_verify_reports_a_broken_history_and_deletes_what_is_not_the_sets(cluster, kube, namespace, tmp_path):
    common = {"parent": "shop", "namespace": namespace}
    results, _ = run(cluster, tmp_path, namespace, [task("release", "r1", definition=[cm("settings", a="1")],
                                                          **common)], "release")
    set_id = results["r1"]["applyset"]["id"]
    base = f"/api/v1/namespaces/{namespace}"
    (current,) = history_secrets(kube, namespace)
    kube.delete(f"{base}/secrets/{current['metadata']['name']}")
    stranger = kube.create(f"{base}/configmaps", cm("stranger"))
    kube.create(f"{base}/secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "copied-revision", "labels": {HISTORY_OF: set_id, "applyset.kubernetes.ansible/revision": "7",
                                              "applyset.kubernetes.ansible/chunk": "0"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "stranger",
                             "uid": stranger["metadata"]["uid"]}]}})
    verify = {"applyset.kubernetes.applyset_verify": {**common, "fix": True}, "register": "verify",
              "ignore_errors": True}
    results, _ = run(cluster, tmp_path, namespace, [verify], "verify")
    codes = {p["code"]: p for p in results["verify"]["problems"]}
    assert not codes["history_pointer_missing"]["fixed"] and codes["history_foreign_revision"]["fixed"], codes
    assert kube.get(f"{base}/secrets/copied-revision") is None


def test_the_rollback_playbook_takes_the_survey_variable(cluster, kube, namespace, tmp_path):
    manifests = tmp_path / "shop"
    manifests.mkdir()
    (manifests / "20-config.yaml").write_text(yaml.safe_dump(cm("shop-settings", currency="EUR")))
    (manifests / "50-banner.yaml").write_text(yaml.safe_dump(cm("holiday-banner", text="Happy holidays!")))
    deploy = {"shop_namespace": namespace, "shop_manifests": str(manifests)}
    for extra in ({}, {"shop_without_banner": True}):
        proc = run_playbook(cluster, "playbooks/deploy.yml", extra_vars={**deploy, **extra})
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/holiday-banner") is None
    proc = run_playbook(cluster, "playbooks/rollback.yml", extra_vars={
        "shop_namespace": namespace, "rollback_revision": 1, "awx_job_id": 42, "awx_user_name": "oncall"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "revision 3:" in proc.stdout
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/holiday-banner")["data"] == {"text": "Happy holidays!"}
    (newest,) = [s for s in history_secrets(kube, namespace)
                 if s["metadata"]["labels"]["applyset.kubernetes.ansible/revision"] == "3"]
    summary = json.loads(newest["metadata"]["annotations"]["applyset.kubernetes.ansible/revision-summary"])
    assert summary["rollback_of"] == 1
    assert (summary["provenance"]["awx_job_id"], summary["provenance"]["awx_user_name"]) == ("42", "oncall")


def refused(obj):
    """``obj`` with a field the server's Strict field validation refuses."""
    return {**obj, "bogus": 1}


def failing_hook(name, moment):
    """A Job hook that is never scheduled, so it fails by its deadline (kwok runs the Pods)."""
    pod = {"restartPolicy": "Never", "containers": [{"name": "run", "image": "busybox:1.36"}],
           "nodeSelector": {"applyset-test/no-such-node": "true"}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "annotations": {"applyset.kubernetes.ansible/hook": moment}},
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": 1, "template": {"spec": pod}}}


def test_a_rolled_back_release_says_what_the_rollback_did_and_names_what_failed(cluster, kube, namespace, tmp_path):
    # Issue 36, item 8: the message says what the rollback did (from its report), not what the failed
    # run left; error.object names the object that failed; a failed post-apply hook is in hooks;
    # rollback_to a revision marked failed warns.
    common = {"parent": "shop", "namespace": namespace, "on_failure": "rollback"}
    results, output = run(cluster, tmp_path, namespace, [
        task("good release", "good", definition=[cm("settings", color="blue")], **common),
        task("refused member", "bad", definition=[cm("settings", color="red"), cm("only-bad", new="yes"),
                                                  refused(cm("broken"))], **common),
        task("failing post-apply hook", "hooked", definition=[cm("settings", color="green"),
                                                             failing_hook("smoke", "post-apply")], **common),
        task("back to the failed release", "to_failed", rollback_to="4", parent="shop", namespace=namespace),
    ])
    bad = results["bad"]
    assert bad["failed"] and bad["rolled_back_to"] == 1, bad
    assert bad["msg"].startswith(f"ConfigMap {namespace}/broken: the release failed and the set was rolled back to "
                                 "revision 1 (the rollback re-applied 1 object and pruned 1); what failed: some "
                                 f"objects could not be applied:\n- ConfigMap {namespace}/broken: "), bad["msg"]
    assert "nothing was pruned" not in bad["msg"] and "keeps covering" not in bad["msg"], bad["msg"]
    assert bad["error"]["object"] == f"ConfigMap {namespace}/broken", bad["error"]
    assert [(o["name"], o["action"]) for o in bad["objects"]] == [("settings", "configured"),
                                                                  ("only-bad", "pruned")], bad["objects"]
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/only-bad") is None

    hooked = results["hooked"]
    assert hooked["failed"] and hooked["rolled_back_to"] == 3, hooked
    assert [(h["phase"], h["name"], h["action"]) for h in hooked["hooks"]] == [("post-apply", "smoke", "failed")]
    assert "(the rollback re-applied 1 object)" in hooked["msg"] and "the post-apply hook Job" in hooked["msg"]
    assert [(o["name"], o["action"]) for o in hooked["objects"]] == [("settings", "configured")], hooked["objects"]

    to_failed = results["to_failed"]
    assert not to_failed.get("failed") and to_failed["revision"] == 6, to_failed
    assert (f"revision 4 of ApplySet Secret {namespace}/shop is marked failed: the release it records did not go "
            "through, and rolling back to it applies that release again") in to_failed.get("warnings", []), output
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/settings")["data"] == {"color": "green"}


def test_a_release_with_nothing_to_roll_back_says_so(cluster, kube, namespace, tmp_path):
    # Issue 36, item 8: a failing first release has nothing to roll back to; a pre-apply hook that
    # fails before any member write records no revision and rolls nothing back.
    common = {"namespace": namespace, "on_failure": "rollback"}
    results, _ = run(cluster, tmp_path, namespace, [
        task("first release fails", "first", parent="first", definition=[cm("a"), refused(cm("broken"))], **common),
        task("good release", "good", parent="hooked", definition=[cm("b", v="1")], **common),
        task("pre-apply hook fails", "hook", parent="hooked",
             definition=[cm("b", v="2"), failing_hook("migrate", "pre-apply")], **common),
        {"name": "history", "applyset.kubernetes.applyset_info": {"parent": "hooked", "namespace": namespace,
                                                                  "revisions": True}, "register": "info"},
    ])
    first = results["first"]
    assert first["failed"] and "rolled_back_to" not in first, first
    assert first["msg"].split(". Fix:")[0].endswith("; nothing to roll back to: this was the set's first release")

    hook = results["hook"]
    assert hook["failed"] and "rolled_back_to" not in hook and "rolled back" not in hook["msg"], hook
    assert "nothing needed rolling back: the release wrote no member" in hook["msg"], hook["msg"]
    assert [(o["name"], o["action"], o["reason"]) for o in hook["objects"]] == [
        ("b", "skipped", "not tried: a pre-apply hook failed")]
    assert hook["changed"] is True  # the hook's Job was created: a write
    listed = results["info"]["applysets"][0]["revisions"]
    assert [(r["revision"], r["result"]) for r in listed] == [(1, "deployed")], listed
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/b")["data"] == {"v": "1"}
