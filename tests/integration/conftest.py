"""Integration fixtures: one real control plane per test session.

By default the session starts the local control plane built from upstream Go
modules (``hack/local-cluster``) in a temporary state directory and stops it
at the end. Set ``APPLYSET_TEST_KUBECONFIG`` to run against an existing
cluster instead; each test still gets a fresh namespace of its own.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "hack"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import warm_python as warm  # noqa: E402
from kubeapi import KubeAPI  # noqa: E402
from local_cluster.cluster import LocalCluster  # noqa: E402
from cluster_info import ClusterInfo  # noqa: E402


@pytest.fixture(scope="session")
def cluster() -> ClusterInfo:
    existing = os.environ.get("APPLYSET_TEST_KUBECONFIG")
    if existing:
        yield ClusterInfo(kubeconfig=existing, local=None)
        return
    # Not under pytest's basetemp: concurrent pytest sessions on one machine rotate
    # (delete) each other's numbered temp dirs, which would pull etcd's data away.
    state_dir = Path(tempfile.mkdtemp(prefix="applyset-test-cluster-"))
    local = LocalCluster(state_dir=state_dir)
    started = time.monotonic()
    local.up(log=lambda msg: print(msg, file=sys.stderr))
    print(f"control plane up in {time.monotonic() - started:.1f}s", file=sys.stderr)
    try:
        yield ClusterInfo(kubeconfig=str(local.kubeconfig), local=local)
    finally:
        local.down(log=lambda msg: print(msg, file=sys.stderr))
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def warm_python():
    """The modules of this process's ``ansible`` and ``ansible-playbook`` commands run in a warm Python
    (``warm_python/__init__.py``: what stays cold, and ``APPLYSET_WARM_PYTHON_ENABLED=false``)."""
    if not (warm.enabled() and warm.available()):
        yield None
        return
    directory = Path(tempfile.mkdtemp(prefix="applyset-warm-"))
    server = warm.WarmPython(directory)
    saved = dict(os.environ)
    os.environ.update(server.environ(os.environ))
    try:
        yield server
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def kube(cluster) -> KubeAPI:
    return KubeAPI(cluster.kubeconfig)


def _slug(text: str, limit: int) -> str:
    cleaned = "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")
    return cleaned[:limit].strip("-") or "t"


# Whether this cluster's controller-manager publishes kube-root-ca.crt into new namespaces;
# None until a first namespace has told.
_ROOT_CA_PUBLISHED: list[bool | None] = [None]


def _wait_for_root_ca_configmap(kube, namespace: str, timeout: float = 30.0) -> None:
    """Let kube-controller-manager put kube-root-ca.crt into a new namespace before the test starts.

    It arrives a moment after the namespace; a test that snapshots the namespace's ConfigMaps
    before and after a refused run would otherwise see it appear and blame the run for it.
    A cluster that never publishes it (no controller-manager) is waited for once, not per test.
    """
    if _ROOT_CA_PUBLISHED[0] is False:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if kube.get(f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt") is not None:
            _ROOT_CA_PUBLISHED[0] = True
            return
        time.sleep(0.02)
    if _ROOT_CA_PUBLISHED[0] is None:
        _ROOT_CA_PUBLISHED[0] = False
        return
    raise AssertionError(f"kube-root-ca.crt did not appear in namespace {namespace} within {timeout:.0f}s")


@pytest.fixture
def namespace(request, kube) -> str:
    """A fresh namespace named after the test, deleted afterwards."""
    name = f"t-{_slug(request.node.name, 40)}-{secrets.token_hex(3)}"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    _wait_for_root_ca_configmap(kube, name)
    yield name
    kube.delete(f"/api/v1/namespaces/{name}")

