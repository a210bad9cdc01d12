"""The fleet audit report (module_utils/fleet_report.py): drift, stale sets, cells, verdicts."""

from __future__ import annotations

from datetime import datetime, timezone

import fleet_report as fr
import pytest

NOW = "2025-06-30T12:00:00Z"
SHOP = {"apiVersion": "v1", "kind": "Secret", "namespace": "shop", "name": "shop"}
LEGACY = {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "legacy", "name": "old"}


def applyset(parent=SHOP, set_id="applyset-shop-v1", **extra):
    entry = {"parent": parent, "id": set_id, "expected_id": set_id, "tooling": "applyset.kubernetes/0.1.0",
             "tool": "applyset.kubernetes", "group_kinds": ["ConfigMap", "Deployment.apps"],
             "namespaces": [parent["namespace"]], "member_count": 2, "derived": [], "ok": True, "claim": None,
             "last_written": "2025-06-29T10:00:00Z"}
    entry.update(extra)
    return entry


def verify(*sets, problems=(), unlisted=(), ok=True):
    return {"changed": False, "ok": ok, "complete": not unlisted,
            "summary": {"applysets": len(sets), "errors": 0, "warnings": 0, "fixed": 0, "remaining_errors": 0},
            "applysets": list(sets), "problems": list(problems), "fixes": [], "unlisted": list(unlisted)}


def info(*member_lists):
    """applyset_info's result with members: (set id, [(kind, apiVersion, name)]) pairs."""
    return {"applysets": [{"id": set_id, "members": [
        {"apiVersion": api, "kind": kind, "namespace": "shop", "name": name} for kind, api, name in members]}
        for set_id, members in member_lists], "complete": True, "unlisted": []}


BASE = [("ConfigMap", "v1", "settings"), ("Deployment", "apps/v1", "web")]


def test_object_key_names_the_group_only_when_there_is_one():
    assert fr.object_key({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "s", "name": "w"}) == \
        "Deployment.apps s/w"
    assert fr.object_key({"apiVersion": "v1", "kind": "Namespace", "namespace": None, "name": "s"}) == "Namespace s"


def test_identical_clusters_show_no_drift_and_one_row_with_a_cell_each():
    hosts = [{"name": n, "verify": verify(applyset()), "info": info(("applyset-shop-v1", BASE))}
             for n in ("eu", "us")]
    report = fr.build_report(hosts, now=NOW)
    assert report["ok"] and report["complete"] and report["drift"] == [] and report["stale"] == []
    [row] = report["sets"]
    assert row["set"] == "Secret shop/shop" and not row["drift"]
    assert {c: cell["state"] for c, cell in row["cells"].items()} == {"eu": "ok", "us": "ok"}
    assert report["summary"]["clusters_checked"] == 2 and report["summary"]["applysets"] == 2
    assert {a["cluster"] for a in report["applysets"]} == {"eu", "us"}


def test_members_on_some_clusters_only_are_named_with_where_they_are_missing():
    hosts = [
        {"name": "eu", "verify": verify(applyset()), "info": info(("applyset-shop-v1", BASE))},
        {"name": "us", "verify": verify(applyset()),
         "info": info(("applyset-shop-v1", BASE + [("ConfigMap", "v1", "banner")]))},
    ]
    [entry] = fr.build_report(hosts, now=NOW)["drift"]
    [members] = entry["differences"]
    assert members["aspect"] == "members"
    assert members["objects"] == [{"object": "ConfigMap shop/banner", "on": ["us"], "missing_on": ["eu"]}]


def test_a_set_missing_on_a_completely_checked_cluster_is_presence_drift():
    hosts = [{"name": "eu", "verify": verify(applyset())}, {"name": "us", "verify": verify()}]
    report = fr.build_report(hosts, now=NOW)
    [entry] = report["drift"]
    assert entry["differences"][0] == {"aspect": "presence", "summary": "missing on us",
                                       "by_cluster": {"eu": "present", "us": "absent"}}
    assert report["sets"][0]["cells"]["us"]["state"] == "absent" and report["sets"][0]["cells"]["us"]["drift"]
    assert report["sets"][0]["cells"]["us"]["members"] is None


def test_a_set_missing_where_the_scan_was_incomplete_is_unknown_not_drift():
    incomplete = verify(unlisted=[{"group_kind": "Secret", "namespace": None, "reason": "HTTP 403"}], ok=False)
    hosts = [{"name": "eu", "verify": verify(applyset())}, {"name": "us", "verify": incomplete}]
    report = fr.build_report(hosts, now=NOW)
    assert report["drift"] == [] and not report["complete"] and not report["ok"]
    assert report["sets"][0]["cells"]["us"]["state"] == "unknown"
    assert report["unlisted"] == [{"cluster": "us", "group_kind": "Secret", "namespace": None, "reason": "HTTP 403"}]


def test_recorded_kinds_tools_and_counts_are_compared_when_members_were_not_listed():
    hosts = [{"name": "eu", "verify": verify(applyset())},
             {"name": "us", "verify": verify(applyset(group_kinds=["ConfigMap"], member_count=1,
                                                      tooling="kubectl/v1.33.0"))}]
    [entry] = fr.build_report(hosts, now=NOW)["drift"]
    aspects = {d["aspect"]: d for d in entry["differences"]}
    assert set(aspects) == {"tooling", "group_kinds", "member_count"}
    assert aspects["group_kinds"]["by_cluster"] == {"eu": "ConfigMap, Deployment.apps", "us": "ConfigMap"}
    assert aspects["member_count"]["by_cluster"] == {"eu": 2, "us": 1}


