"""What a results file records about the machine it was measured on."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path

from harness.paths import VENV_BIN
from harness.tools import K8sTool


def machine_info() -> dict:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem_kb = 0
    try:
        mem_kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                          if line.startswith("MemTotal")))
    except (OSError, StopIteration):
        pass

    def version(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        except Exception:  # noqa: BLE001
            return None

    k8s_dir = K8sTool.collections_dir()
    k8s_version = None
    if k8s_dir:
        try:
            k8s_version = json.loads((k8s_dir / "ansible_collections/kubernetes/core/MANIFEST.json").read_text())[
                "collection_info"]["version"]
        except (OSError, ValueError, KeyError):
            pass
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_kb / 1048576, 1),
        "kernel": platform.release(), "python": platform.python_version(),
        "loadavg_start": os.getloadavg(),
        "kubectl": version(["kubectl", "version", "--client"]),
        "kpt": version(["kpt", "version"]),
        "ansible_core": version([str(VENV_BIN / "ansible"), "--version"]),
        "kubernetes_core": k8s_version,
    }
