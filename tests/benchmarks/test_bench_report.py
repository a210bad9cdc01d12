"""benchmarks/report.py: what a run of ours must write per scenario, judged from counts as the
benchmark records them (summary rows), for results with and without ``reapply: changed``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import report  # noqa: E402
import workload  # noqa: E402

KINDS = len(workload.KINDS)


def server_row(tool, n, nsc, scenario, by_resource, reapply="changed"):
    total = sum(v for k, v in by_resource.items() if not k.startswith("WATCH"))
    return {"tool": tool, "n": n, "namespaces": nsc, "scenario": scenario, "reapply": reapply,
            "requests": {"total": total}, "requests_by_resource": by_resource, "client_requests": None}


def members(n, pick, verb="APPLY"):
    """Server counts by resource for the objects ``pick`` selects, as bench.request_delta names them."""
    out = {}
    for i in range(n):
        if pick(i):
            key = f"{verb} {report._resource(workload.kind_of(i))}"
            out[key] = out.get(key, 0) + 1
    return out


def lists(nsc):
    return {f"LIST {report._resource(k)}": nsc for k in workload.KINDS}


def test_expected_member_writes_per_scenario():
    n = 1000
    total = lambda e, verb: sum(e[verb].values())  # noqa: E731
    assert total(report.member_writes(n, "initial", "changed"), "apply") == 1000
    assert total(report.member_writes(n, "noop", "changed"), "apply") == 0
    assert total(report.member_writes(n, "change", "changed"), "apply") == 100
    preview = report.member_writes(n, "preview", "changed")
    assert total(preview, "dry-run apply") == 0 and total(preview, "delete") == 300
    prune = report.member_writes(n, "prune", "changed")
    assert total(prune, "apply") == 0 and total(prune, "delete") == 300
    # before issue 11 every member that stays was applied on every run
    assert total(report.member_writes(n, "noop", "always"), "apply") == 1000
    assert total(report.member_writes(n, "prune", "always"), "apply") == 700


def test_no_op_that_writes_nothing_within_the_request_bound_is_met():
    by_res = {**lists(1), "GET discovery": 2, "GET secrets": 2, "WATCH configmaps": 3}
    c = report.check_writes(server_row("ansible", 1000, 1, "noop", by_res))
    assert c["ok"], c["why"]
    assert (c["writes"], c["requests"], c["bound"]) == (0, 15, KINDS + 4)


def test_no_op_over_the_request_bound_or_with_a_write_is_not_met():
    by_res = {**lists(1), "GET discovery": 2, "GET secrets": 3}
    assert "requests >" in report.check_writes(server_row("ansible", 1000, 1, "noop", by_res))["why"]
    by_res = {**lists(1), "GET discovery": 2, "GET secrets": 2, "APPLY secrets": 1}
    c = report.check_writes(server_row("ansible", 1000, 1, "noop", by_res))
    assert not c["ok"] and c["parent"] == 1


def test_change_counts_parent_writes_beyond_the_members_and_says_why_it_is_not_met():
    by_res = members(1000, workload.changed)
    by_res["APPLY secrets"] += 2  # the run's claim on the parent Secret
    c = report.check_writes(server_row("ansible", 1000, 1, "change", {**by_res, **lists(1)}))
    assert (c["writes"], c["members"], c["parent"]) == (102, 100, 2)
    assert not c["ok"] and "hints do not change" in c["why"] and not c["wrong"]
    del_claim = members(1000, workload.changed)
    assert report.check_writes(server_row("ansible", 1000, 1, "change", del_claim))["ok"]


def test_three_namespaces_parent_is_the_applyset_and_the_bound_grows():
    by_res = {**lists(3), "GET discovery": 2, "GET applysets.bench.example.com": 2}
    c = report.check_writes(server_row("ansible", 1000, 3, "noop", by_res))
    assert c["ok"] and c["bound"] == 3 * KINDS + 4
    by_res = {**members(1000, lambda i: True), "APPLY applysets.bench.example.com": 2}
    c = report.check_writes(server_row("ansible", 1000, 3, "initial", by_res))
    assert c["ok"] and c["parent"] == 2


def test_preview_deletes_are_dry_runs_and_prune_only_deletes():
    deletes = members(1000, workload.removed, "DELETE")
    assert report.check_writes(server_row("ansible", 1000, 1, "preview", deletes))["ok"]
    extra = {**deletes, "APPLY (dry run) configmaps": 5}
    assert not report.check_writes(server_row("ansible", 1000, 1, "preview", extra))["ok"]
    prune = dict(deletes)
    prune["DELETE secrets"] = prune.get("DELETE secrets", 0)
    prune["APPLY secrets"] = 2
    c = report.check_writes(server_row("ansible", 1000, 1, "prune", prune))
    assert c["ok"] and (c["members"], c["parent"]) == (300, 2)
    assert not report.check_writes(server_row("ansible", 1000, 1, "prune", {**prune, **members(1000, workload.changed)}))["ok"]


def test_writes_to_resources_ours_never_touches_are_left_out():
    by_res = {**lists(1), "GET discovery": 2, "GET secrets": 2, "POST clusterroles.rbac.authorization.k8s.io": 4, "DELETE cronjobs.batch": 1}
    assert report.check_writes(server_row("ansible", 1000, 1, "noop", by_res))["ok"]


@pytest.mark.parametrize("client, ok", [
    ({"GET discovery": 2, "GET parent": 1, "LIST full": 11, "PATCH apply": 100, "PATCH parent": 2}, False),
    ({"GET discovery": 2, "GET parent": 1, "LIST full": 11, "PATCH apply": 100}, True),
    ({"GET discovery": 2, "GET parent": 1, "LIST full": 11, "PATCH apply": 1000}, False),
])
def test_core_library_is_judged_on_its_own_exact_count(client, ok):
    row = server_row("core", 1000, 1, "change", {})
    row["client_requests"] = client
    assert report.check_writes(row)["ok"] is ok


def test_old_results_keep_their_one_apply_per_object_expectation():
    """A results file from before issue 11 records no reapply mode: no writes table, no issue-11
    targets, and the old request rows stay as they were."""
    client = {"GET discovery": 2, "GET parent": 1, "LIST metadata": 11, "PATCH apply": 1000, "PATCH parent": 2}
    row = {**server_row("core", 1000, 1, "noop", {}, reapply=None), "client_requests": client,
           "median_s": 6.0, "min_s": 5.0, "max_s": 7.0, "runs": 3, "peak_rss_mib": 60.0, "cpu_s": 2.0, "ok": True}
    assert report.reapply_mode(row) == "always"
    data = {"summary": [row]}
    assert report.writes_table(data) == [] and report.issue11_targets(data) == []
    assert any("1000 member PATCHes for 1000 objects" in line and line.endswith("| yes |")
               for line in report.targets(data))


def test_namespace_and_crd_reads_of_ours_count_toward_the_bound():
    """With a custom-resource parent over 3 namespaces, a run also GETs its namespaces and the
    parent type's CRD: those are requests of ours, counted."""
    by_res = {**lists(3), "GET discovery": 2, "GET applysets.bench.example.com": 2,
              "GET customresourcedefinitions.apiextensions.k8s.io": 1, "GET namespaces": 3}
    c = report.check_writes(server_row("ansible", 1000, 3, "noop", by_res))
    assert c["requests"] == 41 and not c["ok"] and "requests > kinds × namespaces + 4 = 37" in c["why"]


