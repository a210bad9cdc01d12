"""Connection settings and connection errors: each names the server, the source and the fix.

Configuration loading runs on real files in a temporary directory; HTTP errors are stubbed at
the urllib3 boundary. tests/integration/test_connection_errors.py proves the same messages
against the real API server. The doc docs/troubleshooting.md quotes these messages: see
test_every_troubleshooting_message_is_asserted_by_a_test at the end.
"""

import json
import re
import socket
import ssl
from pathlib import Path
from types import SimpleNamespace

import pytest
import urllib3
import yaml
from applyset.kube import connection, client as kube
from applyset.errors import ApiError, AuthenticationFailed, ConfigError, ConnectionFailed, InputError

import tls_material

REPO_ROOT = Path(__file__).resolve().parents[3]


def kubeconfig_doc(user=None, cluster=None, contexts=("dev", "prod"), current="dev"):
    return {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c1", "cluster": cluster or {"server": "https://k8s.test:6443",
                                                          "certificate-authority-data": "Zm9v"}}],
        "users": [{"name": "alice", "user": {"token": "secret-token"} if user is None else user}],
        "contexts": [{"name": name, "context": {"cluster": "c1", "user": "alice"}} for name in contexts],
        **({"current-context": current} if current else {}),
    }


def write(tmp_path, doc, name="config"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return str(path)


@pytest.fixture(autouse=True)
def _no_connection_settings_from_outside(clean_connection_environment):
    """Every test here starts from no kubeconfig, no K8S_AUTH_* and an empty HOME."""


# ----- configuration -----------------------------------------------------------------------------


def test_missing_kubeconfig_file_says_no_such_file_and_names_the_path(tmp_path):
    missing = str(tmp_path / "nope" / "config")
    with pytest.raises(ConfigError) as info:
        connection.load_connection({"kubeconfig": missing})
    text = str(info.value)
    assert f"kubeconfig {missing} (from the kubeconfig option): no such file: {missing}" in text
    assert "Invalid kube-config" not in text
    assert "managed host" in info.value.fix


def test_missing_kubeconfig_from_the_environment_names_the_variable(tmp_path, monkeypatch):
    missing = str(tmp_path / "gone")
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", missing)
    with pytest.raises(ConfigError, match="from the K8S_AUTH_KUBECONFIG environment variable"):
        connection.load_connection({"kubeconfig": missing})
    monkeypatch.setenv("KUBECONFIG", missing)
    with pytest.raises(ConfigError, match=f"from the KUBECONFIG environment variable.*no such file: {missing}"):
        connection.load_connection({})


def test_a_directory_is_not_a_kubeconfig(tmp_path):
    with pytest.raises(ConfigError, match="is a directory, not a kubeconfig file"):
        connection.load_connection({"kubeconfig": str(tmp_path)})


def test_no_configuration_at_all_says_what_was_looked_for():
    with pytest.raises(ConfigError) as info:
        connection.load_connection({})
    assert str(info.value).startswith("no Kubernetes configuration found: ")
    assert ("/.kube/config does not exist, KUBECONFIG is not set, and this is not a pod with a service account"
            in str(info.value))
    assert "host and api_key" in info.value.fix


@pytest.mark.parametrize("content", ["", "# nothing\n", "apiVersion: v1\nkind: Config\n",
                                     "apiVersion: v1\nkind: Config\ncontexts: []\n"])
def test_empty_kubeconfig_is_called_empty(tmp_path, content):
    path = write(tmp_path, content)
    with pytest.raises(ConfigError) as info:
        connection.load_connection({"kubeconfig": path})
    assert f"kubeconfig {path}: the kubeconfig is empty: it defines no contexts" in str(info.value)


def test_unknown_context_lists_the_contexts_that_exist(tmp_path):
    path = write(tmp_path, kubeconfig_doc())
    with pytest.raises(ConfigError) as info:
        connection.load_connection({"kubeconfig": path, "context": "staging"})
    assert 'context "staging" does not exist; the contexts there are "dev", "prod"' in str(info.value)
    assert info.value.details == {"contexts": ["dev", "prod"]}
    assert "set context" in info.value.fix


def test_no_current_context_lists_the_contexts(tmp_path):
    path = write(tmp_path, kubeconfig_doc(current=None))
    with pytest.raises(ConfigError, match='the kubeconfig has no current-context; its contexts are "dev", "prod"'):
        connection.load_connection({"kubeconfig": path})
    path = write(tmp_path, kubeconfig_doc(current="gone"))
    with pytest.raises(ConfigError, match='current-context "gone" does not exist'):
        connection.load_connection({"kubeconfig": path})


def test_not_yaml_is_refused_with_the_path(tmp_path):
    path = write(tmp_path, "clusters: [\n")
    with pytest.raises(ConfigError, match="not a valid kubeconfig"):
        connection.load_connection({"kubeconfig": path})


def test_config_errors_are_input_errors():
    # Input errors are found before the first request; callers that catch InputError keep working.
    assert issubclass(ConfigError, InputError)
    assert issubclass(AuthenticationFailed, ApiError) and issubclass(ConnectionFailed, ApiError)


def test_source_names_kubeconfig_context_user_and_ca(tmp_path):
    path = write(tmp_path, kubeconfig_doc())
    cfg, source = connection.load_connection({"kubeconfig": path, "context": "prod"})
    assert cfg.host == "https://k8s.test:6443"
    where = f'kubeconfig {path}, context "prod"'
    assert source.credential == f'the token of user "alice" in {where}'
    assert source.credential_kind == "token"
    assert source.server == f'the server of cluster "c1" in kubeconfig {path}'
    assert source.ca == f'the certificate-authority-data of cluster "c1" in kubeconfig {path}'


@pytest.mark.parametrize("user, described, kind", [
    ({"client-certificate-data": "Zm9v", "client-key-data": "Zm9v"}, "the client certificate of user",
     "client certificate"),
    ({"exec": {"command": "aws", "apiVersion": "client.authentication.k8s.io/v1beta1"}},
     'the exec plugin "aws" of user', "exec"),
    ({}, "no credentials (user", "none"),
])
def test_source_describes_each_credential_kind(tmp_path, user, described, kind):
    doc = kubeconfig_doc(user=user)
    path = write(tmp_path, doc)
    _, source = connection.load_connection({"kubeconfig": path})
    assert source.credential.startswith(described)
    assert source.credential_kind == kind


def test_options_override_the_kubeconfig_and_say_so(tmp_path, monkeypatch):
    path = write(tmp_path, kubeconfig_doc())
    ca = write(tmp_path, "not read here", name="ca.crt")
    monkeypatch.setenv("K8S_AUTH_API_KEY", "from-env")
    _, source = connection.load_connection({"kubeconfig": path, "api_key": "from-env", "ca_cert": ca})
    assert source.credential == "the bearer token from the K8S_AUTH_API_KEY environment variable"
    assert source.credential_kind == "api_key"
    assert source.ca == f"the CA file {ca} from the ca_cert option"
    _, source = connection.load_connection({"host": "https://h:6443", "api_key": "given", "validate_certs": False})
    assert source.credential == "the bearer token from the api_key option"
    assert source.server == "the host option"
    assert source.ca == "none: validate_certs is false"


def test_kubeconfig_given_as_a_mapping(tmp_path):
    _, source = connection.load_connection({"kubeconfig": kubeconfig_doc()})
    assert source.credential == 'the token of user "alice" in the kubeconfig option (a mapping), context "dev"'
    with pytest.raises(ConfigError, match='context "x" does not exist'):
        connection.load_connection({"kubeconfig": kubeconfig_doc(), "context": "x"})


@pytest.mark.parametrize("given_as", ["file", "mapping"])
def test_a_kubeconfig_the_kubernetes_package_refuses_names_the_kubeconfig(tmp_path, given_as):
    doc = kubeconfig_doc(cluster={"server": "https://k8s.test:6443", "certificate-authority": "/nonexistent/ca.crt"})
    kubeconfig = write(tmp_path, doc) if given_as == "file" else doc
    label = f"kubeconfig {kubeconfig}" if given_as == "file" else "the kubeconfig option (a mapping)"
    with pytest.raises(ConfigError) as info:
        connection.load_connection({"kubeconfig": kubeconfig})
    assert str(info.value).startswith(
        f"{label}: could not load Kubernetes configuration: File does not exist: /nonexistent/ca.crt.")
    assert info.value.fix.startswith("check it with kubectl config view")


def test_in_a_pod_without_a_kubeconfig_the_in_cluster_configuration_is_used(monkeypatch, tmp_path):
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("pod-token")
    ca.write_bytes(tls_material.CERT_PEM)
    monkeypatch.setattr(connection, "IN_CLUSTER_TOKEN", str(token))
    monkeypatch.setattr(connection, "IN_CLUSTER_CA", str(ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    cfg, source = connection.load_connection({})
    assert (cfg.host, cfg.ssl_ca_cert, cfg.verify_ssl) == ("https://10.0.0.1:443", str(ca), True)
    assert kube.KubeClient(cfg)._headers("application/json", None)["Authorization"] == "Bearer pod-token"
    assert source.credential_kind == "in-cluster" and source.ca == str(ca)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    assert connection.load_connection({})[0].host == "https://[fd00::1]:443"

    # The kubernetes package's checks and words (kubernetes.config.load_incluster_config).
    ca.write_text("")
    with pytest.raises(ConfigError) as info:
        connection.load_connection({})
    assert str(info.value).startswith("could not load Kubernetes configuration: Cert file exists but empty.")
    assert info.value.obj is None
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT")
    with pytest.raises(ConfigError, match="Service host/port is not set"):
        connection.load_connection({})


def test_explicit_options_set_the_configuration(tmp_path):
    path = write(tmp_path, kubeconfig_doc())
    cfg, source = connection.load_connection({
        "kubeconfig": path, "host": "https://other:6443", "api_key": "Bearer abc", "ca_cert": "/ca.crt",
        "client_cert": "/c.crt", "client_key": "/c.key", "validate_certs": False, "proxy": "http://proxy:3128",
        "no_proxy": "internal", "context": ""})
    assert (cfg.host, cfg.api_key, cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file, cfg.verify_ssl, cfg.proxy,
            cfg.no_proxy) == ("https://other:6443", {"authorization": "Bearer abc"}, "/ca.crt", "/c.crt", "/c.key",
                              False, "http://proxy:3128", "internal")
    # The bearer token wins over the client certificate as the credential named in errors.
    assert (source.server, source.credential_kind, source.ca) == (
        "the host option", "api_key", "none: validate_certs is false")
    _, source = connection.load_connection({"host": "https://h:6443", "client_cert": "/c.crt", "client_key": "/c.key"})
    assert source.credential == "the client certificate /c.crt from the client_cert option"


# ----- HTTP errors ---------------------------------------------------------------------------------


class Canned:
    """Stands in for urllib3.PoolManager: raises or answers the same way every time."""

    def __init__(self, status=None, payload=None, raises=None):
        self.status, self.payload, self.raises = status, payload, raises
        self.calls = 0

    def request(self, *args, **kwargs):
        self.calls += 1
        if self.raises is not None:
            raise self.raises
        data = json.dumps(self.payload).encode()
        return SimpleNamespace(status=self.status, data=data, headers=urllib3.HTTPHeaderDict())


def client(pool, source):
    cfg = SimpleNamespace(host="https://k8s.test:6443", verify_ssl=True, ssl_ca_cert=None, cert_file=None,
                          key_file=None, proxy=None, no_proxy=None, proxy_headers=None, tls_server_name=None,
                          refresh_api_key_hook=None, get_api_key_with_prefix=lambda *a, **k: "Bearer x")
    c = kube.KubeClient(cfg, parallelism=1, retry_seconds=0.3, source=source)  # one request at a time: exact counts
    c._pool = pool
    return c


UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "Unauthorized",
                "reason": "Unauthorized", "code": 401}


@pytest.mark.parametrize("source, named, fix", [
    (connection.ConnectionSource(credential="the bearer token from the K8S_AUTH_API_KEY environment variable",
                           credential_kind="api_key"),
     "the bearer token from the K8S_AUTH_API_KEY environment variable", "AWX"),
    (connection.ConnectionSource(credential='the token of user "alice" in kubeconfig /k, context "dev"',
                           credential_kind="token", kubeconfig="kubeconfig /k"),
     'the token of user "alice" in kubeconfig /k, context "dev"', "renew the token in kubeconfig /k"),
])
def test_401_names_server_and_credential_source_and_gives_a_fix(source, named, fix):
    c = client(Canned(401, UNAUTHORIZED), source)
    with pytest.raises(AuthenticationFailed) as info:
        c.discover()
    err = info.value
    assert str(err).startswith(f"API server https://k8s.test:6443: {named} was not accepted: it is wrong or has "
                               "expired")
    assert "You must be logged in to the server (Unauthorized)" in str(err)
    assert fix in err.fix
    assert err.status == 401 and err.to_dict()["fix"]
    assert c._pool.calls == 1  # a refused credential is not retried


def test_403_on_discovery_for_anonymous_says_no_credentials_were_accepted():
    forbidden = {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403,
                 "message": 'forbidden: User "system:anonymous" cannot get path "/api"'}
    source = connection.ConnectionSource(credential='no credentials (user "u" in kubeconfig /k has none)')
    with pytest.raises(AuthenticationFailed) as info:
        client(Canned(403, forbidden), source).discover()
    assert "discovery refused (403 Forbidden) to no credentials" in str(info.value)
    assert 'User "system:anonymous"' in str(info.value)
    assert "give credentials" in info.value.fix


def test_403_on_discovery_for_a_known_user_points_at_the_discovery_role():
    forbidden = {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403,
                 "message": 'forbidden: User "bob" cannot get path "/apis"'}
    source = connection.ConnectionSource(credential="the bearer token from the api_key option", credential_kind="api_key")
    with pytest.raises(AuthenticationFailed) as info:
        client(Canned(403, forbidden), source).discover()
    assert "discovery refused (403 Forbidden) to the bearer token from the api_key option" in str(info.value)
    assert "system:discovery" in info.value.fix


def test_401_without_credentials_says_none_were_sent():
    source = connection.ConnectionSource(credential='no credentials (user "u" in kubeconfig /k has none)',
                                   credential_kind="none")
    with pytest.raises(AuthenticationFailed) as info:
        client(Canned(401, UNAUTHORIZED), source).discover()
    assert "the server requires credentials and none were sent" in str(info.value)
    assert info.value.fix.startswith("give credentials")


def test_connection_refused_names_the_server_and_its_source():
    refused = urllib3.exceptions.MaxRetryError(None, "/api", urllib3.exceptions.NewConnectionError(
        None, "Failed to establish a new connection: [Errno 111] Connection refused"))
    refused.reason.__cause__ = ConnectionRefusedError(111, "Connection refused")
    source = connection.ConnectionSource(server='the server of cluster "c1" in kubeconfig /k')
    with pytest.raises(ConnectionFailed) as info:
        client(Canned(raises=refused), source).discover()
    assert str(info.value).startswith("API server https://k8s.test:6443: cannot connect (connection refused, ")
    # Retried until retry_seconds ran out, and the message says so (a 30 s wait is no hang).
    assert re.search(r"\(connection refused, \d+ tries in \d+ s\): ", str(info.value))
    assert 'The address comes from the server of cluster "c1" in kubeconfig /k' in str(info.value)
    assert "cluster is running" in info.value.fix


def test_tls_verification_failure_names_the_ca_source_and_is_not_retried():
    verify = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
                                             "unable to get local issuer certificate")
    failure = urllib3.exceptions.MaxRetryError(None, "/api", urllib3.exceptions.SSLError(verify))
    source = connection.ConnectionSource(ca='the certificate-authority-data of cluster "c1" in kubeconfig /k')
    pool = Canned(raises=failure)
    with pytest.raises(ConnectionFailed) as info:
        client(pool, source).discover()
    assert "TLS verification of the API server's certificate failed" in str(info.value)
    assert 'The CA used: the certificate-authority-data of cluster "c1" in kubeconfig /k' in str(info.value)
    assert "ca_cert" in info.value.fix
    assert pool.calls == 1


def test_unknown_host_name_says_it_does_not_resolve():
    failure = urllib3.exceptions.MaxRetryError(None, "/api", urllib3.exceptions.NameResolutionError(
        "k8s.test", None, socket.gaierror(-2, "Name or service not known")))
    source = connection.ConnectionSource(server="the K8S_AUTH_HOST environment variable")
    with pytest.raises(ConnectionFailed) as info:
        client(Canned(raises=failure), source).discover()
    message = "cannot connect (the host name does not resolve"
    assert str(info.value).startswith(f"API server https://k8s.test:6443: {message}, ")
    assert "The address comes from the K8S_AUTH_HOST environment variable" in str(info.value)


# ----- the troubleshooting guide -------------------------------------------------------------------


def doc_messages():
    """Every message the guide quotes: the ``> `...` `` line under each ``###`` heading."""
    text = (REPO_ROOT / "docs" / "troubleshooting.md").read_text()
    return re.findall(r"^### .*\n+> `([^`]+)`", text, flags=re.M)


def test_every_troubleshooting_message_is_asserted_by_a_test():
    """Each literal part of each quoted message (between ``<placeholders>``) is in a test's source."""
    tests = "".join(path.read_text() for path in (REPO_ROOT / "tests").rglob("test_*.py"))
    messages = doc_messages()
    headings = re.findall(r"^### ", (REPO_ROOT / "docs" / "troubleshooting.md").read_text(), flags=re.M)
    assert len(messages) == len(headings) >= 12  # every heading quotes its message
    missing = []
    for message in messages:
        for fragment in re.split(r"<[^>]+>|\.\.\.", message):
            fragment = fragment.strip(' .:;,"')
            if len(fragment) >= 8 and fragment not in tests:
                missing.append(f"{fragment!r} of {message!r}")
    assert not missing, f"quoted in docs/troubleshooting.md but asserted by no test: {missing}"


def test_names_of_core_events_and_pod_disruption_budgets_are_only_path_segments():
    # As the API server checks them (proven for every served kind in the integration test).
    from applyset.inputs import names

    assert names.name_problem("", "Event", "Web_1.abc") is None
    assert names.name_problem("policy", "PodDisruptionBudget", "Web_PDB") is None
    assert names.name_problem("policy", "PodDisruptionBudget", "a/b") is not None
    assert "DNS-1123 subdomain" in names.name_problem("events.k8s.io", "Event", "Web_1")


def test_kubeconfig_content_given_as_a_path_is_refused_without_echoing_it():
    content = yaml.safe_dump(kubeconfig_doc(user={"token": "secret-token-value"}))
    with pytest.raises(ConfigError) as info:
        connection.load_connection({"kubeconfig": content})
    assert str(info.value).startswith(
        "kubeconfig (from the kubeconfig option): the kubeconfig option holds a kubeconfig's content, not a path")
    assert "secret-token-value" not in str(info.value) and "secret-token-value" not in repr(info.value.to_dict())
    assert "from_yaml" in info.value.fix


def test_a_server_that_never_answered_is_retried_a_few_seconds_not_the_full_wait(monkeypatch):
    class FakeClock:  # the client's sleeps advance it; no real waiting, no timing in the test
        now = 1000.0

        def monotonic(self):
            return self.now

        def sleep(self, seconds):
            self.now += seconds

    clock = FakeClock()
    monkeypatch.setattr(kube, "time", clock)
    refused = urllib3.exceptions.MaxRetryError(None, "/api", urllib3.exceptions.NewConnectionError(
        None, "Failed to establish a new connection: [Errno 111] Connection refused"))
    c = client(Canned(raises=refused), connection.ConnectionSource())
    c.retry_seconds = 60.0
    with pytest.raises(ConnectionFailed):
        c.discover()
    spent = clock.now - 1000.0
    assert 0 < spent <= kube.FIRST_CONTACT_RETRY_SECONDS + 5.0  # the last backoff may overshoot; never 60 s


@pytest.mark.parametrize("option,what", [("ca_cert", "CA certificate"), ("client_cert", "client certificate"),
                                         ("client_key", "client key")])
def test_a_missing_tls_file_option_is_refused_before_connecting_naming_its_source(tmp_path, option, what):
    # (A kubeconfig's missing files are refused while it is read, as the kubernetes package does.)
    files = {name: tmp_path / f"{name}.pem" for name in ("ca_cert", "client_cert", "client_key")}
    for path in files.values():
        path.write_text("x")
    files[option].unlink()
    params = {"host": "https://k8s.test:6443", **{name: str(path) for name, path in files.items()}}
    with pytest.raises(ConfigError) as info:
        kube.connect(params)
    assert f"cannot read the {what} file {files[option]}: no such file" in str(info.value)
    assert "absolute path" in info.value.fix


def test_a_ca_or_client_certificate_that_cannot_be_parsed_is_refused_before_connecting(tmp_path):
    """tls.py: the client parses them once, when it is built, and names the file (kubectl, too,
    refuses them before connecting)."""
    ca, cert, key, garbage = (tmp_path / n for n in ("ca.crt", "me.crt", "me.key", "garbage.pem"))
    ca.write_bytes(tls_material.CERT_PEM)
    cert.write_bytes(tls_material.CERT_PEM)
    key.write_bytes(tls_material.KEY_PEM)
    garbage.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")
    source = connection.ConnectionSource(ca="the ca_cert option", credential="user me in kubeconfig k")

    made = connection.tls_context(source, verify=True, ca_file=str(ca), cert_file=str(cert), key_file=str(key))
    assert made.verify_mode == ssl.CERT_REQUIRED and made.check_hostname
    assert made.sslsocket_class.sessions.get("k8s.test") is None  # nothing to resume yet
    assert connection.tls_context(source, verify=False, ca_file=str(garbage), cert_file=None,
                                  key_file=None).verify_mode == ssl.CERT_NONE  # not verified: the CA is not read

    with pytest.raises(ConfigError) as info:
        connection.tls_context(source, verify=True, ca_file=str(garbage), cert_file=None, key_file=None)
    assert str(info.value).startswith(f"the ca_cert option: cannot use the CA certificate file {garbage}: ")
    with pytest.raises(ConfigError) as info:
        connection.tls_context(source, verify=True, ca_file=str(ca), cert_file=str(cert), key_file=str(garbage))
    assert str(info.value).startswith(f"user me in kubeconfig k: cannot use the client certificate {cert} "
                                      f"with the key {garbage}: ")
