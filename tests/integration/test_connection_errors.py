"""Connection errors against the real API server: each names the server, the credential or CA
source, and gives a fix (issue #19 points 2 and 3). Names are refused before any request.

Each case runs a module through the ansible CLI, as users run it, with a broken copy of the
test kubeconfig (a bad token, a wrong CA, no credentials, a closed port) or AWX's bearer token
environment. Where kubectl has a well-known message for the same failure, the test runs the
newest kubectl on the same kubeconfig and checks that our message carries kubectl's words.
The messages asserted here are the ones quoted in docs/troubleshooting.md.
"""

from __future__ import annotations

import base64
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from ansible_cli import ansible_env, run_module
from kubectl_parity import KUBECTL
from local_cluster.pki import PKI

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))
from applyset.kube import client as core  # noqa: E402
from applyset.inputs import names  # noqa: E402
from applyset.errors import ApiError, ConnectionFailed  # noqa: E402


CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"v": "1"}}


def broken_kubeconfig(cluster, tmp_path, *, user=None, cluster_changes=None, name="kubeconfig"):
    """A copy of the test kubeconfig with its user and/or cluster entry changed."""
    doc = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    if user is not None:
        doc["users"][0]["user"] = user
    if cluster_changes:
        entry = doc["clusters"][0]["cluster"]
        for key in ("certificate-authority", "certificate-authority-data"):
            entry.pop(key, None)
        entry.update(cluster_changes)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return str(path), doc


def names_in(doc):
    context = doc["current-context"]
    entry = next(c for c in doc["contexts"] if c["name"] == context)["context"]
    return context, entry["user"], entry["cluster"]


def server_and_ca(cluster, tmp_path):
    doc = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    entry = doc["clusters"][0]["cluster"]
    ca = tmp_path / "ca.crt"
    if "certificate-authority-data" in entry:
        ca.write_bytes(base64.b64decode(entry["certificate-authority-data"]))
    else:
        ca.write_bytes(Path(entry["certificate-authority"]).read_bytes())
    return entry["server"], str(ca)


def kubectl_says(kubeconfig):
    proc = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, "get", "namespaces"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    return proc.stderr


def info(cluster, args, env=None):
    rc, result, out = run_module(cluster, "applyset_info", args, env=env)
    assert rc != 0, out
    return result


def a_fresh_ca(tmp_path):
    pki = PKI(tmp_path / "other-pki")
    pki.create({"intruder": ("intruder", None)})
    return pki


# ----- credentials -----------------------------------------------------------------------------------------


def test_wrong_token_in_kubeconfig_names_user_file_and_context_like_kubectl(cluster, namespace, tmp_path):
    path, doc = broken_kubeconfig(cluster, tmp_path, user={"token": "not-a-valid-token"})
    context, user, _ = names_in(doc)
    result = info(cluster, {"kubeconfig": path, "namespace": namespace})
    server = doc["clusters"][0]["cluster"]["server"]
    refused = f'the token of user "{user}" in kubeconfig {path}, context "{context}" was not accepted'
    assert result["msg"].startswith(f"API server {server}: {refused}: it is wrong or has expired")
    assert "You must be logged in to the server (Unauthorized)" in result["msg"]
    # kubectl's words depend on its discovery cache: with none for this server (the test run alone)
    # its discovery is refused first, and it says "the server has asked for the client to provide
    # credentials"; with one, its GET is, and it says "Unauthorized".
    assert "You must be logged in to the server (" in kubectl_says(path)
    assert result["error"]["type"] == "AuthenticationFailed"
    assert result["error"]["fix"].startswith(f"renew the token in kubeconfig {path}")


