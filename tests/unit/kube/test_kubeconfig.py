"""Plain kubeconfigs are read without the kubernetes package, and load as the package loads them.

Configuration loading runs on real files in a temporary directory; the Authorization header is
read from ``KubeClient._headers``, the value every request carries. Whether a real API server
accepts what is loaded is proven by tests/integration (every integration test connects through a
plain client-certificate kubeconfig; test_rbac_secrets.py through tokens).
"""

import base64
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from applyset.kube import client as kube
from applyset.kube import connection
from applyset.kube import kubeconfig as plain
from applyset.errors import ConfigError

import tls_material

MODULE_UTILS = Path(__file__).resolve().parents[3] / "plugins" / "module_utils"
# Real PEMs: the client parses them when it is built (tls.py).
CA_PEM = CERT_PEM = tls_material.CERT_PEM
KEY_PEM = tls_material.KEY_PEM


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig_doc(user=None, cluster=None, context="dev", cluster_name="c1", user_name="alice"):
    return {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": cluster or {"server": "https://k8s.test:6443",
                                                                    "certificate-authority-data": b64(CA_PEM)}}],
        "users": [{"name": user_name, "user": {"token": "secret-token"} if user is None else user}],
        "contexts": [{"name": context, "context": {"cluster": cluster_name, "user": user_name}}],
        "current-context": context,
    }


def write(path: Path, doc) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return str(path)


def authorization(cfg) -> str | None:
    """The Authorization header KubeClient sends with this configuration."""
    return kube.KubeClient(cfg)._headers("application/json", None).get("Authorization")


@pytest.fixture(autouse=True)
def _no_connection_settings_from_outside(clean_connection_environment):
    """Every test here starts from no kubeconfig, no K8S_AUTH_* and an empty HOME."""


def run_python(code: str, *args) -> str:
    """Run ``code`` in a fresh interpreter (this one may have imported kubernetes already)."""
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(MODULE_UTILS)})
    assert done.returncode == 0, done.stderr
    return done.stdout


# ----- which path a user takes --------------------------------------------------------------------


IMPORTS_KUBERNETES = """
import sys
from applyset.kube import connection
cfg, source = connection.load_connection({"kubeconfig": sys.argv[1]})
print(type(cfg).__module__, "kubernetes" in sys.modules, cfg.cert_file)
"""


@pytest.mark.parametrize("user", [
    {"token": "t"},
    {"client-certificate-data": b64(CERT_PEM), "client-key-data": b64(KEY_PEM)},
    {"username": "u", "password": "p"},
    {},
])
def test_a_plain_kubeconfig_never_imports_the_kubernetes_package(tmp_path, user):
    path = write(tmp_path / "config", kubeconfig_doc(user=user))
    module, imported, _ = run_python(IMPORTS_KUBERNETES, path).split()
    assert (module, imported) == ("applyset.kube.kubeconfig", "False")


@pytest.mark.parametrize("user", [
    {"exec": {"command": "true", "apiVersion": "client.authentication.k8s.io/v1"}},
    {"auth-provider": {"name": "oidc", "config": {"id-token": "x", "client-id": "c"}}},
])
def test_exec_plugins_and_auth_providers_go_through_the_kubernetes_package(user):
    assert plain.needs_kubernetes_package(user)
    assert not plain.needs_kubernetes_package({"token": "t"}) and not plain.needs_kubernetes_package(None)


def test_an_exec_user_is_loaded_by_the_package_with_the_context_chosen_here(tmp_path):
    # The package alone would take the last file's current-context; kubectl takes the first's.
    exec_user = {"exec": {"command": "/bin/false", "apiVersion": "client.authentication.k8s.io/v1"}}
    first = write(tmp_path / "a" / "config", kubeconfig_doc(user=exec_user, context="first"))
    second = write(tmp_path / "b" / "config", kubeconfig_doc(
        context="second", cluster_name="c2", user_name="bob",
        cluster={"server": "https://second.test:6443", "insecure-skip-tls-verify": True}))
    cfg, source = connection.load_connection({"kubeconfig": os.pathsep.join([first, second])})
    assert type(cfg).__module__.startswith("kubernetes.")
    assert (cfg.host, source.context, source.credential_kind) == ("https://k8s.test:6443", "first", "exec")


