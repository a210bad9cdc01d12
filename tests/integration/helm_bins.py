"""The helm binaries the chart tests render with: helm 3 and helm 4 built from their Go modules by
hack/local_cluster/build.py (``ensure_helm``, cached with the control plane's binaries), or the ones
``APPLYSET_TEST_HELM3`` / ``APPLYSET_TEST_HELM4`` point at."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HELMS = ("helm3", "helm4")


@lru_cache(maxsize=None)
def helm_binaries() -> dict[str, str]:
    """``{"helm3": path, "helm4": path}``: from the environment, else built (or found in the cache)."""
    given = {name: os.environ.get(f"APPLYSET_TEST_{name.upper()}") for name in HELMS}
    if all(given.values()):
        return {name: str(path) for name, path in given.items()}
    sys.path.insert(0, str(REPO_ROOT / "hack"))
    from local_cluster import build

    built = build.ensure_helm()
    return {name: given[name] or str(built[name]) for name in HELMS}


def helm(name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run helm ``name`` (helm3 or helm4) with ``args``."""
    return subprocess.run([helm_binaries()[name], *args], capture_output=True, text=True, check=check, timeout=600)
