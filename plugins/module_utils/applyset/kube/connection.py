"""Where the connection to the API server comes from: its server, TLS settings and credentials.

``load_connection`` reads the options of ``ansible_support.AUTH_ARG_SPEC`` the way
kubernetes.core does: explicit options over a kubeconfig (given, ``KUBECONFIG``'s files or
``~/.kube/config``, merged and with a context chosen as kubectl does) over a pod's service
account. Plain kubeconfig users (tokens, token files, certificates) are read by ``kubeconfig``;
the official ``kubernetes`` package, slow to import, is used only for exec credential plugins
and auth providers. Each setting's source is kept in a ``ConnectionSource``, so that connection
and credential errors can say where the server, the credential and the CA came from and what
to do (``credential_fix``). Nothing here sends a request.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from . import kubeconfig as plain_kubeconfig
from .kubeconfig import ClientSettings, KubeconfigDoc
from ..errors import ConfigError, InputError

if TYPE_CHECKING:  # imported where a TLS context is made
    import ssl


IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
IN_CLUSTER_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
DEFAULT_KUBECONFIG = "~/.kube/config"

# The environment variables that can stand for an option (ansible_support.AUTH_ENV_VARS); read
# here only to say where a value came from. AWX's "OpenShift or Kubernetes API Bearer Token"
# credential sets K8S_AUTH_HOST, K8S_AUTH_API_KEY and K8S_AUTH_SSL_CA_CERT.
_OPTION_ENV_VARS = {
    "kubeconfig": ("K8S_AUTH_KUBECONFIG",),
    "context": ("K8S_AUTH_CONTEXT",),
    "host": ("K8S_AUTH_HOST",),
    "api_key": ("K8S_AUTH_API_KEY",),
    "ca_cert": ("K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"),
}

# Where the module runs is a frequent surprise: files are looked up there, not on the controller.
# The connection options of ``ansible_support.AUTH_ARG_SPEC`` by name, as the module got them.
AuthOptions = dict[str, Any]
# How the kubernetes package loads a context into a Configuration: ``(its config module, cfg)``.
PackageLoader = Callable[[Any, ClientSettings], None]

_WHERE_FILES_ARE = ("the path is read where the module runs: on the managed host, unless the task has "
                    "delegate_to: localhost or connection: local")


@dataclass(frozen=True)
class ConnectionSource:
    """Where the connection settings came from, in words, for error messages.

    ``server``, ``credential`` and ``ca`` each say which setting was used and where it was
    found (``cluster "prod" in kubeconfig /home/me/.kube/config``, ``the K8S_AUTH_API_KEY
    environment variable``); ``credential_kind`` is ``token``, ``api_key``, ``client
    certificate``, ``exec``, ``auth-provider``, ``basic``, ``in-cluster`` or ``none``;
    ``kubeconfig`` and ``context`` name the kubeconfig read and its context, if one was.
    """

    server: str = "the configuration"
    credential: str = "the configured credential"
    credential_kind: str = "unknown"
    ca: str = "the configured CA"
    kubeconfig: str | None = None
    context: str | None = None


def _option_source(name: str, value: object) -> str:
    for var in _OPTION_ENV_VARS.get(name, ()):
        env = os.environ.get(var)
        if env and (env == value or os.path.expanduser(os.path.expandvars(env)) == value):
            return f"the {var} environment variable"
    return f"the {name} option"


def _kubeconfig_files(kubeconfig: object) -> tuple[list[str], str]:
    """The kubeconfig files to read, as kubectl chooses them, and how they were chosen."""
    if kubeconfig:
        origin = _option_source("kubeconfig", kubeconfig)
        if "\n" in str(kubeconfig) or str(kubeconfig).lstrip().startswith(("{", "apiVersion:", "clusters:")):
            # Never echoed: the text is a kubeconfig's content, credentials included.
            raise ConfigError(
                "the kubeconfig option holds a kubeconfig's content, not a path",
                obj=f"kubeconfig (from {origin})",
                fix="give the path of the file, or the content as a mapping: "
                    "kubeconfig: \"{{ lookup('file', 'PATH') | from_yaml }}\"")
        paths = str(kubeconfig).split(os.pathsep)
    elif os.environ.get("KUBECONFIG"):
        origin = "the KUBECONFIG environment variable"
        paths = os.environ["KUBECONFIG"].split(os.pathsep)
    else:
        origin = "the default location"
        paths = [DEFAULT_KUBECONFIG]
    return [os.path.expanduser(path) for path in paths if path], origin


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(IN_CLUSTER_TOKEN)


def _read_kubeconfigs(paths: list[str]) -> KubeconfigDoc:
    """The files merged as kubectl merges them: the first of each name wins, and the first
    current-context. ``origins`` maps each ``(section, name)`` kept to the file it came from."""
    import yaml  # a dependency of the kubernetes package

    merged: KubeconfigDoc = {"clusters": [], "contexts": [], "users": []}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                doc = yaml.safe_load(handle)
        except OSError as err:
            raise ConfigError(f"cannot read the file: {err.strerror}", obj=f"kubeconfig {path}",
                              fix="check the path and the file's permissions") from None
        except (yaml.YAMLError, UnicodeDecodeError) as err:
            raise ConfigError(f"not a valid kubeconfig (YAML): {err}", obj=f"kubeconfig {path}",
                              fix=f"check it with: kubectl --kubeconfig {path} config view") from None
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ConfigError("not a kubeconfig: the file holds no mapping", obj=f"kubeconfig {path}",
                              fix=f"check it with: kubectl --kubeconfig {path} config view")
        _merge_kubeconfig(merged, doc, path)
    return merged


def _merge_kubeconfig(merged: KubeconfigDoc, doc: KubeconfigDoc, path: str | None = None) -> None:
    origins = merged.setdefault("origins", {})
    for section in ("clusters", "contexts", "users"):
        known = {entry.get("name") for entry in merged[section]}
        for entry in doc.get(section) or []:
            if isinstance(entry, dict) and entry.get("name") not in known:
                merged[section].append(entry)
                known.add(entry.get("name"))
                if path:
                    origins[(section, entry.get("name"))] = path
    if doc.get("current-context") and not merged.get("current-context"):
        merged["current-context"] = doc["current-context"]


def _named(doc: KubeconfigDoc, section: str, name: object) -> KubeconfigDoc | None:
    for entry in doc.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return None


def _choose_context(doc: KubeconfigDoc, context: str | None, label: str) -> KubeconfigDoc:
    """The context entry to use; ``ConfigError`` names the ones that exist when it is missing."""
    names = [entry.get("name") for entry in doc.get("contexts") or [] if isinstance(entry, dict)]
    listed = ", ".join(f'"{name}"' for name in names)
    if not names:
        raise ConfigError(
            "the kubeconfig is empty: it defines no contexts (kubectl says: no configuration has been provided)",
            obj=label,
            fix="point kubeconfig (or K8S_AUTH_KUBECONFIG, KUBECONFIG) at the cluster's kubeconfig; "
                "kubectl --kubeconfig FILE config get-contexts lists a file's contexts")
    if context:
        if context not in names:
            raise ConfigError(f'context "{context}" does not exist; the contexts there are {listed}', obj=label,
                              fix="set context (or K8S_AUTH_CONTEXT) to one of them",
                              details={"contexts": names})
        return _named(doc, "contexts", context) or {}
    current = doc.get("current-context")
    if not current:
        raise ConfigError(f"the kubeconfig has no current-context; its contexts are {listed}", obj=label,
                          fix="set context (or K8S_AUTH_CONTEXT) to one of them, or run kubectl config use-context",
                          details={"contexts": names})
    if current not in names:
        raise ConfigError(f'current-context "{current}" does not exist; the contexts there are {listed}',
                          obj=label, fix="set context (or K8S_AUTH_CONTEXT) to one of them, or run "
                                         "kubectl config use-context", details={"contexts": names})
    return _named(doc, "contexts", current) or {}


def _describe_kubeconfig(doc: KubeconfigDoc, context_entry: KubeconfigDoc, label: str) -> ConnectionSource:
    context_name = context_entry.get("name")
    ctx = context_entry.get("context") or {}
    where = f'{label}, context "{context_name}"'
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    cluster = (_named(doc, "clusters", cluster_name) or {}).get("cluster") or {}
    user = (_named(doc, "users", user_name) or {}).get("user") or {}
    of_user = f'user "{user_name}" in {where}'
    if user.get("token"):
        credential, kind = f"the token of {of_user}", "token"
    elif user.get("tokenFile"):
        credential, kind = f"the token file {user['tokenFile']} of {of_user}", "token"
    elif user.get("client-certificate") or user.get("client-certificate-data"):
        credential, kind = f"the client certificate of {of_user}", "client certificate"
    elif isinstance(user.get("exec"), dict):
        credential, kind = f'the exec plugin "{user["exec"].get("command")}" of {of_user}', "exec"
    elif isinstance(user.get("auth-provider"), dict):
        credential, kind = f'the auth provider "{user["auth-provider"].get("name")}" of {of_user}', "auth-provider"
    elif user.get("username"):
        credential, kind = f"the user name and password of {of_user}", "basic"
    else:
        credential, kind = f"no credentials ({of_user} has none)", "none"
    of_cluster = f'cluster "{cluster_name}" in {label}'
    if cluster.get("insecure-skip-tls-verify"):
        ca = f"none: insecure-skip-tls-verify is set for {of_cluster}"
    elif cluster.get("certificate-authority-data"):
        ca = f"the certificate-authority-data of {of_cluster}"
    elif cluster.get("certificate-authority"):
        ca = f"the certificate-authority file {cluster['certificate-authority']} of {of_cluster}"
    else:
        ca = f"the system's trusted CAs ({of_cluster} names no certificate-authority)"
    return ConnectionSource(server=f"the server of {of_cluster}", credential=credential, credential_kind=kind,
                            ca=ca, kubeconfig=label, context=context_name)


def load_connection(auth: AuthOptions | None) -> tuple[ClientSettings, ConnectionSource]:
    """Build the client configuration from kubernetes.core-style options, and say where it came from.

    Precedence follows kubernetes.core: explicit options win; a kubeconfig (given, or the
    default one) is loaded unless only ``host`` and credentials are given; in-cluster
    configuration is the last resort.

    Args:
        auth: the options of ``ansible_support.AUTH_ARG_SPEC`` by name (``kubeconfig`` a path, a
            ``os.pathsep``-separated list of paths or a mapping; ``context``, ``host``, ``api_key``,
            ``ca_cert``, ``client_cert``, ``client_key``, ``validate_certs``, ``proxy``,
            ``no_proxy``); None and "" count as not given.

    Returns:
        ``(config, ConnectionSource)``: ``config`` is a ``kubeconfig.ClientConfig``, or a
        ``kubernetes.client.Configuration`` for a user with an exec plugin or an auth provider
        (the same attribute names; the package is imported only then).

    Raises:
        InputError: the ``kubernetes`` package is missing and the configuration needs it.
        ConfigError: a missing or unreadable kubeconfig, one without contexts, an unknown context,
            one that cannot be loaded (a certificate file that does not exist, say), or no server
            at all; the message names the file and what to do.
    """
    auth = {k: v for k, v in (auth or {}).items() if v is not None and v != ""}
    cfg, source = _load_base_configuration(auth)
    _set_explicit_options(cfg, auth)
    if not cfg.host:
        raise ConfigError(f"no API server address: {source.server} names none", obj=source.kubeconfig,
                          fix="add server: https://HOST:PORT to the kubeconfig's cluster, or give host "
                              "(K8S_AUTH_HOST)")
    return cfg, _with_explicit_options(source, auth)


def _kubernetes_client() -> tuple[Any, Any]:
    """The ``kubernetes`` package's ``client`` and ``config`` modules, imported only when needed."""
    try:
        import kubernetes  # noqa: F401  (imported lazily: unit tests of pure code do not need it)
        from kubernetes import client, config
    except ImportError as err:
        raise InputError(
            "the Python package 'kubernetes' is required",
            fix="pip install kubernetes (see requirements.txt)",
        ) from err
    return client, config