# ----- files merged as kubectl merges them ---------------------------------------------------------


def test_several_files_merge_first_wins_per_name_and_for_the_current_context(tmp_path, monkeypatch):
    first = write(tmp_path / "one" / "config", kubeconfig_doc(
        context="a", cluster={"server": "https://first.test:6443", "insecure-skip-tls-verify": True}))
    second = write(tmp_path / "two" / "config", {
        **kubeconfig_doc(context="b", cluster={"server": "https://second.test:6443"},
                         user={"token": "second-token"}),
        "contexts": [{"name": "a", "context": {"cluster": "x", "user": "y"}},
                     {"name": "b", "context": {"cluster": "c1", "user": "alice"}}]})
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([first, second]))
    cfg, source = connection.load_connection({})
    assert (source.context, cfg.host, cfg.verify_ssl) == ("a", "https://first.test:6443", False)
    assert authorization(cfg) == "Bearer secret-token"
    # Context "b" of the second file names cluster c1 and user alice: the first file's.
    cfg, _ = connection.load_connection({"context": "b"})
    assert (cfg.host, authorization(cfg)) == ("https://first.test:6443", "Bearer secret-token")


def test_relative_paths_are_read_from_the_directory_of_the_file_that_holds_the_entry(tmp_path, monkeypatch):
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "ca.crt").write_bytes(CA_PEM)
    (tmp_path / "users" / "certs").mkdir(parents=True)
    (tmp_path / "users" / "certs" / "me.crt").write_bytes(CERT_PEM)
    (tmp_path / "users" / "certs" / "me.key").write_bytes(KEY_PEM)
    (tmp_path / "users" / "token").write_text("filed-token\n")
    clusters = write(tmp_path / "clusters" / "config", {
        "clusters": [{"name": "c1", "cluster": {"server": "https://k8s.test:6443", "certificate-authority": "ca.crt"}}],
        "contexts": [{"name": "dev", "context": {"cluster": "c1", "user": "alice"}},
                     {"name": "tok", "context": {"cluster": "c1", "user": "tokened"}}],
        "current-context": "dev"})
    users = write(tmp_path / "users" / "config", {"users": [
        {"name": "alice", "user": {"client-certificate": "certs/me.crt", "client-key": "certs/me.key"}},
        {"name": "tokened", "user": {"tokenFile": "token"}}]})
    cfg, source = connection.load_connection({"kubeconfig": os.pathsep.join([clusters, users])})
    assert (cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file) == (
        str(tmp_path / "clusters" / "ca.crt"), str(tmp_path / "users" / "certs" / "me.crt"),
        str(tmp_path / "users" / "certs" / "me.key"))
    assert source.credential_kind == "client certificate" and authorization(cfg) is None
    cfg, _ = connection.load_connection({"kubeconfig": os.pathsep.join([clusters, users]), "context": "tok"})
    assert authorization(cfg) == "Bearer filed-token"


def test_relative_paths_of_a_kubeconfig_mapping_are_read_from_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "ca.crt").write_bytes(CA_PEM)
    monkeypatch.chdir(tmp_path)
    cfg, _ = connection.load_connection({"kubeconfig": kubeconfig_doc(
        cluster={"server": "https://k8s.test:6443", "certificate-authority": "ca.crt"})})
    assert cfg.ssl_ca_cert == str(tmp_path / "ca.crt")


# ----- certificates -------------------------------------------------------------------------------


