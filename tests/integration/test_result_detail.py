"""result_detail and result_max_bytes (issue 50) through the module against the real control plane:
a result within its budget keeps its keys; beyond it the changed members come first and the rest is
counted, with a warning naming result_detail: full; a preview cut to its budget still binds the deploy
by its plan id, and a stale one is refused naming what its entries can.

The budget is forced low (a few kilobytes) so that a set of 40 members passes it: the default of
600,000 bytes is measured at 1,000 to 25,000 members by benchmarks/result_size.py, and the cut
itself is unit-tested (tests/unit/run/test_result_budget.py).
"""

from __future__ import annotations

import json

from module_runner import run_module_forked

COUNT = 40
KEYS_BEFORE_ISSUE_50 = {"changed", "applyset", "summary", "objects", "requests", "plan_id", "plan", "check_mode",
                        "revision"}


def cms(version="1", changed=()):
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:02d}"},
             "data": {"v": "changed" if i in changed else version}} for i in range(COUNT)]


def apply(cluster, namespace, definition, check=False, **options):
    args = {"parent": "budget-set", "namespace": namespace, "definition": definition, **options}
    return run_module_forked(cluster, "applyset_apply", args, check=check, registered=True)


def test_a_result_within_its_budget_keeps_its_keys_and_one_beyond_lists_changes_first(cluster, kube, namespace):
    rc, first, out = apply(cluster, namespace, cms())
    assert rc == 0, out
    assert set(first) - {"warnings", "invocation"} == KEYS_BEFORE_ISSUE_50 and len(first["objects"]) == COUNT

    rc, preview, out = apply(cluster, namespace, cms(changed=(7, 30)), check=True, result_max_bytes=4_000)
    assert rc == 0, out
    listed = {o["name"]: o["action"] for o in preview["objects"]}
    assert listed["cm-07"] == listed["cm-30"] == "configured" and len(listed) < COUNT
    assert preview["omitted"]["objects"] == COUNT - len(listed)
    assert preview["summary"]["unchanged"] == COUNT - 2 and preview["summary"]["configured"] == 2
    assert any("result_detail: full" in w for w in preview["warnings"]), preview["warnings"]
    shown = {k: v for k, v in preview.items() if k != "invocation"}
    assert len(json.dumps(shown)) <= 4_000

    rc, summary, out = apply(cluster, namespace, cms(changed=(7, 30)), check=True, result_detail="summary")
    assert rc == 0, out
    assert summary["objects"] == [] and summary["plan"] == [] and summary["plan_id"] == preview["plan_id"]


def test_a_preview_cut_to_its_budget_binds_the_deploy_and_a_stale_one_is_refused_by_name(cluster, kube, namespace):
    assert apply(cluster, namespace, cms())[0] == 0
    desired = cms(changed=(3,))
    rc, preview, out = apply(cluster, namespace, desired, check=True, result_detail="changed")
    assert rc == 0, out
    assert [e["action"] for e in preview["plan"]] == ["apply", "configure"] and preview["omitted"]["plan"] == COUNT - 1
    approved = {key: preview[key] for key in ("plan_id", "plan", "omitted")}

    kube.delete(f"/api/v1/namespaces/{namespace}/configmaps/cm-03")
    rc, refused, out = apply(cluster, namespace, desired, approved_plan=approved)
    assert rc != 0, out
    differences = refused["error"]["details"]["differences"]
    assert differences[0] == (f"ConfigMap {namespace}/cm-03: approved configure, now create: it was deleted on the "
                              "cluster since"), differences
    assert len(differences) == 2 and "result_detail" in differences[1]
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/cm-03") is None  # refused before any write

    rc, preview, out = apply(cluster, namespace, desired, check=True, result_detail="changed")
    approved = {key: preview[key] for key in ("plan_id", "plan", "omitted")}
    rc, deployed, out = apply(cluster, namespace, desired, approved_plan=approved)
    assert rc == 0, out
    assert deployed["plan_id"] == preview["plan_id"] and deployed["summary"]["created"] == 1
