"""playbooks/audit.yml as scheduled jobs run it: booleans given as strings on the command line.

``-e audit_fail=true`` is the string "true". It used to fail every run with "Conditionals must
have a boolean result", and ``-e audit_repair=false`` was reported as "Repair: on". The play
also printed .state/audit as the report's place even when ``audit_output_dir`` was overridden.
"""

from __future__ import annotations

import subprocess

from ansible_cli import BIN, REPO_ROOT, ansible_env, run_module

PART_OF = "applyset.kubernetes.io/part-of"


def audit(cluster, namespace, output_dir, *pairs):
    """Run playbooks/audit.yml with key=value extra vars (strings, as a shell or a survey gives them)."""
    cmd = [str(BIN / "ansible-playbook"), str(REPO_ROOT / "playbooks" / "audit.yml"),
           "-e", f"audit_scope_namespace={namespace}", "-e", f"audit_output_dir={output_dir}"]
    for pair in pairs:
        cmd += ["-e", pair]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(cluster), cwd=REPO_ROOT, timeout=300)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_audit_playbook_takes_string_booleans_and_prints_the_report_it_wrote(cluster, kube, namespace, tmp_path):
    rc, result, output = run_module(cluster, "applyset_apply", {
        "parent": "demo", "namespace": namespace,
        "definition": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}]})
    assert rc == 0, output
    reports = tmp_path / "reports"

    rc, output = audit(cluster, namespace, reports, "audit_fail=true", "audit_repair=false")
    assert rc == 0, output
    assert "Conditionals must have a boolean result" not in output
    assert f"report in {reports}/applyset-audit.md" in output
    assert ".state/audit" not in output
    markdown = (reports / "applyset-audit.md").read_text()
    assert "**Repair:** off (report only)" in markdown and "**OK**" in markdown

    # A leak: a Service carries the set's id, but the set does not record Services.
    kube.create(f"/api/v1/namespaces/{namespace}/services", {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "leaked", "labels": {PART_OF: result["applyset"]["id"]}},
        "spec": {"ports": [{"port": 80}]}})
    rc, output = audit(cluster, namespace, reports, "audit_fail=false")
    assert rc == 0, output
    assert "Problems found" in output
    rc, output = audit(cluster, namespace, reports, "audit_fail=true")
    assert rc != 0
    assert f"1 error(s) remain on localhost; see {reports}/applyset-audit.md" in output
    assert "unrecorded_group_kind" in (reports / "applyset-audit.md").read_text()