def test_revoked_awx_bearer_token_names_the_environment_variable(cluster, kube, namespace, tmp_path):
    """A scheduled AWX job whose credential's token no longer works: its ServiceAccount is gone."""
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "awx"}})
    token = kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/awx/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 600}})["status"]["token"]
    kube.delete(f"/api/v1/namespaces/{namespace}/serviceaccounts/awx")
    server, ca = server_and_ca(cluster, tmp_path)
    env = ansible_env(cluster, KUBECONFIG=str(tmp_path / "no-such-kubeconfig"), K8S_AUTH_HOST=server,
                      K8S_AUTH_API_KEY=token, K8S_AUTH_SSL_CA_CERT=ca, K8S_AUTH_VERIFY_SSL="True")
    rc, result, out = run_module(cluster, "applyset_apply",
                                 {"parent": "set1", "namespace": namespace, "definition": [CONFIGMAP]}, env=env)
    assert rc != 0, out
    refused = "the bearer token from the K8S_AUTH_API_KEY environment variable was not accepted: it is wrong or has expired"  # noqa: E501
    assert result["msg"].startswith(f"API server {server}: {refused}")
    assert "update the bearer token of the job template's Kubernetes credential" in result["error"]["fix"]
    assert token not in out

    # The same token given as the api_key option.
    rc, result, out = run_module(cluster, "applyset_info", {"namespace": namespace, "host": server, "ca_cert": ca,
                                                             "api_key": token})
    assert rc != 0, out
    assert result["msg"].startswith(f"API server {server}: the bearer token from the api_key option was not accepted")
    assert token not in out


def test_client_certificate_from_another_ca_is_refused_naming_the_user(cluster, namespace, tmp_path):
    pki = a_fresh_ca(tmp_path)
    crt, key = pki.client_files("intruder")
    path, doc = broken_kubeconfig(cluster, tmp_path, user={"client-certificate": str(crt), "client-key": str(key)})
    _, user, _ = names_in(doc)
    result = info(cluster, {"kubeconfig": path, "namespace": namespace})
    assert f'the client certificate of user "{user}" in kubeconfig {path}' in result["msg"]
    assert "was not accepted: it is wrong or has expired" in result["msg"]
    assert "signed by another CA" in result["error"]["fix"]


def test_no_credentials_is_a_403_on_discovery_that_says_so(cluster, namespace, tmp_path):
    path, doc = broken_kubeconfig(cluster, tmp_path, user={})
    _, user, _ = names_in(doc)
    result = info(cluster, {"kubeconfig": path, "namespace": namespace})
    # kube-apiserver allows anonymous requests by default and refuses them discovery.
    assert "discovery refused (403 Forbidden) to no credentials" in result["msg"]
    assert f'(user "{user}" in kubeconfig {path}' in result["msg"]
    assert 'User \\"system:anonymous\\"' in result["msg"] or 'User "system:anonymous"' in result["msg"]
    assert result["error"]["fix"].startswith("the server took the request as anonymous: give credentials")


def test_service_account_without_rbac_is_told_which_permission_is_missing(cluster, kube, namespace, tmp_path):
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nobody"}})
    token = kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/nobody/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 600}})["status"]["token"]
    server, ca = server_and_ca(cluster, tmp_path)
    env = ansible_env(cluster, K8S_AUTH_HOST=server, K8S_AUTH_API_KEY=token, K8S_AUTH_SSL_CA_CERT=ca)
    rc, result, out = run_module(cluster, "applyset_apply",
                                 {"parent": "set1", "namespace": namespace, "definition": [CONFIGMAP]}, env=env)
    assert rc != 0, out
    # Discovery is allowed to every authenticated user; the first refusal is the parent's GET.
    assert result["msg"].startswith(f'parent secrets./set1: failed to fetch ApplySet parent object "secrets./set1"')
    assert f'User "system:serviceaccount:{namespace}:nobody" cannot get resource "secrets"' in result["msg"]
    assert "check the credentials' RBAC" in result["error"]["fix"]


# ----- the server and its certificate ---------------------------------------------------------------------


