"""Plain kubeconfig users and clusters, read without the ``kubernetes`` package.

Importing ``kubernetes.client`` costs a large part of a no-op run's fixed time, and a kubeconfig
whose user has a token, a token file, a client certificate or a user name and password needs
nothing from it: this module turns such a context into a ``ClientConfig``, the few settings
``client.KubeClient`` reads, under the attribute names of ``kubernetes.client.Configuration``.

Users with an ``exec`` plugin or an ``auth-provider`` (OIDC, gcp ...) still go through the
``kubernetes`` package (``needs_kubernetes_package`` says which path a user takes);
``connection.load_connection`` chooses before anything is imported. A pod's service account
(``in_cluster``) is read here too.

What is read follows the kubernetes package's loader, so that a kubeconfig loads the same
either way: ``*-data`` wins over the file it stands for, TLS files are loaded only for an https
server, data is written to private temporary files (mode 0600, removed at exit) because
urllib3 takes certificates as files, and the auth order is token, token file, user name and
password. Two things follow kubectl instead: a relative path is relative to the directory of
the file that holds the entry (the package takes the cluster's file for the user's
certificates too), and a token file is read again when it changes (a projected service
account token is rotated in place).
"""

from __future__ import annotations

import atexit
import base64
import binascii
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from typing import Any

KubeconfigDoc = dict[str, Any]
"""A kubeconfig, or one entry of it (a cluster, a user, a context mapping): YAML a person wrote,
decoded as it is. Not a Kubernetes object: only the keys read here are looked at, each checked."""

ClientSettings = Any
"""What ``client.KubeClient`` connects with: a ``ClientConfig``, or a ``kubernetes.client.Configuration``
(the same attribute names; the package is optional, so it is not named to mypy)."""

# Credentials that need code to produce them: the kubernetes package runs it.
_PLUGIN_KEYS = ("exec", "auth-provider")


class ConfigRefused(Exception):
    """A kubeconfig entry that cannot be loaded; the message says what is wrong, in the words of
    the kubernetes package where it has them (``File does not exist: PATH``)."""


class ClientConfig:
    """The connection settings ``client.KubeClient`` uses, with the names and defaults of
    ``kubernetes.client.Configuration``, so that either can be passed to it.

    ``api_key`` maps ``BearerToken`` (a kubeconfig's credential) or ``authorization`` (the
    api_key option) to the full ``Authorization`` header value; ``refresh_api_key_hook``, when
    set, is called before each request to renew it (a token file that changed).
    """

    def __init__(self) -> None:
        self.host = ""
        self.api_key: dict[str, str] = {}
        self.api_key_prefix: dict[str, str] = {}
        self.ssl_ca_cert: str | None = None
        self.cert_file: str | None = None
        self.key_file: str | None = None
        self.verify_ssl = True
        self.tls_server_name: str | None = None
        self.proxy: str | None = None
        self.no_proxy: str | None = None
        self.proxy_headers = None
        self.refresh_api_key_hook: Callable[[ClientSettings], None] | None = None

    def get_api_key_with_prefix(self, identifier: str, alias: str | None = None) -> str | None:
        """The ``Authorization`` value stored under ``identifier`` (else ``alias``), or None.

        Unlike the kubernetes package, the refresh hook is not called here: ``KubeClient`` calls
        it just before, once per request.
        """
        key = self.api_key.get(identifier, self.api_key.get(alias) if alias is not None else None)
        if not key:
            return None
        prefix = self.api_key_prefix.get(identifier, self.api_key_prefix.get(alias) if alias is not None else None)
        return f"{prefix} {key}" if prefix else key


def needs_kubernetes_package(user: KubeconfigDoc | None) -> bool:
    """Whether the kubeconfig ``user`` (its ``user`` mapping) needs the kubernetes package: it
    has an exec plugin or an auth provider, whose credentials only running code can give."""
    return isinstance(user, dict) and any(key in user for key in _PLUGIN_KEYS)


