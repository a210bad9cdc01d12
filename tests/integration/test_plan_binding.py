"""What an approved plan binds (issue 45, item 4) against the real control plane: each Secret value
it sends (a keyed digest, the key kept in the parent Secret), the live values of each member it
configures as the preview read them, whose plan it is, a well-formed id; and what a release that
was rolled back shows, and what the history says of a rollback whose wait failed (item 5).

Runs go through the engine in this process, each with a client of its own (plan_runs.py, as in
test_approved_plan.py, which also says how "nothing was written" is shown).
"""

from __future__ import annotations

import base64
import dataclasses
import json

from plan_runs import approved_from, ok, refused, run, versions

from applyset import engine, spec
from applyset.errors import ApplySetError, InputError
from applyset.history import revisions as history
from applyset.inputs import manifests
from applyset.kube import client as core_kube
from applyset.run.options import Options

WEB = {"app": "web"}
PLAN_KEY = "applyset.kubernetes.plan-key"  # the parent Secret's data key (parent/plan_key.py)


def cm(name, v="1"):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": v}}


def secret(name, password, **labels):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, **({"labels": labels} if labels else {})},
            "stringData": {"password": password}}


def web(image="nginx:1.27", replicas=1, **pod):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": WEB}, "template": {
                "metadata": {"labels": WEB}, "spec": {"containers": [{"name": "web", "image": image}], **pod}}}}


def stuck_web(image):
    """A Deployment whose pod no node can take: never ready."""
    return web(image, nodeSelector={"applyset-test/no-such-node": "true"})


def line_for(err, obj):
    found = [line for line in err.details["differences"] if line.startswith(obj + ":")]
    assert len(found) == 1, err.message
    return found[0]


def test_a_secret_value_changed_after_the_approval_is_refused_naming_the_secret(cluster, kube, namespace):
    ok(run(cluster, namespace, [cm("settings"), secret("db", "pw-first", tier="a")]))
    parent = kube.get(f"/api/v1/namespaces/{namespace}/secrets/shop")
    key = parent["data"][PLAN_KEY]
    assert len(base64.b64decode(key)) == 32
    # db is configured (a label changed), api created: both carry the keyed digest of their values.
    approved = [cm("settings"), secret("db", "pw-approved", tier="b"), secret("api", "token-approved")]
    preview = ok(run(cluster, namespace, approved, dry_run=True))
    entries = {e["object"]: e for e in preview.plan}
    assert entries[f"Secret {namespace}/db"]["action"] == "configure"
    assert entries[f"Secret {namespace}/api"]["action"] == "create"
    assert entries[f"Secret {namespace}/db"]["values"] and entries[f"Secret {namespace}/api"]["values"]
    shown = json.dumps(preview.to_dict())
    assert key not in shown and "pw-approved" not in shown and "token-approved" not in shown

    edited = [cm("settings"), secret("db", "pw-edited", tier="b"), secret("api", "token-edited")]
    err = refused(cluster, kube, namespace, edited, approved_from(preview))
    for name, action in (("db", "configure"), ("api", "create")):
        line = line_for(err, f"Secret {namespace}/{name}")
        assert line.startswith(f"Secret {namespace}/{name}: approved {action} (values=") and line.endswith(
            "its values were changed in the manifests since"), line
    assert "edited" not in err.message and key not in err.message
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/api") is None

    # What was approved still goes through, and the key stays where it was.
    report = ok(run(cluster, namespace, approved, approved_plan=approved_from(preview)))
    assert report.plan_id == preview.plan_id
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/shop")["data"][PLAN_KEY] == key