def test_certificate_data_goes_to_private_files_that_are_removed_at_exit(tmp_path):
    path = write(tmp_path / "config", kubeconfig_doc(
        user={"client-certificate-data": b64(CERT_PEM), "client-key-data": b64(KEY_PEM)}))
    cfg, _ = connection.load_connection({"kubeconfig": path})
    for name, content in ((cfg.ssl_ca_cert, CA_PEM), (cfg.cert_file, CERT_PEM), (cfg.key_file, KEY_PEM)):
        assert Path(name).read_bytes() == content
        assert stat.S_IMODE(os.stat(name).st_mode) == 0o600
    again, _ = connection.load_connection({"kubeconfig": path})
    assert (again.ssl_ca_cert, again.cert_file, again.key_file) == (cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file)

    written = run_python(IMPORTS_KUBERNETES, path).split()[2]
    assert written.startswith(("/", "C:")) and not os.path.exists(written)


def test_data_wins_over_the_file_it_stands_for(tmp_path):
    path = write(tmp_path / "config", kubeconfig_doc(cluster={
        "server": "https://k8s.test:6443", "certificate-authority": "/nonexistent/ca.crt",
        "certificate-authority-data": b64(CA_PEM)}))
    cfg, _ = connection.load_connection({"kubeconfig": path})
    assert Path(cfg.ssl_ca_cert).read_bytes() == CA_PEM


def test_a_client_key_file_that_does_not_exist_is_refused_with_its_path(tmp_path):
    path = write(tmp_path / "config", kubeconfig_doc(user={"client-certificate-data": b64(CERT_PEM),
                                                           "client-key": "missing.key"}))
    with pytest.raises(ConfigError) as info:
        connection.load_connection({"kubeconfig": path})
    assert (info.value.obj, info.value.message) == (
        f"kubeconfig {path}", f"could not load Kubernetes configuration: File does not exist: {tmp_path / 'missing.key'}")


def test_data_that_is_not_base64_is_refused(tmp_path):
    path = write(tmp_path / "config", kubeconfig_doc(user={"client-certificate-data": "abc",
                                                           "client-key-data": b64(KEY_PEM)}))
    with pytest.raises(ConfigError, match="client-certificate-data is not base64"):
        connection.load_connection({"kubeconfig": path})


def test_an_http_server_loads_no_tls_files(tmp_path):
    path = write(tmp_path / "config", kubeconfig_doc(cluster={
        "server": "http://127.0.0.1:8080/", "certificate-authority": "/nonexistent/ca.crt"}))
    cfg, _ = connection.load_connection({"kubeconfig": path})
    assert (cfg.host, cfg.ssl_ca_cert) == ("http://127.0.0.1:8080", None)


def test_cluster_tls_and_proxy_settings_and_the_options_that_override_them(tmp_path):
    path = write(tmp_path / "config", kubeconfig_doc(cluster={
        "server": "https://10.0.0.1:6443", "insecure-skip-tls-verify": True, "tls-server-name": "api.k8s.test",
        "proxy-url": "http://proxy.test:3128"}))
    cfg, source = connection.load_connection({"kubeconfig": path})
    assert (cfg.verify_ssl, cfg.tls_server_name, cfg.proxy, cfg.ssl_ca_cert) == (
        False, "api.k8s.test", "http://proxy.test:3128", None)
    assert source.ca.startswith("none: insecure-skip-tls-verify is set")
    cfg, _ = connection.load_connection({"kubeconfig": path, "validate_certs": True, "proxy": "http://other:3128"})
    assert (cfg.verify_ssl, cfg.proxy) == (True, "http://other:3128")


def test_a_cluster_without_a_server_needs_the_host_option(tmp_path):
    path = write(tmp_path / "config", kubeconfig_doc(cluster={"insecure-skip-tls-verify": True}))
    with pytest.raises(ConfigError) as info:
        connection.load_connection({"kubeconfig": path})
    assert (info.value.obj, info.value.message) == (
        f"kubeconfig {path}", f'no API server address: the server of cluster "c1" in kubeconfig {path} names none')
    assert "host" in info.value.fix
    cfg, _ = connection.load_connection({"kubeconfig": path, "host": "https://h:6443"})
    assert cfg.host == "https://h:6443"