def _load_base_configuration(auth: AuthOptions) -> tuple[ClientSettings, ConnectionSource]:
    """What the explicit options start from, and its source: a kubeconfig mapping, kubeconfig
    files, the in-cluster configuration, or nothing when only ``host`` and credentials are given."""
    kubeconfig, context = auth.get("kubeconfig"), auth.get("context")
    if isinstance(kubeconfig, dict):
        return _load_kubeconfig_mapping(kubeconfig, context)
    if kubeconfig or context or not auth.get("host"):
        return _load_kubeconfig_files(kubeconfig, context)
    return plain_kubeconfig.ClientConfig(), ConnectionSource(
        server="the host option", credential="no credentials", credential_kind="none", ca="the system's trusted CAs")


def _load_kubeconfig_mapping(kubeconfig: KubeconfigDoc, context: str | None) -> tuple[ClientSettings, ConnectionSource]:
    label = "the kubeconfig option (a mapping)"
    doc = _read_kubeconfig_dict(kubeconfig)
    context_entry = _choose_context(doc, context, label)

    def with_package(config: Any, cfg: ClientSettings) -> None:
        config.load_kube_config_from_dict(kubeconfig, context=context_entry.get("name"), client_configuration=cfg)

    cfg = _load_context(doc, context_entry, label, with_package)
    return cfg, _describe_kubeconfig(doc, context_entry, label)