def test_wrong_ca_names_the_ca_source_like_kubectl(cluster, namespace, tmp_path):
    pki = a_fresh_ca(tmp_path)
    wrong_ca = base64.b64encode(pki.ca_crt.read_bytes()).decode()
    path, doc = broken_kubeconfig(cluster, tmp_path, cluster_changes={"certificate-authority-data": wrong_ca})
    _, _, cluster_name = names_in(doc)
    result = info(cluster, {"kubeconfig": path, "namespace": namespace})
    assert "TLS verification of the API server's certificate failed" in result["msg"]
    assert "certificate verify failed" in result["msg"]
    assert f'The CA used: the certificate-authority-data of cluster "{cluster_name}" in kubeconfig {path}' \
        in result["msg"]
    assert result["error"]["type"] == "ConnectionFailed"
    assert "certificate signed by unknown authority" in kubectl_says(path)


def test_wrong_ca_file_from_awx_names_the_variable(cluster, namespace, tmp_path):
    pki = a_fresh_ca(tmp_path)
    server, _ = server_and_ca(cluster, tmp_path)
    env = ansible_env(cluster, K8S_AUTH_HOST=server, K8S_AUTH_API_KEY="irrelevant",
                      K8S_AUTH_SSL_CA_CERT=str(pki.ca_crt))
    result = info(cluster, {"namespace": namespace}, env=env)
    assert f"The CA used: the CA file {pki.ca_crt} from the K8S_AUTH_SSL_CA_CERT environment variable" \
        in result["msg"]


def test_missing_ca_file_is_named_at_once_not_retried_as_unreachable(cluster, namespace, tmp_path):
    server, _ = server_and_ca(cluster, tmp_path)
    missing = tmp_path / "nope" / "ca.crt"
    env = ansible_env(cluster, K8S_AUTH_HOST=server, K8S_AUTH_API_KEY="irrelevant",
                      K8S_AUTH_SSL_CA_CERT=str(missing))
    result = info(cluster, {"namespace": namespace}, env=env)
    assert f"cannot read the CA certificate file {missing}: no such file" in result["msg"]
    assert "K8S_AUTH_SSL_CA_CERT" in result["msg"]
    assert "cannot connect" not in result["msg"] and "tries" not in result["msg"]


def test_a_ca_file_that_is_not_a_certificate_is_named_at_once_not_retried(cluster, namespace, tmp_path):
    server, _ = server_and_ca(cluster, tmp_path)
    garbage = tmp_path / "ca.crt"
    garbage.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")
    env = ansible_env(cluster, K8S_AUTH_HOST=server, K8S_AUTH_API_KEY="irrelevant",
                      K8S_AUTH_SSL_CA_CERT=str(garbage))
    result = info(cluster, {"namespace": namespace}, env=env)
    assert f"cannot use the CA certificate file {garbage}: " in result["msg"], result["msg"]
    assert "K8S_AUTH_SSL_CA_CERT" in result["msg"]
    assert "cannot connect" not in result["msg"] and "tries" not in result["msg"]


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_names_the_server_and_where_its_address_came_from(cluster, tmp_path):
    """Through the core: a server that never answered is retried a few seconds, then named."""
    doc = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    server = f"https://127.0.0.1:{closed_port()}"
    path, doc = broken_kubeconfig(cluster, tmp_path, cluster_changes={"server": server, **{
        k: v for k, v in doc["clusters"][0]["cluster"].items() if k.startswith("certificate-authority")}})
    _, _, cluster_name = names_in(doc)
    client = core.connect({"kubeconfig": path}, retry_seconds=1)
    with pytest.raises(ConnectionFailed) as caught:
        client.discover()
    assert str(caught.value).startswith(f"API server {server}: cannot connect (connection refused, ")
    assert re.search(r" tries in \d+ s\): ", str(caught.value)), str(caught.value)
    assert f'The address comes from the server of cluster "{cluster_name}" in kubeconfig {path}' \
        in str(caught.value)
    assert "check that the cluster is running" in caught.value.fix


# ----- kubeconfig files -----------------------------------------------------------------------------------


