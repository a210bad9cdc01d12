"""The preview report (issue 50) the way AWX runs the preview job: playbooks/preview.yml through
ansible-runner against the real control plane writes the report an approver reads - Markdown for a
pull request comment, a standalone web page (shown in headless Chromium, as the fleet audit page is)
and JSON - with each set's plan id, its changes grouped by action with their diffs, the collection's
bookkeeping hidden and no Secret value anywhere.
"""

from __future__ import annotations

import json
import textwrap

import pytest
import awx_jobs
from awx_jobs import artifacts, manifest_dir, run_job
from chromium import screenshot_colours

ansible_runner = pytest.importorskip("ansible_runner")

OLD_PASSWORD, NEW_PASSWORD = "0ld-pa55word-of-the-shop", "n3w-pa55word-of-the-shop"


def secret(password):
    return textwrap.dedent(f"""
        apiVersion: v1
        kind: Secret
        metadata: {{name: shop-db}}
        stringData: {{password: {password}}}
        """).lstrip()


@pytest.fixture
def job_env(monkeypatch, tmp_path, cluster):
    return awx_jobs.job_environment(monkeypatch, tmp_path, cluster)


def test_the_preview_job_writes_a_report_an_approver_reads(tmp_path, kube, namespace, job_env):
    manifests = manifest_dir(tmp_path)
    (manifests / "25-secret.yaml").write_text(secret(OLD_PASSWORD))
    extravars = {"shop_namespace": namespace, "shop_manifests": str(manifests)}
    first = run_job(tmp_path, job_env, "playbooks/deploy.yml", extravars)
    assert (first.status, first.rc) == ("successful", 0), first.stdout.read()

    (manifests / "20-config.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shop-settings}\n"
                                              "data: {currency: USD}\n")
    (manifests / "25-secret.yaml").write_text(secret(NEW_PASSWORD))
    report_dir = tmp_path / "report"
    preview = run_job(tmp_path, job_env, "playbooks/preview.yml",
                      dict(extravars, shop_without_banner=True, preview_report_dir=str(report_dir)))
    output = preview.stdout.read()
    assert (preview.status, preview.rc) == ("successful", 0), output
    plan_id = artifacts(preview)["applyset_approved_plans"][f"localhost/{namespace}/shop"]["plan_id"]

    assert (report_dir / "applyset-preview.json").exists(), output
    report = json.loads((report_dir / "applyset-preview.json").read_text())
    (entry,) = report["sets"]
    assert entry["plan_id"] == plan_id and report["ok"]
    groups = {g["action"]: [c["object"] for c in g["changes"]] for g in entry["groups"]}
    assert groups == {"configure": [f"ConfigMap {namespace}/shop-settings", f"Secret {namespace}/shop-db"],
                      "prune": [f"ConfigMap {namespace}/holiday-banner"]}
    settings = entry["groups"][0]["changes"][0]["diff"]
    assert "-  currency: EUR" in settings and "+  currency: USD" in settings

    markdown = (report_dir / "applyset-preview.md").read_text()
    page = (report_dir / "applyset-preview.html").read_text()
    assert plan_id in markdown and plan_id in page and "+  currency: USD" in markdown
    for text in (markdown, page, json.dumps(report), output):
        assert OLD_PASSWORD not in text and NEW_PASSWORD not in text
    for text in (markdown, page, json.dumps(report)):
        assert "applyset.kubernetes.io/part-of" not in text and "applyset.kubernetes.ansible/" not in text
    assert f"Preview report: {report_dir}/applyset-preview.md" in " ".join(output.split())

    colours = screenshot_colours(report_dir / "applyset-preview.html", tmp_path / "preview.png", (1000, 1400))
    # The green of the verdict and the added lines' background, the red background of removed lines.
    assert (0x1A, 0x7F, 0x37) in colours and (0xDA, 0xFB, 0xE1) in colours and (0xFF, 0xEB, 0xE9) in colours