def _load_kubeconfig_files(kubeconfig: object, context: str | None) -> tuple[ClientSettings, ConnectionSource]:
    """The kubeconfig files kubectl would read; in a pod without any of them, the in-cluster configuration."""
    paths, origin = _kubeconfig_files(kubeconfig)
    existing = [path for path in paths if os.path.isfile(path)]
    if not existing and not kubeconfig and not context and _in_cluster():
        with _refused_configuration(None):
            cfg = plain_kubeconfig.in_cluster(os.environ, IN_CLUSTER_TOKEN, IN_CLUSTER_CA)
        return cfg, ConnectionSource(
            server="the in-cluster configuration (KUBERNETES_SERVICE_HOST)",
            credential=f"the pod's service account token ({IN_CLUSTER_TOKEN})",
            credential_kind="in-cluster", ca=IN_CLUSTER_CA)
    if not existing:
        raise _no_kubeconfig(paths, origin)
    label = "kubeconfig " + os.pathsep.join(existing)
    doc = _read_kubeconfigs(existing)
    context_entry = _choose_context(doc, context, label)

    def with_package(config: Any, cfg: ClientSettings) -> None:
        # The context chosen above, by name: the package would take the last file's current-context.
        config.load_kube_config(config_file=os.pathsep.join(existing), context=context_entry.get("name"),
                                client_configuration=cfg, persist_config=False)

    cfg = _load_context(doc, context_entry, label, with_package)
    return cfg, _describe_kubeconfig(doc, context_entry, label)


