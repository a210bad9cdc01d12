"""The collection as Galaxy users get it: built, installed, and run from the install.

`ansible-galaxy collection build` on the checkout must leave out what only the checkout
needs (galaxy.yml build_ignore: virtualenvs, .state, caches, benchmark results, hack/,
the pytest suites); `ansible-galaxy collection install` of that tarball into an empty
collections path must give a collection whose playbooks/deploy.yml deploys, re-runs
without change and prunes, with nothing from the checkout reachable; ansible-doc must list
its modules, roles and plugins.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# Paths (or their first component) that must not ship: local state and tooling of the checkout.
NOT_SHIPPED = [".venv", ".state", ".nox", ".git", ".cache", ".pytest_cache", ".coverage", "benchmarks",
               "hack", "Makefile", "noxfile.py", "ansible.cfg", "requirements-dev.txt",
               "tests/unit", "tests/integration", "tests/output"]
SHIPPED = ["MANIFEST.json", "FILES.json", "README.md", "meta/runtime.yml",
           "meta/execution-environment.yml", "requirements.txt", "bindep.txt",
           "plugins/modules/applyset_apply.py", "plugins/module_utils/applyset/engine.py",
           "roles/deploy/tasks/main.yml", "playbooks/deploy.yml", "tests/sanity/ignore-2.19.txt"]

MANIFESTS = {
    "20-config.yaml": """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: settings}
        data: {currency: EUR}
        """,
    "50-banner.yaml": """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: banner}
        data: {text: Sale}
        """,
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(tarball, collections path holding only the installed collection, clean env for ansible)."""
    work = tmp_path_factory.mktemp("galaxy")
    # Away from the checkout: no repo ansible.cfg, no .state/collections link, no sys.path scan.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANSIBLE_", "K8S_AUTH_")) and k != "KUBECONFIG"}
    install_dir = work / "collections"
    install_dir.mkdir()
    config = work / "ansible.cfg"
    config.write_text(f"[defaults]\ncollections_path = {install_dir}\nretry_files_enabled = false\n")
    env.update(ANSIBLE_CONFIG=str(config), ANSIBLE_COLLECTIONS_PATH=str(install_dir),
               ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false", ANSIBLE_NOCOLOR="1",
               PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")

    def run(*cmd, **kwargs):
        proc = subprocess.run([str(BIN / cmd[0]), *cmd[1:]], capture_output=True, text=True, env=env,
                              cwd=work, timeout=300, **kwargs)
        assert proc.returncode == 0, f"{' '.join(cmd)}:\n{proc.stdout}{proc.stderr}"
        return proc.stdout

    run("ansible-galaxy", "collection", "build", str(REPO_ROOT), "--output-path", str(work / "dist"))
    [tarball] = (work / "dist").glob("applyset-kubernetes-*.tar.gz")
    run("ansible-galaxy", "collection", "install", "--offline", "--no-deps", "-p", str(install_dir), str(tarball))
    return tarball, install_dir, env, run


def test_tarball_ships_the_collection_and_nothing_of_the_checkout(installed):
    tarball, _install_dir, _env, _run = installed
    with tarfile.open(tarball) as archive:
        names = [name.removeprefix("./") for name in archive.getnames()]
    leaked = sorted(name for name in names
                    if any(name == bad or name.startswith(bad + "/") for bad in NOT_SHIPPED)
                    or "__pycache__" in name.split("/") or name.endswith((".pyc", ".tar.gz")))
    assert not leaked, f"the tarball ships checkout-only files (add them to galaxy.yml build_ignore): {leaked}"
    assert not [s for s in SHIPPED if s not in names], names
    size = tarball.stat().st_size
    print(f"\n{tarball.name}: {size} bytes ({size / 1024:.0f} KiB), {len(names)} entries")
    # A guard against a build that picks up caches or results again: ~0.6 MiB, two thirds of it
    # the PNGs in docs/
    assert size < 1024 * 1024


def test_ansible_doc_lists_modules_roles_and_plugins_of_the_installed_collection(installed):
    _tarball, install_dir, _env, run = installed
    listed = run("ansible-galaxy", "collection", "list", "applyset.kubernetes")
    assert str(install_dir / "ansible_collections") in listed and str(REPO_ROOT) not in listed
    modules = run("ansible-doc", "-l", "applyset.kubernetes")
    assert set(re.findall(r"^applyset\.kubernetes\.(\w+)", modules, re.MULTILINE)) == {
        "applyset_apply", "applyset_info", "applyset_verify"}
    roles = run("ansible-doc", "-t", "role", "-l", "applyset.kubernetes")
    for role in ("deploy", "uninstall", "audit"):
        assert f"applyset.kubernetes.{role}:" in roles, roles
    assert "applyset.kubernetes.kubeconfig" in run("ansible-doc", "-t", "inventory", "-l", "applyset.kubernetes")
    assert "applyset.kubernetes.audit_report" in run("ansible-doc", "-t", "filter", "-l", "applyset.kubernetes")
    doc = run("ansible-doc", "applyset.kubernetes.applyset_apply")
    assert str(install_dir) in doc and str(REPO_ROOT) not in doc


def test_installed_deploy_playbook_deploys_reruns_and_prunes(installed, cluster, kube, namespace, tmp_path):
    _tarball, install_dir, env, run = installed
    playbook = install_dir / "ansible_collections" / "applyset" / "kubernetes" / "playbooks" / "deploy.yml"
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    for name, text in MANIFESTS.items():
        (manifests / name).write_text(textwrap.dedent(text).lstrip())
    env = dict(env, KUBECONFIG=cluster.kubeconfig)

    def deploy(*extra):
        proc = subprocess.run(
            [str(BIN / "ansible-playbook"), str(playbook), "-e", f"shop_manifests={manifests}",
             "-e", f"shop_namespace={namespace}", "-e", f"ansible_python_interpreter={sys.executable}", *extra],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return int(re.search(r"^localhost\s+:\s+ok=\d+\s+changed=(\d+)", proc.stdout, re.MULTILINE).group(1))

    def configmaps():
        items = kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]
        return sorted(i["metadata"]["name"] for i in items
                      if "applyset.kubernetes.io/part-of" in i["metadata"].get("labels", {}))

    assert deploy() == 1
    assert configmaps() == ["banner", "settings"]
    assert deploy() == 0
    assert deploy("-e", "shop_without_banner=true") == 1
    assert configmaps() == ["settings"]