def test_a_context_whose_cluster_is_not_defined_is_refused(tmp_path):
    doc = kubeconfig_doc()
    doc["contexts"][0]["context"]["cluster"] = "gone"
    path = write(tmp_path / "config", doc)
    with pytest.raises(ConfigError, match='could not load Kubernetes configuration: .*cluster of context "dev"'):
        connection.load_connection({"kubeconfig": path})


# ----- credentials --------------------------------------------------------------------------------


def test_token_wins_over_token_file_and_basic_auth_is_sent_as_kubectl_sends_it(tmp_path):
    path = write(tmp_path / "config", kubeconfig_doc(user={"token": "t0k", "tokenFile": "/nonexistent"}))
    assert authorization(connection.load_connection({"kubeconfig": path})[0]) == "Bearer t0k"
    path = write(tmp_path / "config", kubeconfig_doc(user={"username": "admin", "password": "pässword"}))
    cfg, source = connection.load_connection({"kubeconfig": path})
    assert authorization(cfg) == "Basic " + b64("admin:pässword".encode())
    assert source.credential_kind == "basic"


def test_a_token_file_is_read_again_when_it_changes(tmp_path):
    token = tmp_path / "token"
    token.write_text("first\n")
    path = write(tmp_path / "config", kubeconfig_doc(user={"tokenFile": str(token)}))
    cfg, source = connection.load_connection({"kubeconfig": path})
    assert source.credential == f'the token file {token} of user "alice" in kubeconfig {path}, context "dev"'
    client = kube.KubeClient(cfg)
    assert client._headers("application/json", None)["Authorization"] == "Bearer first"
    token.write_text("second-and-longer\n")  # a new size: changed even where mtime is coarse
    assert client._headers("application/json", None)["Authorization"] == "Bearer second-and-longer"
    token.unlink()  # mid-rotation: the last token is kept, and the server's answer decides
    assert client._headers("application/json", None)["Authorization"] == "Bearer second-and-longer"


def test_a_token_file_that_cannot_be_read_is_refused_with_its_path(tmp_path):
    path = write(tmp_path / "config", kubeconfig_doc(user={"tokenFile": "missing-token"}))
    with pytest.raises(ConfigError) as info:
        connection.load_connection({"kubeconfig": path})
    assert (info.value.obj, info.value.message) == (
        f"kubeconfig {path}", "could not load Kubernetes configuration: cannot read the tokenFile "
                              f"{tmp_path / 'missing-token'}: No such file or directory")


@pytest.mark.parametrize("user", [{"token": "from-kubeconfig"}, {"tokenFile": "token"}])
def test_the_api_key_option_replaces_the_kubeconfig_token(tmp_path, user):
    (tmp_path / "token").write_text("from-kubeconfig")
    path = write(tmp_path / "config", kubeconfig_doc(user=user))
    cfg, source = connection.load_connection({"kubeconfig": path, "api_key": "from-option"})
    assert authorization(cfg) == "Bearer from-option"
    assert source.credential_kind == "api_key"


# ----- parity with the kubernetes package ----------------------------------------------------------


@pytest.mark.parametrize("user, cluster", [
    ({"token": "t"}, None),
    ({"client-certificate-data": b64(CERT_PEM), "client-key-data": b64(KEY_PEM)},
     {"server": "https://k8s.test:6443/", "certificate-authority-data": b64(CA_PEM), "tls-server-name": "k8s"}),
    ({"username": "u", "password": "p"}, {"server": "https://k8s.test", "insecure-skip-tls-verify": True,
                                          "proxy-url": "http://proxy:3128"}),
    ({"tokenFile": "token"}, {"server": "http://k8s.test:8080"}),
    ({}, None),
])
def test_the_same_settings_as_the_kubernetes_package(tmp_path, user, cluster):
    from kubernetes import client, config

    (tmp_path / "token").write_text("filed")
    path = write(tmp_path / "config", kubeconfig_doc(user=user, cluster=cluster))
    ours, _ = connection.load_connection({"kubeconfig": path})
    theirs = client.Configuration()
    config.load_kube_config(config_file=path, client_configuration=theirs, persist_config=False)

    def settings(cfg):
        files = [Path(name).read_bytes() if name else None for name in (cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file)]
        return (cfg.host, cfg.verify_ssl, cfg.tls_server_name, cfg.proxy, files, authorization(cfg))

    assert settings(ours) == settings(theirs)