def test_a_cluster_that_failed_is_not_checked_names_its_error_and_fails_the_report():
    failed = {"failed": True, "msg": "connection refused", "error": {"message": "cannot reach https://x:1",
                                                                     "fix": "check the server"}}
    hosts = [{"name": "eu", "verify": verify(applyset())}, {"name": "dead", "verify": failed, "server": "https://x:1"},
             {"name": "gone"}]
    report = fr.build_report(hosts, now=NOW)
    assert not report["ok"] and not report["complete"]
    clusters = {c["name"]: c for c in report["clusters"]}
    assert clusters["dead"]["error"] == {"message": "cannot reach https://x:1", "fix": "check the server"}
    assert clusters["dead"]["server"] == "https://x:1"
    assert "failed before the audit ran" in clusters["gone"]["error"]["message"]
    assert report["summary"]["clusters_failed"] == 2
    assert report["sets"][0]["cells"]["dead"]["state"] == "unknown"
    assert report["drift"] == []  # nothing to compare with clusters that were not checked


def test_failed_verify_without_error_dict_falls_back_to_msg():
    entry = fr.cluster_entry({"name": "x", "verify": {"failed": True, "msg": "boom"}})
    assert entry["error"] == {"message": "boom", "fix": None} and not entry["checked"]


@pytest.mark.parametrize("extra, expected", [
    ({}, []),
    ({"member_count": 0}, ["no members"]),
    ({"member_count": 0, "derived": [{"kind": "Endpoints"}]}, []),
    ({"claim": {"run": "host/1/ab", "expires": 1751200000.0}}, ["did not finish"]),  # 2025-06-29
    ({"claim": {"run": "host/1/ab", "expires": 1851200000.0}}, []),  # still held: a run is working
    ({"claim": {"run": "x", "expires": "soon"}}, []),
    ({"last_written": "2025-05-01T00:00:00Z"}, ["60 days ago"]),
    ({"last_written": None}, []),
    ({"last_written": "garbage"}, []),
])
def test_stale_reasons(extra, expected):
    now = fr.parse_time(NOW)
    reasons = fr.stale_reasons(applyset(**extra), now, 30)
    assert len(reasons) == len(expected)
    for reason, fragment in zip(reasons, expected):
        assert fragment in reason


def test_no_members_is_not_claimed_where_the_scan_was_incomplete():
    assert fr.stale_reasons(applyset(member_count=0), fr.parse_time(NOW), 30, members_known=False) == []
    incomplete = verify(applyset(member_count=0), unlisted=[{"group_kind": "Secret", "namespace": None,
                                                             "reason": "HTTP 403"}], ok=False)
    assert fr.build_report([{"name": "eu", "verify": incomplete}], now=NOW)["stale"] == []


def test_members_are_keyed_by_the_id_computed_from_the_parent():
    listed = {"applysets": [{"id": "forged", "expected_id": "applyset-shop-v1", "members": []}]}
    assert fr.members_by_set(listed) == {"applyset-shop-v1": []}


def test_age_rule_can_be_switched_off():
    old = applyset(last_written="2020-01-01T00:00:00Z")
    assert fr.stale_reasons(old, fr.parse_time(NOW), -1) == []
    assert fr.stale_reasons(old, fr.parse_time(NOW), 0)


def test_stale_sets_are_listed_per_cluster_and_marked_in_their_cell():
    hosts = [{"name": "eu", "verify": verify(applyset(), applyset(LEGACY, "applyset-old-v1", member_count=0))}]
    report = fr.build_report(hosts, now=NOW)
    [stale] = report["stale"]
    assert stale["cluster"] == "eu" and stale["set"] == "ConfigMap legacy/old"
    rows = {row["set"]: row for row in report["sets"]}
    assert rows["ConfigMap legacy/old"]["cells"]["eu"]["stale"] is True
    assert [row["set"] for row in report["sets"]] == ["ConfigMap legacy/old", "Secret shop/shop"]  # by namespace


def test_problem_counts_land_in_the_cell_of_their_set():
    problems = [{"code": "unrecorded_group_kind", "severity": "error", "fixed": False, "id": "applyset-shop-v1"},
                {"code": "stale_group_kind", "severity": "warning", "fixed": False, "id": "applyset-shop-v1"},
                {"code": "orphan", "severity": "warning", "fixed": False, "id": "applyset-nobody-v1"}]
    hosts = [{"name": "eu", "verify": verify(applyset(ok=False), problems=problems, ok=False)}]
    report = fr.build_report(hosts, now=NOW)
    cell = report["sets"][0]["cells"]["eu"]
    assert (cell["state"], cell["errors"], cell["warnings"]) == ("problems", 1, 1)
    assert report["summary"]["errors"] == 1 and report["summary"]["warnings"] == 2
    assert all(p["cluster"] == "eu" for p in report["problems"])


def test_members_of_a_failed_or_skipped_info_are_ignored():
    assert fr.members_by_set({"failed": True}) is None
    assert fr.members_by_set({"skipped": True}) is None
    assert fr.members_by_set(None) is None
    assert fr.members_by_set({"applysets": [{"id": "a"}]}) == {}


def test_report_time_defaults_to_now_and_scope_is_kept():
    report = fr.build_report([], scope={"namespace": "shop"})
    assert report["scope"] == {"namespace": "shop"}
    generated = fr.parse_time(report["generated_at"])
    assert abs((datetime.now(timezone.utc) - generated).total_seconds()) < 300
    assert report["ok"] and report["summary"]["clusters"] == 0
