"""Approved plans (issue 39) against the real control plane: a check-mode run's plan id, the real
run bound to it with ``approved_plan``, and its refusal, before any write, of a plan that changed.

Runs go through the engine in this process (each with a client of its own, so that the report's
request counters are that run's alone); the cluster is changed and read back through the
independent test client. "Nothing was written" is shown twice: the run's own count of mutating
requests is 0, and the resourceVersion of every ConfigMap and Secret of the namespace (the parent
among them) is what it was before the refused run, and so are each Deployment's generation, labels
and annotations (its status changes on its own).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from ansible_cli import run_playbook
from plan_runs import approved_from, ok, refused, run, versions

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset.errors import PlanChanged  # noqa: E402
from applyset.history.revisions import Settings  # noqa: E402
from applyset.steps import approval  # noqa: E402

PART_OF = "applyset.kubernetes.io/part-of"
WEB = {"app": "web"}


def cm(name, v="1"):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": v}}


def web(image="nginx:1.27"):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": WEB}, "template": {
                "metadata": {"labels": WEB}, "spec": {"containers": [{"name": "web", "image": image}]}}}}


SHOP = [cm("banner"), cm("settings"), cm("extra"), web()]


def test_a_preview_s_plan_is_carried_out_and_two_previews_agree(cluster, kube, namespace):
    ok(run(cluster, namespace, SHOP))
    desired = [cm("banner", v="2"), cm("settings"), web()]  # banner changed, extra removed: pruned
    first = ok(run(cluster, namespace, desired, dry_run=True))
    second = ok(run(cluster, namespace, desired, dry_run=True))
    assert first.plan_id.startswith("plan-v1:") and first.plan_id == second.plan_id
    assert first.plan == second.plan
    actions = {e["object"]: e["action"] for e in first.plan}
    assert actions == {f"ApplySet Secret {namespace}/shop": "apply", f"ConfigMap {namespace}/banner": "configure",
                       f"ConfigMap {namespace}/settings": "unchanged", f"ConfigMap {namespace}/extra": "prune",
                       f"Deployment.apps {namespace}/web": "unchanged"}

    report = ok(run(cluster, namespace, desired, approved_plan=first.plan_id))
    assert report.plan_id == first.plan_id
    assert {o.name: o.action for o in report.objects} == {"banner": "configured", "settings": "unchanged",
                                                          "web": "unchanged", "extra": "pruned"}
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/extra") is None
    # The whole check-mode result works as well as the id, and a no-op binds to its own plan.
    again = ok(run(cluster, namespace, desired, dry_run=True))
    noop = ok(run(cluster, namespace, desired, approved_plan=approved_from(again)))
    assert noop.plan_id == again.plan_id and noop.requests["writes"] == 0


def _delete(kube, namespace):
    kube.delete(f"/api/v1/namespaces/{namespace}/configmaps/settings")


def _edit(kube, namespace):
    kube.apply(f"/api/v1/namespaces/{namespace}/configmaps/settings",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"v": "by-hand"}},
               field_manager="someone", force=True)


# (how the cluster or the manifests change after the approval, the manifests of the real run,
#  the line the refusal must show)
CASES = {
    "deleted on the cluster": (_delete, SHOP, "ConfigMap {ns}/settings: approved unchanged, now create: "
                                              "it was deleted on the cluster since"),
    "changed on the cluster": (_edit, SHOP, "ConfigMap {ns}/settings: approved unchanged, now configure: "
                                            "it was changed on the cluster since, in a field the plan sends"),
    "added to the manifests": (None, SHOP + [cm("new")],
                               "ConfigMap {ns}/new: approved nothing, now create: it is new in the manifests"),
    "removed from the manifests": (None, SHOP[1:], "ConfigMap {ns}/banner: approved unchanged, now prune: "
                                                   "it was removed from the manifests since"),
    "changed in the manifests": (None, [cm("banner", v="9"), *SHOP[1:]],
                                 "ConfigMap {ns}/banner: approved unchanged, now configure: "
                                 "it was changed in the manifests since"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_stale_plan_is_refused_before_any_write_naming_the_difference(cluster, kube, namespace, case):
    change, objs, line = CASES[case]
    ok(run(cluster, namespace, SHOP))
    preview = ok(run(cluster, namespace, SHOP, dry_run=True))
    if change is not None:
        change(kube, namespace)
    err = refused(cluster, kube, namespace, objs, approved_from(preview))
    assert line.format(ns=namespace) in err.message, err.message
    assert err.details["differences"] == [line.format(ns=namespace)], err.details
    assert err.details["approved_plan_id"] == preview.plan_id and err.details["plan_id"] != preview.plan_id
    assert "nothing was written" in err.message and err.report.plan_id == err.details["plan_id"]


def test_a_prune_target_recreated_with_a_new_uid_is_refused(cluster, kube, namespace):
    ok(run(cluster, namespace, SHOP))
    without_banner = SHOP[1:]
    preview = ok(run(cluster, namespace, without_banner, dry_run=True))
    path = f"/api/v1/namespaces/{namespace}/configmaps/banner"
    old = kube.get(path)
    kube.delete(path)
    new = kube.create(f"/api/v1/namespaces/{namespace}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "data": {"v": "1"},
        "metadata": {"name": "banner", "labels": {PART_OF: old["metadata"]["labels"][PART_OF]}}})
    err = refused(cluster, kube, namespace, without_banner, approved_from(preview))
    assert err.details["differences"] == [
        f"ConfigMap {namespace}/banner: approved prune (uid={old['metadata']['uid']}), now prune "
        f"(uid={new['metadata']['uid']}): it was recreated on the cluster with a new UID since"], err.message
    assert kube.get(path)["metadata"]["uid"] == new["metadata"]["uid"]


def test_a_label_another_manager_added_or_a_status_change_keeps_the_plan(cluster, kube, namespace):
    ok(run(cluster, namespace, SHOP))
    preview = ok(run(cluster, namespace, SHOP, dry_run=True))
    kube.apply(f"/api/v1/namespaces/{namespace}/configmaps/settings",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "labels": {"team": "a"}}},
               field_manager="labeller")
    status, body, _ = kube.request("PATCH", f"/apis/apps/v1/namespaces/{namespace}/deployments/web/status",
                                   {"status": {"collisionCount": 7}}, content_type="application/merge-patch+json")
    assert status == 200, body
    report = ok(run(cluster, namespace, SHOP, approved_plan=preview.plan_id))
    assert report.plan_id == preview.plan_id and report.requests["writes"] == 0


def test_with_the_id_alone_the_refusal_shows_the_plan_now(cluster, kube, namespace):
    ok(run(cluster, namespace, SHOP))
    preview = ok(run(cluster, namespace, SHOP, dry_run=True))
    _delete(kube, namespace)
    err = refused(cluster, kube, namespace, SHOP, preview.plan_id)
    assert "only the plan id was approved" in err.message
    assert f"- create ConfigMap {namespace}/settings" in err.message, err.message
    assert err.details["differences"] == []


def test_a_rollback_preview_binds_the_rollback(cluster, kube, namespace):
    history = dict(max=5)
    ok(run(cluster, namespace, SHOP, history=Settings(**history)))
    ok(run(cluster, namespace, [cm("banner", v="2"), *SHOP[1:]], history=Settings(**history)))
    back = Settings(**history, rollback_to=1)
    preview = ok(run(cluster, namespace, dry_run=True, history=back))
    assert {e["object"]: e["action"] for e in preview.plan}[f"ConfigMap {namespace}/banner"] == "configure"
    report = ok(run(cluster, namespace, approved_plan=preview.plan_id, history=Settings(**history, rollback_to=1)))
    assert report.plan_id == preview.plan_id
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/banner")["data"] == {"v": "1"}
    # The same preview, once the banner was edited by hand, no longer binds a rollback.
    stale = ok(run(cluster, namespace, dry_run=True, history=Settings(**history, rollback_to=2)))
    _edit(kube, namespace)
    err = refused(cluster, kube, namespace, None, approved_from(stale), history=Settings(**history, rollback_to=2))
    assert f"ConfigMap {namespace}/settings: approved unchanged, now configure" in err.message


def test_an_uninstall_preview_binds_the_uninstall(cluster, kube, namespace):
    ok(run(cluster, namespace, SHOP))
    preview = ok(run(cluster, namespace, state="absent", dry_run=True))
    banner = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/banner")
    assert {"object": f"ConfigMap {namespace}/banner", "action": "delete",
            "uid": banner["metadata"]["uid"]} in preview.plan
    kube.delete(f"/api/v1/namespaces/{namespace}/configmaps/extra")
    before = versions(kube, namespace)
    err = run(cluster, namespace, state="absent", approved_plan=approved_from(preview))
    assert isinstance(err, PlanChanged) and err.report.requests["writes"] == 0, err
    assert versions(kube, namespace) == before
    assert f"ConfigMap {namespace}/extra: approved delete, now nothing: it was deleted on the cluster since" \
        in err.message, err.message
    fresh = ok(run(cluster, namespace, state="absent", dry_run=True))
    report = ok(run(cluster, namespace, state="absent", approved_plan=fresh.plan_id))
    assert report.plan_id == fresh.plan_id
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/shop") is None


def test_the_plan_id_costs_no_request(cluster, kube, namespace, monkeypatch):
    """The figure of the issue: the requests of a 50-member no-op with and without the plan step."""
    members = [cm(f"member-{i:02d}") for i in range(50)]
    ok(run(cluster, namespace, members))
    with_plan = ok(run(cluster, namespace, members, approved_plan=ok(run(cluster, namespace, members,
                                                                         dry_run=True)).plan_id))
    monkeypatch.setattr(approval, "settle", lambda *settled: None)  # no plan id, no approval check
    without_plan = ok(run(cluster, namespace, members))
    assert without_plan.plan_id is None
    # Requests and writes are counted exactly; round trips are a measurement (two requests sent side
    # by side count as two when a loaded machine starts the second after the first was answered).
    counted = ("sent", "writes")
    assert [with_plan.requests[k] for k in counted] == [without_plan.requests[k] for k in counted], \
        (with_plan.requests, without_plan.requests)
    assert with_plan.requests["writes"] == 0
    print(f"\n50-member no-op: {with_plan.requests} with the plan id, {without_plan.requests} without")


def test_the_audit_report_records_the_plan_id_a_real_run_can_be_bound_to(cluster, kube, namespace, tmp_path):
    ok(run(cluster, namespace, SHOP))
    preview = ok(run(cluster, namespace, SHOP, dry_run=True))
    reports = tmp_path / "reports"
    playbook = tmp_path / "audit.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "roles": [{"role": "applyset.kubernetes.audit", "vars": {
            "audit_namespace": namespace, "audit_output_dir": str(reports),
            "audit_manifests": [{"parent": "secrets/shop", "namespace": namespace, "definition": SHOP}]}}]}]))
    proc = run_playbook(cluster, playbook)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recorded = json.loads((reports / "applyset-audit.json").read_text())["manifest_drift"]["sets"][0]
    assert recorded["plan_id"] == preview.plan_id
    assert f"Plan id: `{preview.plan_id}`" in (reports / "applyset-audit.md").read_text()
    assert preview.plan_id in (reports / "applyset-audit.html").read_text()