def test_a_change_on_the_cluster_after_the_preview_in_a_field_the_plan_sends_is_refused(cluster, kube, namespace):
    ok(run(cluster, namespace, [cm("settings"), web("nginx:1.27", replicas=0)]))
    wanted = [cm("settings"), web("nginx:1.28", replicas=0)]
    preview = ok(run(cluster, namespace, wanted, dry_run=True))
    assert {e["object"]: e["action"] for e in preview.plan}[f"Deployment.apps {namespace}/web"] == "configure"
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    # kubectl set image web web=nginx:1.27-hotfix: a strategic merge patch by another manager.
    status, body, _ = kube.request(
        "PATCH", path, {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27-hotfix"}]}}}},
        query={"fieldManager": "kubectl-set"}, content_type="application/strategic-merge-patch+json")
    assert status == 200, body
    err = refused(cluster, kube, namespace, wanted, approved_from(preview))
    line = line_for(err, f"Deployment.apps {namespace}/web")
    assert line.startswith(f"Deployment.apps {namespace}/web: approved configure (start=") and line.endswith(
        "it was changed on the cluster since, in a field the plan sends"), line
    assert kube.get(path)["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27-hotfix"


def test_a_change_in_a_field_the_plan_does_not_send_keeps_the_plan(cluster, kube, namespace):
    ok(run(cluster, namespace, [web("nginx:1.27", replicas=0)]))
    wanted = [web("nginx:1.28", replicas=0)]
    preview = ok(run(cluster, namespace, wanted, dry_run=True))
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    status, body, _ = kube.request("PATCH", path, {"metadata": {"labels": {"team": "a"}},
                                                   "spec": {"revisionHistoryLimit": 3}},
                                   query={"fieldManager": "someone"}, content_type="application/merge-patch+json")
    assert status == 200, body
    report = ok(run(cluster, namespace, wanted, approved_plan=approved_from(preview)))
    assert report.plan_id == preview.plan_id
    assert kube.get(path)["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"


def test_a_plan_for_another_set_says_so(cluster, kube, namespace):
    ok(run(cluster, namespace, [cm("settings")]))
    ok(run(cluster, namespace, [cm("other-settings")], parent="secrets/other"))
    theirs = ok(run(cluster, namespace, [cm("other-settings")], parent="secrets/other", dry_run=True))
    err = refused(cluster, kube, namespace, [cm("settings")], approved_from(theirs))
    assert err.message.startswith("the approved plan is for another set or run"), err.message
    assert err.details["differences"] == [
        f"ApplySet Secret {namespace}/other: the approved plan is for this set (apply, id {theirs.plan[0]['id']}), "
        f"not for ApplySet Secret {namespace}/shop (apply, id {err.report.plan[0]['id']})"]
    assert "removed from the manifests" not in err.message


def test_a_malformed_plan_id_is_refused_not_compared(cluster, kube, namespace):
    ok(run(cluster, namespace, [cm("settings")]))
    preview = ok(run(cluster, namespace, [cm("settings")], dry_run=True))
    before = versions(kube, namespace)
    for typo in (preview.plan_id[:-1], preview.plan_id.upper().replace("PLAN-V1", "plan-v1"), "plan-v1:" + "z" * 24):
        err = run(cluster, namespace, [cm("settings")], approved_plan=typo)
        assert isinstance(err, InputError) and err.report is None, err  # refused before the run began
        assert err.obj == "approved_plan" and f"approved_plan {typo!r} is not a plan id" in err.message, err.message
    assert versions(kube, namespace) == before


def _history(cluster, namespace):
    """``(number, result recorded, rollback_of)`` of each revision of the set shop."""
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    secrets = client.discover().for_group_kind(spec.SECRET_KIND)
    listed = history.revisions(history.list_secrets(client, secrets, namespace,
                                                    spec.compute_id("shop", namespace, "Secret", "")))
    return [(r.number, r.stored_result, r.summary.get("rollback_of")) for r in listed]


def _release(cluster, namespace, objs, **options):
    """A release with ``on_failure: rollback``, as the module runs it (engine.apply_or_roll_back)."""
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    opts = Options.from_settings(**options)

    def make_engine(o):
        return engine.Engine(client, "secrets/shop", namespace, o)
    try:
        return engine.apply_or_roll_back(make_engine, opts, manifests.load_definition(objs))
    except ApplySetError as err:
        return err


def test_after_a_rollback_the_result_shows_the_approved_plan_id(cluster, kube, namespace):
    settings = history.Settings(max=5, on_failure="rollback", rollback_timeout=30)
    ok(run(cluster, namespace, [cm("settings")], history=settings))
    stuck = [cm("settings", v="2"), stuck_web("registry.invalid/web:1")]
    preview = ok(run(cluster, namespace, stuck, dry_run=True, history=settings))
    err = _release(cluster, namespace, stuck, approved_plan=preview.plan_id, history=settings, wait=True,
                   wait_timeout=2)
    assert isinstance(err, engine.RolledBack), err
    assert err.report.plan_id == preview.plan_id
    assert err.report.rollback_plan_id and err.report.rollback_plan_id != preview.plan_id
    shown = err.report.to_dict()
    assert shown["plan_id"] == preview.plan_id and shown["rollback_plan_id"] == err.report.rollback_plan_id
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/settings")["data"] == {"v": "1"}


def test_a_rollback_whose_wait_failed_is_listed_failed(cluster, kube, namespace):
    # Without prune the wait comes after the release that records the revision (with prune, the
    # wait for readiness comes before it, and a failed one is recorded failed already).
    settings = history.Settings(max=5, on_failure="rollback", rollback_timeout=2)
    ok(run(cluster, namespace, [cm("settings"), stuck_web("registry.invalid/web:1")], history=settings))
    err = _release(cluster, namespace, [cm("settings", v="2"), stuck_web("registry.invalid/web:2")], history=settings,
                   wait=True, wait_timeout=2, prune=False)
    assert isinstance(err, ApplySetError) and not isinstance(err, engine.RolledBack), err
    assert "and so did the rollback to revision 1" in err.message, err.message
    assert _history(cluster, namespace) == [(1, "deployed", None), (2, "failed", None), (3, "failed", 1)]
    # A rollback_to of its own whose wait fails is listed failed as well (to revision 2: the set
    # is revision 1's already, and a rollback that changes nothing records nothing).
    again = _release(cluster, namespace, [], wait=True, wait_timeout=2, prune=False,
                     history=dataclasses.replace(settings, on_failure=None, rollback_to=2))
    assert isinstance(again, ApplySetError), again
    assert _history(cluster, namespace)[-1] == (4, "failed", 2)