@pytest.mark.parametrize("environ, token, ca", [
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, "pod-token", "CA"),
    ({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}, "pod-token", "CA"),
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "pod-token", "CA"),
    ({"KUBERNETES_SERVICE_HOST": "", "KUBERNETES_SERVICE_PORT": "443"}, "pod-token", "CA"),
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, None, "CA"),
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, "", "CA"),
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, "pod-token", None),
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, "pod-token", ""),
])
def test_the_in_cluster_configuration_is_the_kubernetes_packages(tmp_path, environ, token, ca):
    from kubernetes import client
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    token_path, ca_path = tmp_path / "token", tmp_path / "ca.crt"
    for path, content in ((token_path, token), (ca_path, ca)):
        if content == "CA":
            path.write_bytes(CA_PEM)
        elif content is not None:
            path.write_text(content)

    def loaded(load):
        try:
            cfg = load()
        except (ConfigException, plain.ConfigRefused) as err:
            return str(err)
        return cfg.host, cfg.ssl_ca_cert, authorization(cfg).lower()

    def theirs():
        cfg = client.Configuration()
        InClusterConfigLoader(str(token_path), str(ca_path), environ=environ).load_and_set(cfg)
        return cfg

    assert loaded(lambda: plain.in_cluster(environ, str(token_path), str(ca_path))) == loaded(theirs)


def test_the_connection_is_exported_for_helm_as_the_client_connects():
    cfg = plain.ClientConfig()
    cfg.host, cfg.ssl_ca_cert, cfg.proxy, cfg.tls_server_name = "https://k:6443", "ca.pem", "http://proxy:3128", "k8s"
    cfg.cert_file, cfg.key_file = "/c.pem", "/k.pem"
    cfg.api_key["BearerToken"] = "Bearer t0ken"
    exported = plain.export(cfg, impersonate_user="alice", impersonate_groups=["ops"])
    assert exported["current-context"] == plain.EXPORTED_CONTEXT
    assert exported["clusters"][0]["cluster"] == {"server": "https://k:6443", "certificate-authority": os.path.abspath("ca.pem"),
                                                  "tls-server-name": "k8s", "proxy-url": "http://proxy:3128"}
    assert exported["users"][0]["user"] == {"token": "t0ken", "client-certificate": "/c.pem", "client-key": "/k.pem",
                                            "as": "alice", "as-groups": ["ops"]}
    # Basic credentials go back to a user name and password; without verification, no CA (client-go refuses both).
    cfg = plain.ClientConfig()
    cfg.host, cfg.verify_ssl, cfg.ssl_ca_cert = "https://k", False, "ca.pem"
    cfg.api_key["BearerToken"] = "Basic " + base64.b64encode(b"me:p:w").decode()
    exported = plain.export(cfg)
    assert exported["clusters"][0]["cluster"] == {"server": "https://k", "insecure-skip-tls-verify": True}
    assert exported["users"][0]["user"] == {"username": "me", "password": "p:w"}


def test_an_exported_credential_is_the_current_one(tmp_path):
    token = tmp_path / "token"
    token.write_text("first")
    cfg = plain.ClientConfig()
    cfg.host = "https://k"
    plain.TokenFile(str(token)).install(cfg)
    token.write_text("rotated!")
    assert plain.export(cfg)["users"][0]["user"] == {"token": "rotated!"}


def test_the_clients_kubeconfig_carries_its_impersonation():
    cfg = plain.ClientConfig()
    cfg.host = "https://k:6443"
    cfg.api_key["BearerToken"] = "Bearer t"
    client = kube.KubeClient(cfg, impersonate_user="alice", impersonate_groups=["ops", "dev"])
    assert client.kubeconfig()["users"][0]["user"] == {"token": "t", "as": "alice", "as-groups": ["ops", "dev"]}
