"""Hooks (issue 27, item 5) against the real control plane, through ansible-playbook: a chart-like
input as ``helm template`` prints it, with Helm's and Argo CD's hook annotations.

kwok runs the Pods, so Jobs complete (and a Job that is never scheduled fails by its deadline).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import yaml
from ansible_cli import run_playbook

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.run.options import Options
from applyset import errors
from applyset.inputs import manifests  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402

PART_OF = "applyset.kubernetes.io/part-of"
KINDS = "applyset.kubernetes.io/contains-group-kinds"
HOOK_OF = "applyset.kubernetes.ansible/hook-of"


def job(name, annotations, *, never_scheduled=False):
    pod = {"restartPolicy": "Never", "containers": [{"name": "run", "image": "busybox:1.36"}]}
    spec = {"backoffLimit": 0, "template": {"spec": pod}}
    if never_scheduled:
        pod["nodeSelector"] = {"applyset.example.com/no-such-node": "true"}
        spec["activeDeadlineSeconds"] = 1
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "annotations": annotations},
            "spec": spec}


def configmap(name, data=None, annotations=None):
    meta = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"v": name}}


def chart(version="1"):
    """A release as `helm template` prints it: members, then hooks of both tools."""
    web = {"app": "web"}
    return [
        configmap("settings", {"version": version}),
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
         "spec": {"replicas": 1, "selector": {"matchLabels": web}, "template": {
             "metadata": {"labels": web}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
         "spec": {"selector": web, "ports": [{"port": 80}]}},
        job("migrate", {"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": "-5",
                        "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded"}),
        job("schema", {"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": "0"}),
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "migrator", "annotations": {"helm.sh/hook": "pre-install,pre-upgrade",
                                                          "helm.sh/hook-weight": "-10"}}},
        job("smoke", {"helm.sh/hook": "post-install", "helm.sh/hook-delete-policy": "hook-succeeded"}),
        job("cleanup", {"helm.sh/hook": "pre-delete", "helm.sh/hook-delete-policy": "hook-succeeded"}),
        configmap("farewell", annotations={"argocd.argoproj.io/hook": "PostDelete"}),
        configmap("test-connection", annotations={"helm.sh/hook": "test"}),
    ]


def deploy(cluster, tmp_path, namespace, parent, objects, *, state="present", check=False, wait=False):
    """One applyset_apply task in a playbook; returns (rc, the registered result, output)."""
    src = tmp_path / f"{parent}-src"
    src.mkdir(exist_ok=True)
    (src / "release.yaml").write_text(yaml.safe_dump_all(objects))
    out = tmp_path / f"{parent}-result.json"
    out.unlink(missing_ok=True)
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "release", "register": "release", "ignore_errors": True, "applyset.kubernetes.applyset_apply": {
            "parent": f"secrets/{parent}", "namespace": namespace, "src": str(src), "state": state,
            "wait": wait, "wait_timeout": 120}},
        {"ansible.builtin.copy": {"content": "{{ release | to_json }}", "dest": str(out)}, "check_mode": False},
    ]}]))
    started = time.monotonic()
    proc = run_playbook(cluster, playbook, check=check)
    result = json.loads(out.read_text())
    result["_seconds"] = round(time.monotonic() - started, 1)
    return int(bool(result.get("failed"))), result, proc.stdout + proc.stderr


def hooks_of(result):
    return [(h["phase"], h["kind"], h["name"], h["action"]) for h in result.get("hooks", [])]


def test_a_chart_with_helm_hooks_runs_its_migration_first_and_leaves_no_hook_in_the_set(cluster, kube, namespace,
                                                                                       tmp_path):
    ns = namespace
    rc, first, out = deploy(cluster, tmp_path, ns, "release", chart())
    assert rc == 0, out
    assert hooks_of(first) == [("pre-apply", "ServiceAccount", "migrator", "completed"),
                               ("pre-apply", "Job", "migrate", "completed"),
                               ("pre-apply", "Job", "schema", "completed"),
                               ("post-apply", "Job", "smoke", "completed")]
    assert [h["deleted"] for h in first["hooks"]] == [False, True, False, True]
    assert any("test-connection" in w and "left out of the run" in w for w in first.get("warnings", [])), out
    assert sorted(o["name"] for o in first["objects"]) == ["settings", "web", "web"]  # no hook among the members
    print(f"install with 4 hooks: {first['requests']} in {first['_seconds']}s")

    # The pre-install Job completed before the first member was created.
    schema = kube.get(f"/apis/batch/v1/namespaces/{ns}/jobs/schema")
    web = kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/web")
    assert schema["status"]["completionTime"] <= web["metadata"]["creationTimestamp"]
    assert kube.request("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/migrate")[0] == 404  # hook-succeeded
    assert kube.request("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/smoke")[0] == 404
    # No hook object is a member: no part-of label, not in the parent's hint.
    for path in (f"/apis/batch/v1/namespaces/{ns}/jobs/schema", f"/api/v1/namespaces/{ns}/serviceaccounts/migrator"):
        meta = kube.get(path)["metadata"]
        assert PART_OF not in (meta.get("labels") or {}) and meta["annotations"][HOOK_OF], path
    parent = kube.get(f"/api/v1/namespaces/{ns}/secrets/release")["metadata"]
    assert parent["annotations"][KINDS] == "ConfigMap,Deployment.apps,Service"
    for name in ("cleanup", "test-connection", "farewell"):  # other moments' hooks did not run
        assert kube.request("GET", f"/api/v1/namespaces/{ns}/configmaps/{name}")[0] == 404
    assert kube.request("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/cleanup")[0] == 404

    # The same input again: a no-op, no hook run, nothing written.
    schema_uid = schema["metadata"]["uid"]
    rc, again, out = deploy(cluster, tmp_path, ns, "release", chart())
    assert rc == 0 and again["changed"] is False and "hooks" not in again, out
    assert again["requests"]["writes"] == 0
    assert kube.get(f"/apis/batch/v1/namespaces/{ns}/jobs/schema")["metadata"]["uid"] == schema_uid
    print(f"no-op re-run: {again['requests']} in {again['_seconds']}s")

    # A changed release is an upgrade: the pre-upgrade hooks run again (the Job created anew by
    # before-hook-creation), the post-install one does not.
    rc, upgrade, out = deploy(cluster, tmp_path, ns, "release", chart(version="2"))
    assert rc == 0 and upgrade["changed"] is True, out
    assert hooks_of(upgrade) == [("pre-apply", "ServiceAccount", "migrator", "completed"),
                                 ("pre-apply", "Job", "migrate", "completed"),
                                 ("pre-apply", "Job", "schema", "completed")]
    assert [h.get("replaced") for h in upgrade["hooks"]] == [True, False, True]
    assert kube.get(f"/apis/batch/v1/namespaces/{ns}/jobs/schema")["metadata"]["uid"] != schema_uid
    print(f"upgrade with 3 hooks: {upgrade['requests']} in {upgrade['_seconds']}s")

    # Uninstall with the same src: pre-delete first, the members, then post-delete.
    rc, gone, out = deploy(cluster, tmp_path, ns, "release", chart(), state="absent", wait=True)
    assert rc == 0, out
    assert hooks_of(gone) == [("pre-delete", "Job", "cleanup", "completed"),
                              ("post-delete", "ConfigMap", "farewell", "completed")]
    assert kube.request("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/web")[0] == 404
    assert kube.request("GET", f"/api/v1/namespaces/{ns}/secrets/release")[0] == 404
    farewell = kube.get(f"/api/v1/namespaces/{ns}/configmaps/farewell")["metadata"]
    assert PART_OF not in (farewell.get("labels") or {})


def test_a_failing_pre_apply_hook_leaves_the_set_unapplied_and_runs_the_on_failure_hooks(cluster, kube, namespace,
                                                                                         tmp_path):
    ns = namespace
    objects = [configmap("app-config"),
               job("doomed", {"applyset.kubernetes.ansible/hook": "pre-apply",
                              "applyset.kubernetes.ansible/hook-delete-policy": "hook-failed"}, never_scheduled=True),
               configmap("alarm", annotations={"argocd.argoproj.io/hook": "SyncFail"})]
    rc, result, out = deploy(cluster, tmp_path, ns, "broken", objects)
    assert rc == 1, out
    assert "the pre-apply hook Job" in result["msg"] and "doomed" in result["msg"], result["msg"]
    assert hooks_of(result) == [("pre-apply", "Job", "doomed", "failed"),
                                ("on-failure", "ConfigMap", "alarm", "completed")]
    assert result["hooks"][0]["deleted"] is True
    assert kube.request("GET", f"/api/v1/namespaces/{ns}/configmaps/app-config")[0] == 404  # nothing applied
    assert [(o["name"], o["action"], o["reason"]) for o in result["objects"]] == [
        ("app-config", "skipped", "not tried: a pre-apply hook failed")]  # every member listed
    assert kube.request("GET", f"/api/v1/namespaces/{ns}/configmaps/alarm")[0] == 200

    # An unknown hook value is refused before any write, naming the object and the accepted values.
    objects[1]["metadata"]["annotations"] = {"helm.sh/hook": "pre-instal"}
    rc, result, out = deploy(cluster, tmp_path, ns, "typo", objects)
    assert rc == 1 and "unknown value 'pre-instal'" in result["msg"] and "pre-install, pre-upgrade" in result["msg"]
    assert f"Job {ns}/doomed" in result["msg"], result["msg"]
    assert kube.request("GET", f"/api/v1/namespaces/{ns}/secrets/typo")[0] == 404


def test_check_mode_creates_nothing_and_lists_the_hooks(cluster, kube, namespace, tmp_path):
    ns = namespace
    rc, preview, out = deploy(cluster, tmp_path, ns, "release", chart(), check=True)
    assert rc == 0 and preview["changed"] is True, out
    assert hooks_of(preview) == [("pre-apply", "ServiceAccount", "migrator", "would run"),
                                 ("pre-apply", "Job", "migrate", "would run"),
                                 ("pre-apply", "Job", "schema", "would run"),
                                 ("post-apply", "Job", "smoke", "would run")]
    for path in (f"/apis/batch/v1/namespaces/{ns}/jobs/migrate", f"/apis/batch/v1/namespaces/{ns}/jobs/schema",
                 f"/api/v1/namespaces/{ns}/serviceaccounts/migrator", f"/api/v1/namespaces/{ns}/configmaps/settings",
                 f"/api/v1/namespaces/{ns}/secrets/release"):
        assert kube.request("GET", path)[0] == 404, path


def test_the_cost_of_hooks_in_requests_and_seconds(cluster, namespace):
    """Figures, no timed assertion: the same members with no hook, with one ConfigMap hook (nothing
    to wait for) and with one Job hook (run to completion), each installed then upgraded."""
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    marker = configmap("marker", annotations={"applyset.kubernetes.ansible/hook": "pre-apply"})
    variants = {"no hook": [], "1 ConfigMap hook": [marker],
                "1 Job hook": [job("migrate", {"helm.sh/hook": "pre-install,pre-upgrade"})]}
    for label, extra in variants.items():
        parent = "cost-" + label.replace(" ", "-").lower()
        for version in ("1", "2"):
            members = [configmap(f"{parent}-{i}", {"version": version}) for i in range(3)]
            if extra:
                extra[0]["metadata"]["name"] = f"{parent}-hook"
            run = engine.Engine(client, f"secrets/{parent}", namespace, Options.from_settings(wait_timeout=120))
            sent, writes = client.requests_sent, client.writes_sent
            started = time.monotonic()
            report = run.apply(manifests.load_definition(members + extra))
            seconds = time.monotonic() - started
            assert len(report.hooks) == len(extra)
            print(f"{label}, {'install' if version == '1' else 'upgrade'}: {client.requests_sent - sent} requests "
                  f"({client.writes_sent - writes} writes) in {seconds:.2f}s")


def web(node_selector=None):
    pod = {"containers": [{"name": "web", "image": "nginx:1.27"}]}
    if node_selector:
        pod["nodeSelector"] = node_selector
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod}}}


def test_with_wait_post_apply_hooks_run_once_the_members_are_ready_and_a_failed_wait_runs_on_failure(
        cluster, kube, namespace):
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    ns = namespace
    hooks = [job("smoke", {"argocd.argoproj.io/hook": "PostSync"}),
             configmap("alarm", annotations={"applyset.kubernetes.ansible/hook": "on-failure",
                                             "applyset.kubernetes.ansible/hook-delete-policy": "hook-succeeded"})]
    run = engine.Engine(client, "secrets/waited", ns, Options.from_settings(wait=True, wait_timeout=120))
    report = run.apply(manifests.load_definition([web()] + hooks))
    assert [(h["phase"], h["name"], h["action"]) for h in report.hooks] == [("post-apply", "smoke", "completed")]
    live = kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/web")
    available = next(c for c in live["status"]["conditions"] if c["type"] == "Available")
    smoke = kube.get(f"/apis/batch/v1/namespaces/{ns}/jobs/smoke")
    assert available["status"] == "True" and available["lastTransitionTime"] <= smoke["metadata"]["creationTimestamp"]

    # A rollout that can never be ready: the wait fails, the post-apply hook does not run, the
    # on-failure hook does, and the run fails with the wait's error.
    run = engine.Engine(client, "secrets/waited", ns, Options.from_settings(wait=True, wait_timeout=3))
    try:
        run.apply(manifests.load_definition([web({"applyset.example.com/no-such-node": "true"})] + hooks))
        raise AssertionError("the wait should have failed")
    except errors.ApplySetError as err:
        assert "not ready after 3s" in err.message, err.message
        assert [(h["phase"], h["name"], h["action"], h["deleted"]) for h in err.report.hooks] == [
            ("on-failure", "alarm", "completed", True)]
    assert kube.get(f"/apis/batch/v1/namespaces/{ns}/jobs/smoke")["metadata"]["uid"] == smoke["metadata"]["uid"]


def job_as(name, annotations, service_account):
    body = job(name, annotations)
    body["spec"]["template"]["spec"]["serviceAccountName"] = service_account
    return body


def test_argo_cd_deletes_its_hook_succeeded_hooks_once_the_whole_run_succeeded(cluster, kube, namespace):
    """Argo CD (gitops-engine's sync) deletes HookSucceeded hooks when the sync succeeds, not after
    each phase: a PostSync Job may run under a PreSync ServiceAccount."""
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    ns = namespace
    deleted_when = []
    send = client.send

    def recording(req):
        if req.method == "DELETE":
            deleted_when.append((req.path.rsplit("/", 1)[-1], [h["name"] for h in run.report.hooks]))
        return send(req)

    client.send = recording
    presync = {"argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"}
    objects = [configmap("settings"),
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "deployer", "annotations": presync}},
               job_as("prepare", presync, "deployer"),
               job_as("announce", {"argocd.argoproj.io/hook": "PostSync",
                                   "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"}, "deployer")]
    run = engine.Engine(client, "secrets/argo", ns, Options.from_settings(wait_timeout=60))
    report = run.apply(manifests.load_definition(objects))
    assert [(h["phase"], h["name"], h["action"], h["deleted"]) for h in report.hooks] == [
        ("pre-apply", "deployer", "completed", True), ("pre-apply", "prepare", "completed", True),
        ("post-apply", "announce", "completed", True)]
    # Deleted after the last hook of the run, last run first.
    assert [(name, ran) for name, ran in deleted_when] == [
        (name, ["deployer", "prepare", "announce"]) for name in ("announce", "prepare", "deployer")]
    assert kube.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/deployer")[0] == 404


def test_a_hook_job_that_cannot_create_its_pod_says_why(cluster, namespace):
    """A hook Job under a ServiceAccount that does not exist never gets a pod: the error names the
    Job controller's FailedCreate event, not only '0/1 completions, 0 active'."""
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    objects = [configmap("settings"), job_as("migrate", {"helm.sh/hook": "pre-install"}, "no-such-account")]
    run = engine.Engine(client, "secrets/why", namespace, Options.from_settings(wait_timeout=5))
    with pytest.raises(errors.ApplySetError) as failed:
        run.apply(manifests.load_definition(objects))
    message = failed.value.message
    assert "the pre-apply hook Job" in message and "0/1 completions, 0 active" in message, message
    assert "why: Job" in message and "FailedCreate" in message and 'serviceaccount "no-such-account" not found' in message, message


def test_a_failed_run_deletes_argo_cds_hook_failed_hooks_and_only_helms_failed_hook(cluster, kube, namespace):
    """Argo CD deletes every HookFailed hook of a failed sync (one that succeeded too); Helm deletes
    only the hook that failed."""
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    ns = namespace
    argo = {"argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/hook-delete-policy": "HookFailed"}
    helm = {"helm.sh/hook": "pre-install", "helm.sh/hook-delete-policy": "hook-failed"}
    objects = [configmap("settings"), configmap("argo-done", annotations={**argo, "argocd.argoproj.io/sync-wave": "-1"}),
               configmap("helm-done", annotations={**helm, "helm.sh/hook-weight": "-1"}),
               job("doomed", helm, never_scheduled=True)]
    run = engine.Engine(client, "secrets/failing", ns, Options.from_settings(wait_timeout=60))
    with pytest.raises(errors.ApplySetError) as failed:
        run.apply(manifests.load_definition(objects))
    assert [(h["name"], h["action"], h["deleted"]) for h in failed.value.report.hooks] == [
        ("argo-done", "completed", True), ("helm-done", "completed", False), ("doomed", "failed", True)]
    assert kube.request("GET", f"/api/v1/namespaces/{ns}/configmaps/argo-done")[0] == 404
    assert kube.request("GET", f"/api/v1/namespaces/{ns}/configmaps/helm-done")[0] == 200
    assert kube.request("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/doomed")[0] == 404
