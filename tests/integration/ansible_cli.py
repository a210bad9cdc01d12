"""Drive the collection the way users do: through the ansible and ansible-playbook CLIs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# result_file: what `ansible --tree` did, without the option ansible-core removes in 2.23.
CALLBACK_PLUGINS = Path(__file__).resolve().parent / "callback_plugins"

# The shop's web tier as deploy.yml's `shop_manifests` holds it: a Deployment and its Service
# (kept under 30-web.yaml, indented as the tests' textwrap.dedent expects).
WEB_MANIFEST = """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          replicas: 1
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec:
              containers: [{name: web, image: nginx:1.27}]
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        spec:
          selector: {app: web}
          ports: [{port: 80}]
        """


def ansible_env(cluster, **extra) -> dict:
    env = cluster.env(**extra)
    env["ANSIBLE_CONFIG"] = str(REPO_ROOT / "ansible.cfg")
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("ANSIBLE_NOCOLOR", "1")
    env.setdefault("ANSIBLE_FORCE_COLOR", "0")
    return env


def run_module(cluster, module: str, args: dict, *, check: bool = False, diff: bool = False,
               env: dict | None = None, timeout: float = 300):
    """Run one module ad hoc on localhost; returns (rc, result dict, combined output)."""
    with tempfile.TemporaryDirectory() as result_dir:
        cmd = [str(BIN / "ansible"), "localhost", "-m", f"applyset.kubernetes.{module}",
               "-a", json.dumps(args)]
        if check:
            cmd.append("--check")
        if diff:
            cmd.append("--diff")
        run_env = dict(env or ansible_env(cluster))
        # Ad hoc runs load callbacks other than stdout's only with LOAD_CALLBACK_PLUGINS;
        # stdout stays the same (minimal, as stdout_callback is `default`).
        run_env.update(
            ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
            ANSIBLE_CALLBACK_PLUGINS=os.pathsep.join(
                filter(None, [str(CALLBACK_PLUGINS), run_env.get("ANSIBLE_CALLBACK_PLUGINS")])),
            ANSIBLE_CALLBACKS_ENABLED=",".join(
                filter(None, ["result_file", run_env.get("ANSIBLE_CALLBACKS_ENABLED")])),
            APPLYSET_RESULT_DIR=result_dir,
        )
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=run_env, cwd=REPO_ROOT)
        result_file = Path(result_dir) / "localhost"
        result = json.loads(result_file.read_text()) if result_file.exists() else {}
    return proc.returncode, result, proc.stdout + proc.stderr


def run_playbook(cluster, playbook, *, extra_vars: dict | None = None, check: bool = False,
                 diff: bool = False, env: dict | None = None, timeout: float = 600):
    """Run a playbook file (path relative to the repo, or absolute); returns CompletedProcess."""
    cmd = [str(BIN / "ansible-playbook"), str(playbook)]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=env or ansible_env(cluster), cwd=REPO_ROOT)
