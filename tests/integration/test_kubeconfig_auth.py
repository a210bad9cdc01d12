"""Kubeconfig credentials against the real API server: who the server says we are.

Plain users (token, tokenFile, client certificate) are read by applyset.kubeconfig without the
kubernetes package; exec plugins still go through the package. Each case asks the server
"who am I" (a SelfSubjectReview, allowed to every authenticated user) through ``kube.connect``,
the way every module connects.
"""

import base64
import json
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))
from applyset.kube import client as core_kube  # noqa: E402
from applyset.errors import AuthenticationFailed  # noqa: E402

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


def whoami(client) -> str:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    return client.request("POST", WHOAMI, body=body).body["status"]["userInfo"]["username"]


def service_account_token(kube, namespace, name) -> str:
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    return kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}})["status"]["token"]


@pytest.fixture
def admin_config(cluster) -> dict:
    return yaml.safe_load(Path(cluster.kubeconfig).read_text())


def kubeconfig_with(admin_config: dict, tmp_path: Path, user: dict, *, ca_as_file: bool = False) -> str:
    """A kubeconfig for the test cluster whose user is ``user``; with ``ca_as_file`` the CA is a
    file named relative to the kubeconfig's directory."""
    cluster = dict(admin_config["clusters"][0]["cluster"])
    if ca_as_file:
        (tmp_path / "pki").mkdir(exist_ok=True)
        (tmp_path / "pki" / "ca.crt").write_bytes(base64.b64decode(cluster.pop("certificate-authority-data")))
        cluster["certificate-authority"] = "pki/ca.crt"
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "test",
           "clusters": [{"name": "test", "cluster": cluster}],
           "users": [{"name": "test", "user": user}],
           "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_the_test_kubeconfig_is_read_without_the_package_as_the_same_user(cluster, kube):
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    assert type(client.cfg).__module__ == "applyset.kube.kubeconfig"
    # The independent test client loads the same kubeconfig with the kubernetes package.
    review = kube.create(WHOAMI, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert whoami(client) == review["status"]["userInfo"]["username"]


def test_token_with_a_ca_file_relative_to_the_kubeconfig(kube, namespace, admin_config, tmp_path):
    token = service_account_token(kube, namespace, "reader")
    path = kubeconfig_with(admin_config, tmp_path, {"token": token}, ca_as_file=True)
    client = core_kube.connect({"kubeconfig": path})
    assert client.cfg.ssl_ca_cert == str(tmp_path / "pki" / "ca.crt")
    assert whoami(client) == f"system:serviceaccount:{namespace}:reader"


def test_a_token_file_rotated_during_a_run_is_read_again(kube, namespace, admin_config, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(service_account_token(kube, namespace, "first"))
    path = kubeconfig_with(admin_config, tmp_path, {"tokenFile": "token"})
    client = core_kube.connect({"kubeconfig": path})
    assert whoami(client) == f"system:serviceaccount:{namespace}:first"
    token_file.write_text(service_account_token(kube, namespace, "second") + "\n")
    assert whoami(client) == f"system:serviceaccount:{namespace}:second"


def test_the_api_key_option_replaces_a_kubeconfig_token(kube, namespace, admin_config, tmp_path):
    token = service_account_token(kube, namespace, "given")
    path = kubeconfig_with(admin_config, tmp_path, {"token": "not-a-valid-token"})
    with pytest.raises(AuthenticationFailed, match='the token of user "test"'):
        whoami(core_kube.connect({"kubeconfig": path}))
    assert whoami(core_kube.connect({"kubeconfig": path, "api_key": token})) == (
        f"system:serviceaccount:{namespace}:given")


def test_an_exec_plugin_goes_through_the_kubernetes_package(kube, namespace, admin_config, tmp_path):
    token = service_account_token(kube, namespace, "plugged")
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": token}}
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(credential)}\nEOF\n")
    plugin.chmod(0o700)
    path = kubeconfig_with(admin_config, tmp_path, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}})
    client = core_kube.connect({"kubeconfig": path})
    assert type(client.cfg).__module__.startswith("kubernetes.")
    assert client.source.credential_kind == "exec"
    assert whoami(client) == f"system:serviceaccount:{namespace}:plugged"


def _open_connections(client):
    pool = client._pool.connection_from_url(client.host).pool  # pylint: disable=protected-access
    return [conn.sock for conn in list(pool.queue) if conn is not None and getattr(conn, "sock", None) is not None]


def test_new_connections_resume_the_tls_session_and_stay_the_certificates_user(cluster, kube):
    """tls.py: connections opened after the first resume its TLS session (no certificate sent or
    signed again), and the server still knows them as the client certificate's user."""
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig}, parallelism=8)
    first = whoami(client)
    review = kube.create(WHOAMI, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert first == review["status"]["userInfo"]["username"]
    names = client.map(lambda _: whoami(client), range(8))  # up to 8 connections at once
    assert set(names) == {first}, names
    sockets = _open_connections(client)
    assert len(sockets) >= 2, sockets
    assert sum(1 for sock in sockets if sock.session_reused) >= len(sockets) - 1, [s.session_reused for s in sockets]
    # Reading every namespace needs the certificate's rights (anonymous requests are refused).
    assert client.map(lambda _: client.request("GET", "/api/v1/namespaces/kube-system").status, range(8)) == [200] * 8