def _load_context(doc: KubeconfigDoc, context_entry: KubeconfigDoc, label: str,
                  with_package: PackageLoader) -> ClientSettings:
    """The client configuration of ``context_entry``: read here for a plain user, by the kubernetes
    package (``with_package(config, cfg)``) for a user with an exec plugin or an auth provider."""
    ctx = context_entry.get("context") or {}
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    user = (_named(doc, "users", user_name) or {}).get("user")
    if plain_kubeconfig.needs_kubernetes_package(user):
        client, config = _kubernetes_client()
        cfg = client.Configuration()
        with _refused_configuration(label, config):
            with_package(config, cfg)
        return cfg
    cluster = (_named(doc, "clusters", cluster_name) or {}).get("cluster")
    origins = doc.get("origins") or {}

    def directory(section: str, name: object) -> str:
        path = origins.get((section, name))
        return os.path.abspath(os.path.dirname(path)) if path else ""

    with _refused_configuration(label):
        return plain_kubeconfig.load(cluster, user, cluster_dir=directory("clusters", cluster_name),
                                     user_dir=directory("users", user_name), context_name=context_entry.get("name"))


@contextmanager
def _refused_configuration(label: str | None, config: Any = None) -> Iterator[None]:
    """Turn a refusal of a configuration (ours, or the kubernetes package's ``config``) into a
    ``ConfigError`` about ``label``."""
    refusals: Any = (plain_kubeconfig.ConfigRefused, config.ConfigException) if config else plain_kubeconfig.ConfigRefused
    try:
        yield
    except refusals as err:
        raise ConfigError(
            f"could not load Kubernetes configuration: {err}",
            obj=label,
            fix="check it with kubectl config view; or give host and api_key (K8S_AUTH_HOST, K8S_AUTH_API_KEY)",
        ) from None
    except OSError as err:
        raise ConfigError(f"could not read the kubeconfig: {err}", obj=label,
                          fix="check the kubeconfig path and permissions") from None


