"""The preview report (module_utils/preview_report.py): changes grouped by set and action, diffs without
the collection's bookkeeping and with Secret values masked, caps that count what they leave out.

Through the deploy role and ansible-runner, with the page in headless Chromium:
tests/integration/test_preview_report_job.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / ".state" / "collections"))

from ansible_collections.applyset.kubernetes.plugins.module_utils import preview_report as pr  # noqa: E402

NOW = "2026-11-29T05:00:00Z"
SECRET_VALUE = "hunter2-c0rrect-h0rse"


def dump(obj):
    return yaml.safe_dump(obj, default_flow_style=False, sort_keys=True)


def cm(name, value, labels=True):
    meta = {"name": name, "namespace": "shop"}
    if labels:
        meta["labels"] = {"applyset.kubernetes.io/part-of": "applyset-x-v1", "app": "shop"}
        meta["annotations"] = {"applyset.kubernetes.ansible/applied-digest": "sha256:abc", "team": "web"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"v": value}}


def secret(value):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop"},
            "data": {"password": value}}


def result():
    objects = [
        {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "settings", "action": "configured"},
        {"apiVersion": "v1", "kind": "Secret", "namespace": "shop", "name": "db", "action": "configured"},
        {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "new", "action": "created"},
        {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "banner", "action": "pruned"},
        {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "web", "action": "unchanged"},
    ]
    diff = [
        {"before_header": "ConfigMap shop/settings", "after_header": "ConfigMap shop/settings",
         "before": dump(cm("settings", "1")), "after": dump(cm("settings", "2"))},
        {"before_header": "Secret shop/db", "after_header": "Secret shop/db",
         "before": dump(secret("digest-of-the-old")), "after": dump(secret(SECRET_VALUE))},
        {"before_header": "(absent)", "after_header": "ConfigMap shop/new", "before": "", "after": dump(cm("new", "x"))},
        {"before_header": "ConfigMap shop/banner", "after_header": "(absent)", "before": dump(cm("banner", "b")),
         "after": ""},
    ]
    hooks = [{"phase": "pre-apply", "apiVersion": "batch/v1", "kind": "Job", "namespace": "shop", "name": "migrate",
              "action": "would run"}]
    plan = [{"object": "ApplySet Secret shop/shop", "action": "apply"}, {"object": "ConfigMap shop/old", "action": "adopt"}]
    return {"changed": True, "plan_id": "plan-v1:" + "a" * 24, "plan": plan, "summary": {"configured": 2},
            "objects": objects, "diff": diff, "hooks": hooks, "check_mode": True}


def test_changes_are_grouped_by_action_with_their_diffs_and_the_plan_id():
    report = pr.build_preview([{"key": "localhost/shop/shop", "cluster": "localhost", "result": result()}], now=NOW)
    (entry,) = report["sets"]
    assert entry["plan_id"] == "plan-v1:" + "a" * 24 and report["ok"]
    groups = {g["action"]: [c["object"] for c in g["changes"]] for g in entry["groups"]}
    assert groups == {"create": ["ConfigMap shop/new"], "configure": ["ConfigMap shop/settings", "Secret shop/db"],
                      "prune": ["ConfigMap shop/banner"], "hooks": ["Job.batch shop/migrate (pre-apply)"],
                      "take-over": ["ConfigMap shop/old"]}
    assert [g["action"] for g in entry["groups"]] == ["create", "configure", "prune", "hooks", "take-over"]
    settings = entry["groups"][1]["changes"][0]["diff"]
    assert "-  v: '1'" in settings and "+  v: '2'" in settings
    assert report["summary"]["by_action"]["configure"] == 2 and report["summary"]["changes"] == 6


def test_bookkeeping_is_hidden_and_secret_values_masked_everywhere():
    report = pr.build_preview([{"key": "k", "cluster": "c", "result": result()}], now=NOW)
    text = json.dumps(report) + pr.render_markdown(report) + pr.render_html(report)
    assert SECRET_VALUE not in text and "digest-of-the-old" not in text
    assert "applyset.kubernetes.io/part-of" not in text and "applied-digest" not in text
    assert "team: web" in text and "app: shop" in text  # the user's own labels and annotations stay


def test_the_caps_count_what_they_leave_out():
    many = result()
    many["objects"] = [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": f"cm-{i}",
                        "action": "created"} for i in range(30)]
    many["diff"] = [{"before_header": "(absent)", "after_header": f"ConfigMap shop/cm-{i}", "before": "",
                     "after": dump(cm(f"cm-{i}", "x" * 5))} for i in range(30)]
    report = pr.build_preview([{"key": "k", "cluster": "c", "result": many}], now=NOW,
                              limits=pr.Limits(changes=10, diff_lines=4, all_diff_lines=20))
    create = report["sets"][0]["groups"][0]
    assert len(create["changes"]) == 10 and create["left_out"] == 20
    assert report["summary"]["left_out"]["changes"] == 20 + 2  # the hook and the take-over did not fit either
    assert report["summary"]["left_out"]["diff_lines"] > 0
    assert sum(len((c["diff"] or "").splitlines()) for c in create["changes"]) <= 20
    markdown = pr.render_markdown(report, pr.Limits(markdown_chars=1_500))
    assert len(markdown) <= 1_500 + 300 and "Left out of this report" in markdown


def test_a_failed_preview_is_shown_with_its_error():
    failed = {"failed": True, "msg": "boom", "error": {"message": "the parent is not ours"}}
    report = pr.build_preview([{"key": "k", "cluster": "c", "result": failed}], now=NOW)
    assert not report["ok"] and report["sets"][0]["error"] == "the parent is not ours"
    assert "FAILED" in pr.render_markdown(report) and "the parent is not ours" in pr.render_html(report)


def part(*clusters, limits=pr.Limits()):
    return pr.build_preview([{"key": f"{c}/shop/shop", "cluster": c, "result": result()} for c in clusters],
                            now=NOW, limits=limits)


def test_the_parts_of_a_sliced_preview_merge_into_one_report():
    merged = pr.merge_previews([part("us-1"), part("eu-1", "eu-2"), part("us-1")], now=NOW)
    assert [s["key"] for s in merged["sets"]] == ["eu-1/shop/shop", "eu-2/shop/shop", "us-1/shop/shop"]
    assert merged["summary"]["sets"] == 3 and merged["summary"]["changes"] == 3 * 6 and merged["ok"]
    assert merged["sets"][0] == part("eu-1")["sets"][0]  # within the caps, a set is shown as its part showed it
    assert SECRET_VALUE not in json.dumps(merged) + pr.render_markdown(merged) + pr.render_html(merged)


def test_a_merged_report_is_capped_again_and_counts_what_the_parts_left_out():
    small = pr.Limits(changes=4, diff_lines=3, all_diff_lines=8)
    parts = [part("eu-1", limits=small), part("us-1", limits=small)]
    assert [p["summary"]["left_out"]["changes"] for p in parts] == [2, 2]
    merged = pr.merge_previews(parts, now=NOW, limits=small)
    assert merged["summary"]["changes"] == 12  # every change counted, listed or not
    assert sum(len(g["changes"]) for s in merged["sets"] for g in s["groups"]) == 4
    assert merged["summary"]["left_out"]["changes"] == 12 - 4
    shown_lines = sum(len((c["diff"] or "").splitlines()) for s in merged["sets"] for g in s["groups"] for c in g["changes"])
    assert shown_lines <= 8
    assert merged["summary"]["left_out"]["diff_lines"] == sum(
        c["diff_lines_left_out"] for s in merged["sets"] for g in s["groups"] for c in g["changes"])
