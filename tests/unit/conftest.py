"""Make the core library importable as ``applyset`` without an ansible_collections tree, and the shared
fakes of the unit tests from each of their folders."""

import sys
from pathlib import Path

import pytest

MODULE_UTILS = Path(__file__).resolve().parents[2] / "plugins" / "module_utils"
# The unit tests mirror the core's packages (tests/unit/<package>/); the shared fakes (fakeapi.py,
# tls_material.py) stay here, importable from every folder.
for path in (MODULE_UTILS, Path(__file__).resolve().parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


@pytest.fixture
def clean_connection_environment(monkeypatch, tmp_path):
    """No kubeconfig, K8S_AUTH_* or in-cluster variable from outside, and an empty HOME: connection
    settings come only from what a test gives."""
    for var in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_API_KEY", "K8S_AUTH_HOST", "K8S_AUTH_CONTEXT",
                "K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