def _set_explicit_options(cfg: ClientSettings, auth: AuthOptions) -> None:
    """The options given explicitly override what the kubeconfig set."""
    if auth.get("host"):
        cfg.host = auth["host"]
    if auth.get("api_key"):
        key = auth["api_key"]
        cfg.api_key = {"authorization": key if key.lower().startswith("bearer ") else f"Bearer {key}"}
        # The kubeconfig's credential is replaced, not refreshed: its hook would put it back.
        cfg.refresh_api_key_hook = None
    if auth.get("ca_cert"):
        cfg.ssl_ca_cert = auth["ca_cert"]
    if auth.get("client_cert"):
        cfg.cert_file = auth["client_cert"]
    if auth.get("client_key"):
        cfg.key_file = auth["client_key"]
    if "validate_certs" in auth:
        cfg.verify_ssl = bool(auth["validate_certs"])
    if auth.get("proxy"):
        cfg.proxy = auth["proxy"]
    if auth.get("no_proxy"):
        cfg.no_proxy = auth["no_proxy"]


def _with_explicit_options(source: ConnectionSource, auth: AuthOptions) -> ConnectionSource:
    """``source`` with the server, credential and CA that explicit options replaced, for error messages."""
    if auth.get("host"):
        source = replace(source, server=_option_source("host", auth["host"]))
    if auth.get("api_key"):
        source = replace(source, credential=f"the bearer token from {_option_source('api_key', auth['api_key'])}",
                         credential_kind="api_key")
    if auth.get("ca_cert"):
        source = replace(source, ca=f"the CA file {auth['ca_cert']} from {_option_source('ca_cert', auth['ca_cert'])}")
    if auth.get("client_cert") and not auth.get("api_key"):
        source = replace(source, credential=f"the client certificate {auth['client_cert']} from the "
                                            "client_cert option", credential_kind="client certificate")
    if "validate_certs" in auth and not bool(auth["validate_certs"]):
        source = replace(source, ca="none: validate_certs is false")
    return source


def _read_kubeconfig_dict(doc: KubeconfigDoc) -> KubeconfigDoc:
    merged: KubeconfigDoc = {"clusters": [], "contexts": [], "users": []}
    _merge_kubeconfig(merged, doc)
    return merged


def _no_kubeconfig(paths: list[str], origin: str) -> ConfigError:
    shown = os.pathsep.join(paths)
    if origin == "the default location":
        return ConfigError(
            f"no Kubernetes configuration found: {shown} does not exist, KUBECONFIG is not set, and this "
            "is not a pod with a service account",
            fix="give kubeconfig (or K8S_AUTH_KUBECONFIG), or host and api_key (K8S_AUTH_HOST, "
                f"K8S_AUTH_API_KEY); {_WHERE_FILES_ARE}")
    directories = [path for path in paths if os.path.isdir(path)]
    if directories:
        return ConfigError(f"{', '.join(directories)} is a directory, not a kubeconfig file",
                           obj=f"kubeconfig {shown} (from {origin})", fix="give the path of the kubeconfig file")
    return ConfigError(f"no such file: {shown}", obj=f"kubeconfig {shown} (from {origin})",
                       fix=f"check the path; {_WHERE_FILES_ARE}")