def test_missing_kubeconfig_file_says_no_such_file(cluster, tmp_path):
    missing = str(tmp_path / "typo" / "config")
    result = info(cluster, {"kubeconfig": missing})
    assert result["msg"].startswith(f"kubeconfig {missing} (from the kubeconfig option): no such file: {missing}")
    assert "Invalid kube-config" not in result["msg"]
    assert result["error"]["type"] == "ConfigError"


def test_unknown_context_lists_the_existing_ones(cluster, tmp_path):
    context, _, _ = names_in(yaml.safe_load(Path(cluster.kubeconfig).read_text()))
    result = info(cluster, {"kubeconfig": cluster.kubeconfig, "context": "prod-eu"})
    assert f'context "prod-eu" does not exist; the contexts there are "{context}"' in result["msg"]
    assert result["error"]["details"]["contexts"] == [context]


def test_empty_kubeconfig_is_called_empty(cluster, tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("")
    result = info(cluster, {"kubeconfig": str(empty)})
    assert result["msg"].startswith(f"kubeconfig {empty}: the kubeconfig is empty: it defines no contexts")


# ----- names are refused before any request ---------------------------------------------------------------


class CountingServer:
    """A TCP listener that counts connections and closes them: proof that nothing was sent."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.connections = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"https://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def stop(self):
        self.stopped.set()
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.mark.parametrize("module, args, message", [
    ("applyset_apply", {"parent": "set1", "namespace": "Tenant_A", "definition": []},
     'option namespace: namespace "Tenant_A" is not a valid DNS-1123 label'),
    ("applyset_info", {"namespace": "Tenant_A"}, 'option namespace: namespace "Tenant_A" is not a valid DNS-1123 label'),
    ("applyset_verify", {"parent": "My_Set", "namespace": "shop"},
     'option parent: name "My_Set" is not a valid DNS-1123 subdomain'),
])
def test_invalid_names_are_refused_before_any_request(cluster, module, args, message):
    server = CountingServer()
    try:
        env = ansible_env(cluster, K8S_AUTH_HOST=server.url, K8S_AUTH_API_KEY="unused")
        rc, result, out = run_module(cluster, module, args, env=env)
    finally:
        server.stop()
    assert rc != 0, out
    assert message in result["msg"]
    assert result["error"]["type"] == "InputErrors"
    assert server.connections == 0


# Kinds whose names the server checks with rules of their own (APIService: VERSION.GROUP, IPAddress:
# an IP address, CRD: PLURAL.GROUP): names.py applies a necessary part of the rule only.
SERVER_STRICTER = {("apiregistration.k8s.io", "APIService"), ("networking.k8s.io", "IPAddress"),
                   ("apiextensions.k8s.io", "CustomResourceDefinition")}
# One name per rule, each valid under the looser rules only: path segment < subdomain < label < DNS-1035.
PROBES = ("Ab_c", "a.b", "1a")


def test_name_rules_are_the_servers_for_every_served_kind(cluster, namespace):
    """A server-side dry-run apply of each probe name, for every kind the server serves: names.py
    never refuses a name the server accepts, and for built-in kinds refuses what it refuses (but for
    kinds with names of their own)."""
    client = core.connect({"kubeconfig": cluster.kubeconfig})
    discovery = client.discover()

    def server_refuses(res, name):
        obj = {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"name": name}}
        if res.namespaced:
            obj["metadata"]["namespace"] = namespace
        try:
            client.apply(res, obj, field_manager="name-probe", dry_run=True, field_validation="Ignore")
        except ApiError as err:
            causes = ((err.body or {}).get("details") or {}).get("causes") or []
            return any(cause.get("field") == "metadata.name" for cause in causes)
        return False

    checked, wrong = 0, []
    seen = set()
    for res in discovery.resources:
        if res.group_kind in seen or not {"create", "patch"} <= res.verbs:
            continue
        seen.add(res.group_kind)
        checked += 1
        for probe in PROBES:
            ours = names.name_problem(res.group, res.kind, probe) is not None
            theirs = server_refuses(res, probe)
            # Kinds of other groups (custom resources, maybe another session's) only get the path
            # segment rule: names.py must never be stricter than the server for them.
            exact = res.group in names.BUILT_IN_GROUPS and (res.group, res.kind) not in SERVER_STRICTER
            if ours and not theirs or (exact and ours != theirs):
                wrong.append(f"{res.kind}.{res.group} {probe!r}: server refuses={theirs}, names.py refuses={ours}")
    assert checked >= 40
    assert not wrong


def test_conflict_reason_names_the_fix(cluster, kube, namespace):
    """The per-object reason docs/troubleshooting.md quotes for a field owned by another manager."""
    kube.apply(f"/api/v1/namespaces/{namespace}/configmaps/c1", dict(CONFIGMAP, data={"v": "theirs"}),
               field_manager="other-tool")
    rc, result, out = run_module(cluster, "applyset_apply",
                                 {"parent": "set1", "namespace": namespace, "definition": [CONFIGMAP]})
    assert rc != 0, out
    (failed,) = [o for o in result["objects"] if o["action"] == "failed"]
    assert failed["reason"].startswith("conflicts with another field manager: ")
    assert "force_conflicts: true" in failed["reason"]


LABEL_KEY_PROBES = ["app", "app.kubernetes.io/name", "A1", "Example.com/app", "has space", "-app", "a/b/c", "/app",
                    "x" * 64, "example.com/" + "x" * 63, "a_b-c.d"]
LABEL_VALUE_PROBES = ["", "1.0", "v1_2-3", "has space", "v1.2.3+build", "-x", "x" * 63, "x" * 64]


def test_label_and_annotation_rules_are_the_servers(cluster, namespace):
    """Each probe key and value, in a ConfigMap sent as a server-side dry-run apply: names.py refuses
    exactly what the server refuses."""
    client = core.connect({"kubeconfig": cluster.kubeconfig})
    configmaps = client.discover().for_gvk("", "v1", "ConfigMap")

    def server_refuses(field, labels=None, annotations=None):
        meta = {"name": "probe", "namespace": namespace, "labels": labels or {}, "annotations": annotations or {}}
        try:
            client.apply(configmaps, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta},
                         field_manager="name-probe", dry_run=True)
        except ApiError as err:
            causes = ((err.body or {}).get("details") or {}).get("causes") or []
            return any(cause.get("field") == field for cause in causes)
        return False

    wrong = []
    for key in LABEL_KEY_PROBES:
        for field, labels, annotations in (("metadata.labels", {key: "v"}, None),
                                           ("metadata.annotations", None, {key: "v"})):
            ours = bool(names.metadata_map_problems(labels, annotations))
            theirs = server_refuses(field, labels, annotations)
            if ours != theirs:
                wrong.append(f"{field} key {key!r}: server refuses={theirs}, names.py refuses={ours}")
    for value in LABEL_VALUE_PROBES:
        ours = bool(names.metadata_map_problems({"app": value}, None))
        theirs = server_refuses("metadata.labels", {"app": value})
        if ours != theirs:
            wrong.append(f"label value {value!r}: server refuses={theirs}, names.py refuses={ours}")
    big = {"a": "x" * (256 * 1024 - 1)}, {"a": "x" * (256 * 1024)}
    for annotations in big:
        ours = bool(names.metadata_map_problems(None, annotations))
        theirs = server_refuses("metadata.annotations", annotations=annotations)
        if ours != theirs:
            wrong.append(f"annotations of {len(annotations['a']) + 1} bytes: server refuses={theirs}, ours={ours}")
    assert not wrong


def test_bad_label_value_is_refused_before_the_parent_is_written(cluster, kube, namespace):
    labelled = dict(CONFIGMAP, metadata={"name": "c1", "labels": {"app": "my app"}})
    rc, result, out = run_module(cluster, "applyset_apply",
                                 {"parent": "set1", "namespace": namespace, "definition": [labelled]})
    assert rc != 0, out
    assert 'metadata.labels["app"] value "my app" is not a valid label value' in result["msg"]
    assert 'e.g. "my-app"' in result["msg"]
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1") is None
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/c1") is None