def load(cluster: KubeconfigDoc | None, user: KubeconfigDoc | None, *, cluster_dir: str = "", user_dir: str = "",
         context_name: str | None = None) -> ClientConfig:
    """The ``ClientConfig`` of one kubeconfig context's ``cluster`` and ``user`` mappings.

    ``cluster_dir`` and ``user_dir`` are the directories relative paths of each are read from
    (the directory of the file that defined it; "" for the current directory, as for a
    kubeconfig given as a mapping).

    Raises:
        ConfigRefused: a missing context cluster, a file that does not exist, data that is not
            base64, a token file that cannot be read.
    """
    if not isinstance(cluster, dict):
        raise ConfigRefused(f'Invalid kube-config file. The cluster of context "{context_name}" is not defined')
    user = user if isinstance(user, dict) else {}
    cfg = ClientConfig()
    _load_credential(cfg, user, user_dir)
    if cluster.get("server"):
        cfg.host = str(cluster["server"]).rstrip("/")
        if cfg.host.startswith("https"):
            cfg.ssl_ca_cert = _as_file(cluster, "certificate-authority", cluster_dir)
            cfg.cert_file = _as_file(user, "client-certificate", user_dir)
            cfg.key_file = _as_file(user, "client-key", user_dir)
    if "insecure-skip-tls-verify" in cluster:
        cfg.verify_ssl = not cluster["insecure-skip-tls-verify"]
    if cluster.get("tls-server-name"):
        cfg.tls_server_name = cluster["tls-server-name"]
    if cluster.get("proxy-url"):
        cfg.proxy = cluster["proxy-url"]
    return cfg


def _load_credential(cfg: ClientConfig, user: KubeconfigDoc, user_dir: str) -> None:
    if "token" in user:  # the data wins over the file, even when empty (as in the kubernetes package)
        if user["token"]:
            cfg.api_key["BearerToken"] = f"Bearer {user['token']}"
        return
    if user.get("tokenFile"):
        TokenFile(_resolve(user_dir, user["tokenFile"])).install(cfg)
        return
    if "username" in user and "password" in user:
        pair = f"{user['username']}:{user['password']}".encode()  # UTF-8, as kubectl sends it
        cfg.api_key["BearerToken"] = "Basic " + base64.b64encode(pair).decode("ascii")


def in_cluster(environ: Mapping[str, str], token_path: str, ca_path: str) -> ClientConfig:
    """The ``ClientConfig`` of a pod's service account, as the kubernetes package's
    ``load_incluster_config`` makes it (same checks, same messages): the server from
    ``KUBERNETES_SERVICE_HOST`` and ``KUBERNETES_SERVICE_PORT``, the token file at ``token_path``
    (read again when the kubelet rotates it) and the CA file at ``ca_path``.

    Raises:
        ConfigRefused: a variable, the token file or the CA file is missing or empty.
    """
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    if host is None or port is None:
        raise ConfigRefused("Service host/port is not set.")
    if not host or not port:
        raise ConfigRefused("Service host/port is set but empty.")
    if not os.path.isfile(token_path):
        raise ConfigRefused("Service token file does not exist.")
    if os.path.getsize(token_path) == 0:
        raise ConfigRefused("Token file exists but empty.")
    if not os.path.isfile(ca_path):
        raise ConfigRefused("Service certification file does not exist.")
    if os.path.getsize(ca_path) == 0:
        raise ConfigRefused("Cert file exists but empty.")
    cfg = ClientConfig()
    cfg.host = f"https://[{host}]:{port}" if ":" in host or "%" in host else f"https://{host}:{port}"
    cfg.ssl_ca_cert = ca_path
    TokenFile(token_path).install(cfg)
    return cfg


class TokenFile:
    """A ``tokenFile``: read now, and read again before a request when its size or modification
    time changed (client-go re-reads it too: a rotated token must not fail a long run)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._stamp: tuple | None = None
        self._lock = threading.Lock()

    def install(self, cfg: ClientConfig) -> None:
        """Put the token into ``cfg`` and have ``cfg`` renew it (raises ``ConfigRefused``)."""
        self.refresh(cfg, strict=True)
        cfg.refresh_api_key_hook = self.refresh

    def refresh(self, cfg: ClientSettings, strict: bool = False) -> None:
        """Read the file again if it changed. After the first read, a file that cannot be read
        keeps the last token: the server's 401, if any, then names the token file."""
        try:
            stat = os.stat(self.path)
            stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
            if stamp == self._stamp:
                return
            with self._lock:
                with open(self.path, encoding="utf-8") as handle:
                    token = handle.read().strip()
                self._stamp = stamp
        except (OSError, UnicodeDecodeError) as err:
            if strict:
                reason = err.strerror if isinstance(err, OSError) else "not text"
                raise ConfigRefused(f"cannot read the tokenFile {self.path}: {reason}") from None
            return
        if token:
            cfg.api_key["BearerToken"] = f"Bearer {token}"
        else:
            cfg.api_key.pop("BearerToken", None)