def test_missing_member_writes_on_the_parent_resource_are_a_shortfall_not_negative_parent_writes():
    by_res = members(1000, workload.changed)
    by_res["APPLY secrets"] -= 3
    c = report.check_writes(server_row("ansible", 1000, 1, "change", by_res))
    assert c["parent"] == 0 and c["wrong"]["secrets"] == (by_res["APPLY secrets"], by_res["APPLY secrets"] + 3)


def test_a_chain_without_the_change_carries_it_into_the_preview_and_the_prune():
    """``--matrix 5000:1:ansible:1:initial,noop,prune``: the prune's variant has the changed tenth,
    which no earlier run applied."""
    carried = report.member_writes(1000, "prune", "changed", after_change=False)
    assert sum(carried["apply"].values()) == 100 and sum(carried["delete"].values()) == 300
    preview = report.member_writes(1000, "preview", "changed", after_change=False)
    assert sum(preview["dry-run apply"].values()) == 100
    prune = {**members(1000, workload.removed, "DELETE")}
    for key, count in members(1000, workload.changed).items():
        prune[key] = prune.get(key, 0) + count
    prune["APPLY secrets"] += 2
    row = server_row("ansible", 1000, 1, "prune", prune)
    row["chain"] = ["initial", "noop", "prune"]
    c = report.check_writes(row)
    assert c["ok"] and (c["members"], c["parent"]) == (400, 2), c
    row["chain"] = list(report.SCENARIOS)
    assert not report.check_writes(row)["ok"]


def test_without_a_file_the_report_takes_the_newest_local_run_else_the_committed_default_matrix(tmp_path,
                                                                                                monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    with pytest.raises(SystemExit, match="no results"):
        report.latest()
    (tmp_path / report.DEFAULT_MATRIX_RESULTS).write_text("{}")
    assert report.latest() == tmp_path / "default-matrix.json"
    (tmp_path / "bench-20261127-093000.json").write_text("{}")
    assert report.latest() == tmp_path / "bench-20261127-093000.json"
    assert (report.ROOT / "benchmarks" / "results" / report.DEFAULT_MATRIX_RESULTS).exists()