# ----- checks and advice for the client ---------------------------------------------------


def check_tls_files(cfg: ClientSettings, source: ConnectionSource) -> None:
    """Refuse a CA, client certificate or key file that is not there, naming where it was set.

    urllib3 would only find out at the first request, as a connection error that is retried
    and then blamed on the server being unreachable (kubectl refuses it before connecting too).
    """
    files = [(cfg.cert_file, "client certificate", source.credential),
             (cfg.key_file, "client key", f"the client key {cfg.key_file} from {_option_source('client_key', cfg.key_file)}")]
    if cfg.verify_ssl:
        files.insert(0, (cfg.ssl_ca_cert, "CA certificate", source.ca))
    for path, what, where in files:
        if path and not os.path.isfile(path):
            raise ConfigError(f"cannot read the {what} file {path}: no such file", obj=where,
                              fix=f"give the path of an existing {what} file (an absolute path: modules run "
                              "in the playbook's directory)")


def tls_context(source: ConnectionSource, *, verify: bool, ca_file: str | None, cert_file: str | None,
                key_file: str | None) -> ssl.SSLContext:
    """The client's one TLS context (tls.context), or a ConfigError naming the file that cannot be
    used: kubectl, too, refuses a CA or client certificate it cannot parse before connecting."""
    import ssl  # pylint: disable=import-outside-toplevel

    from . import tls  # pylint: disable=import-outside-toplevel

    try:
        made = tls.context(verify=verify, ca_file=ca_file)
    except (ssl.SSLError, OSError, ValueError) as err:
        raise ConfigError(f"cannot use the CA certificate file {ca_file}: {_reason(err)}", obj=source.ca,
                          fix="give a PEM file of the CA that signed the server's certificate") from None
    if not cert_file:
        return made
    try:
        made.load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, OSError, ValueError) as err:
        raise ConfigError(f"cannot use the client certificate {cert_file} with the key {key_file}: {_reason(err)}",
                          obj=source.credential,
                          fix="give a PEM client certificate and the PEM private key that belongs to it "
                              "(not encrypted)") from None
    return made


def _reason(err: BaseException) -> str:
    return getattr(err, "strerror", None) or getattr(err, "reason", None) or str(err) or type(err).__name__


def bypasses_proxy(host: str, no_proxy: str | None) -> bool:
    """Whether the server URL ``host`` is reached directly: its host name is, or ends with, an entry
    of the comma-separated ``no_proxy`` list (or the list holds ``*``)."""
    if not no_proxy:
        return False
    hostname = urllib.parse.urlparse(host).hostname or ""
    for entry in no_proxy.split(","):
        entry = entry.strip().lstrip(".")
        if entry and (hostname == entry or hostname.endswith("." + entry) or entry == "*"):
            return True
    return False


def credential_fix(src: ConnectionSource) -> str:
    """What to do when the server refused the credential ``src`` names (by its ``credential_kind``)."""
    kind = src.credential_kind
    if kind == "api_key":
        return ("get a new token and pass it in api_key or K8S_AUTH_API_KEY (in AWX: update the bearer token of "
                "the job template's Kubernetes credential; an expired token is the usual cause of a scheduled "
                "job failing here); kubectl create token SERVICEACCOUNT makes one")
    if kind == "token":
        return (f"renew the token in {src.kubeconfig} (log in again, or kubectl create token SERVICEACCOUNT), "
                "or pass a valid one in api_key")
    if kind in ("exec", "auth-provider"):
        return "log in again with the tool the kubeconfig's user runs, then retry; kubectl get ns shows the same error"
    if kind == "client certificate":
        return "the client certificate is not valid for this cluster (expired, or signed by another CA): get a new one"
    if kind == "in-cluster":
        return "the pod's service account token was refused: check that the service account still exists"
    if kind == "none":
        return "give credentials: a kubeconfig user with a token or client certificate, or api_key (K8S_AUTH_API_KEY)"
    return "check the credentials"