def _resolve(base_dir: str, path: object) -> str:
    return os.path.abspath(os.path.join(base_dir, os.path.expanduser(str(path))))


def _as_file(entry: KubeconfigDoc, file_key: str, base_dir: str) -> str | None:
    """The path of the file ``entry[file_key]`` names, or of a private copy of the base64
    ``entry[file_key + "-data"]``, which wins when present; None when neither is set."""
    data_key = file_key + "-data"
    if data_key in entry:
        data = entry[data_key]
        if not data:
            return None
        try:
            content = base64.b64decode(data.encode() if isinstance(data, str) else data)
        except (binascii.Error, TypeError, ValueError):
            raise ConfigRefused(f"{data_key} is not base64: give the PEM file's content encoded "
                                "with base64 -w0") from None
        return _private_file(content)
    if not entry.get(file_key):
        return None
    path = _resolve(base_dir, entry[file_key])
    if not os.path.isfile(path):
        raise ConfigRefused(f"File does not exist: {path}")
    return path


_written: dict[bytes, str] = {}
_written_lock = threading.Lock()


def _private_file(content: bytes) -> str:
    """A temporary file holding ``content``, readable by this user only (mkstemp makes it 0600),
    removed when the process exits; the same content is written once."""
    with _written_lock:
        if content in _written and os.path.isfile(_written[content]):
            return _written[content]
        if not _written:
            atexit.register(_remove_written)
        fd, path = tempfile.mkstemp(prefix="applyset-kubeconfig-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        _written[content] = path
        return path


def _remove_written() -> None:
    with _written_lock:
        for path in _written.values():
            try:
                os.remove(path)
            except OSError:
                pass
        _written.clear()


# The one context of a kubeconfig written for another tool (helm): its cluster, user and context.
EXPORTED_CONTEXT = "applyset"


def export(cfg: ClientSettings, *, impersonate_user: str | None = None,
           impersonate_groups: list[str] | None = None) -> KubeconfigDoc:
    """A kubeconfig (a mapping) that connects another tool (helm) as ``cfg`` connects this client:
    the server, TLS settings, the credential as it is now (an exec plugin's or a token file's
    current token, so a plugin is not run twice), impersonation and proxy. It holds the
    credential: write it only to a private file, never show it.

    ``cfg`` is a ``ClientConfig`` or a ``kubernetes.client.Configuration`` (same attribute names)."""
    if cfg.refresh_api_key_hook is not None:
        cfg.refresh_api_key_hook(cfg)
    cluster: KubeconfigDoc = {"server": cfg.host}
    if not cfg.verify_ssl:
        cluster["insecure-skip-tls-verify"] = True  # client-go refuses a CA beside it
    elif cfg.ssl_ca_cert:
        cluster["certificate-authority"] = os.path.abspath(cfg.ssl_ca_cert)
    if getattr(cfg, "tls_server_name", None):
        cluster["tls-server-name"] = cfg.tls_server_name
    if getattr(cfg, "proxy", None):
        cluster["proxy-url"] = cfg.proxy
    user = _exported_credential(cfg.get_api_key_with_prefix("BearerToken", alias="authorization"))
    if cfg.cert_file and cfg.key_file:
        user["client-certificate"] = os.path.abspath(cfg.cert_file)
        user["client-key"] = os.path.abspath(cfg.key_file)
    if impersonate_user:
        user["as"] = impersonate_user
    if impersonate_groups:
        user["as-groups"] = list(impersonate_groups)
    name = EXPORTED_CONTEXT
    return {"apiVersion": "v1", "kind": "Config", "current-context": name,
            "clusters": [{"name": name, "cluster": cluster}], "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}]}


def _exported_credential(authorization: str | None) -> KubeconfigDoc:
    """The kubeconfig user fields of an ``Authorization`` header value (Bearer or Basic)."""
    scheme, _space, value = (authorization or "").partition(" ")
    if scheme.lower() == "bearer" and value:
        return {"token": value}
    if scheme.lower() == "basic" and value:
        try:
            username, _colon, password = base64.b64decode(value).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return {}
        return {"username": username, "password": password}
    return {}
