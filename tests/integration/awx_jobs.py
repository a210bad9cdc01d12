"""Jobs run the way AWX runs them, through ansible-runner: the project checkout is the repository
and the collection comes from its ansible.cfg (tests/integration/test_awx.py and
test_approved_plan_awx.py)."""

from __future__ import annotations

import os
import sys
import textwrap

import yaml
from ansible_cli import BIN, REPO_ROOT, WEB_MANIFEST

# The shop the jobs deploy: playbooks/deploy.yml and preview.yml read it from shop_manifests.
MANIFESTS = {
    "20-config.yaml": """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: shop-settings}
        data: {currency: EUR}
        """,
    "30-web.yaml": WEB_MANIFEST,
    "50-banner.yaml": """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: holiday-banner}
        data: {text: Happy holidays!}
        """,
}


def isolate_job_environment(monkeypatch, tmp_path) -> None:
    """The job's process environment as on an AWX node: no K8S_AUTH_*, ANSIBLE_* or KUBECONFIG of
    ours, no ~/.kube/config (HOME is empty), our ansible on PATH."""
    for var in list(os.environ):
        if var.startswith(("K8S_AUTH_", "ANSIBLE_")) or var == "KUBECONFIG":
            monkeypatch.delenv(var)
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def job_environment(monkeypatch, tmp_path, cluster) -> dict:
    """The job's environment (``isolate_job_environment``): the cluster's kubeconfig only."""
    isolate_job_environment(monkeypatch, tmp_path)
    return {"K8S_AUTH_KUBECONFIG": cluster.kubeconfig, "ANSIBLE_NOCOLOR": "1"}


def artifacts(run) -> dict:
    """The job's artifacts as AWX stores them: set_stats' data in the playbook_on_stats event."""
    stats = [e for e in run.events if e.get("event") == "playbook_on_stats"]
    assert stats, "no playbook_on_stats event"
    return stats[-1]["event_data"].get("artifact_data") or {}


def manifest_dir(tmp_path):
    directory = tmp_path / "manifests"
    directory.mkdir()
    for name, text in MANIFESTS.items():
        (directory / name).write_text(textwrap.dedent(text).lstrip())
    return directory


def run_job(tmp_path, envvars, playbook, extravars, cmdline=None, inventory=None, limit=None):
    """One AWX job of ``playbook``, in a private data directory of its own under ``tmp_path``; on
    ``inventory`` (a file; default localhost), the slice ``limit`` of it as AWX gives a sliced job."""
    import ansible_runner  # the tests importorskip it

    private_data_dir = tmp_path / f"job-{len(list(tmp_path.glob('job-*')))}"
    private_data_dir.mkdir()
    return ansible_runner.run(
        private_data_dir=str(private_data_dir), project_dir=str(REPO_ROOT), playbook=playbook,
        inventory=str(inventory) if inventory else f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
        envvars=envvars, extravars=extravars, cmdline=cmdline, limit=limit, process_isolation=False, quiet=True,
        timeout=240)


def fleet_inventory_file(path, hosts: dict, **host_vars) -> str:
    """A fleet inventory as the kubeconfig inventory plugin makes it (group kubernetes_clusters),
    each host run locally: ``hosts`` maps each host to its own variables, ``host_vars`` all of them."""
    common = dict(host_vars, ansible_connection="local", ansible_python_interpreter=sys.executable)
    path.write_text(yaml.safe_dump({"all": {"children": {"kubernetes_clusters": {
        "hosts": {name: dict(common, **own) for name, own in hosts.items()}}}}}))
    return str(path)


def module_result(run, events=("runner_on_ok",)) -> dict:
    """The applyset_apply task's result, from the job events of the kinds ``events`` (as AWX stores them)."""
    for event in run.events:
        data = event.get("event_data") or {}
        if event.get("event") in events and data.get("resolved_action") == "applyset.kubernetes.applyset_apply":
            return data["res"]
    raise AssertionError("no applyset_apply result among the job events")
