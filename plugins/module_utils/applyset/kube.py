"""The only place that speaks HTTP to the Kubernetes API server.

The official ``kubernetes`` package is used for what it does well, loading
kubeconfig files, in-cluster config and credential plugins; requests go out
through one urllib3 pool, so that the engine controls exactly which requests
are sent: one server-side apply PATCH per object, metadata-only paginated
LISTs, DELETEs with preconditions, and nothing else.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .errors import ApiError, ConflictError, InputError
from .spec import COLLECTION_VERSION, TOOL_NAME, GroupKind

APPLY_PATCH = "application/apply-patch+yaml"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
AGGREGATED_DISCOVERY = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_ATTEMPTS_ON_500 = 3
USER_AGENT = f"{TOOL_NAME}/{COLLECTION_VERSION}"


# ----- configuration ----------------------------------------------------------------------


def load_configuration(auth: dict):
    """Build a ``kubernetes.client.Configuration`` from kubernetes.core-style options.

    Precedence follows kubernetes.core: explicit options win; a kubeconfig (given,
    or the default one) is loaded unless only ``host`` and credentials are given;
    in-cluster configuration is the last resort.
    """
    try:
        import kubernetes  # noqa: F401  (imported lazily: unit tests of pure code do not need it)
        from kubernetes import client, config
    except ImportError as err:
        raise InputError(
            "the Python package 'kubernetes' is required",
            fix="pip install kubernetes (see requirements.txt)",
        ) from err

    auth = {k: v for k, v in (auth or {}).items() if v is not None}
    cfg = client.Configuration()
    kubeconfig = auth.get("kubeconfig")
    context = auth.get("context")
    try:
        if isinstance(kubeconfig, dict):
            config.load_kube_config_from_dict(kubeconfig, context=context, client_configuration=cfg)
        elif kubeconfig or context or not auth.get("host"):
            path = os.path.expanduser(kubeconfig) if kubeconfig else None
            default = os.path.expanduser(os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0])
            if path or os.path.exists(default):
                config.load_kube_config(config_file=path, context=context, client_configuration=cfg,
                                        persist_config=False)
            else:
                config.load_incluster_config(client_configuration=cfg)
    except config.ConfigException as err:
        raise InputError(
            f"could not load Kubernetes configuration: {err}",
            obj=f"kubeconfig {kubeconfig}" if isinstance(kubeconfig, str) else None,
            fix="pass kubeconfig/context, set KUBECONFIG, or give host and api_key (K8S_AUTH_HOST, K8S_AUTH_API_KEY)",
        ) from None
    except OSError as err:
        raise InputError(f"could not read the kubeconfig: {err}", fix="check the kubeconfig path") from None

    if auth.get("host"):
        cfg.host = auth["host"]
    if auth.get("api_key"):
        key = auth["api_key"]
        cfg.api_key = {"authorization": key if key.lower().startswith("bearer ") else f"Bearer {key}"}
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
    return cfg


# ----- API resources --------------------------------------------------------------------


@dataclass(frozen=True)
class Resource:
    """One API resource as discovery describes it (preferred version)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: frozenset = frozenset()
    singular: str = ""
    short_names: tuple = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(self.group, self.kind)

    def parent_ref(self, name: str) -> str:
        """kubectl's reference to an ApplySet parent, as in its messages: ``secrets./shop``."""
        return f"{self.plural}.{self.group}/{name}"

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{urllib.parse.quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{urllib.parse.quote(name, safe='')}"
        return base


class Discovery:
    """What the server serves, from one discovery pass per run."""

    def __init__(self, resources: list[Resource]):
        self.resources = resources
        self._by_gvk: dict[tuple[str, str, str], Resource] = {}
        self._by_gk: dict[GroupKind, Resource] = {}
        self._by_name: dict[tuple[str, str], Resource] = {}
        for res in resources:  # first seen = preferred version
            self._by_gvk.setdefault((res.group, res.version, res.kind), res)
            self._by_gk.setdefault(res.group_kind, res)
            for name in (res.plural, res.singular, res.kind.lower(), *res.short_names):
                if name:
                    self._by_name.setdefault((res.group, name.lower()), res)

    def add(self, res: Resource) -> None:
        """Record a resource learned during the run (a CRD created by this run)."""
        self.resources.append(res)
        self._by_gvk[(res.group, res.version, res.kind)] = res
        self._by_gk.setdefault(res.group_kind, res)
        for name in (res.plural, res.singular, res.kind.lower()):
            if name:
                self._by_name.setdefault((res.group, name.lower()), res)

    def for_gvk(self, group: str, version: str, kind: str) -> Resource | None:
        return self._by_gvk.get((group, version, kind))

    def for_group_kind(self, gk: GroupKind) -> Resource | None:
        return self._by_gk.get(gk)

    def with_kind(self, kind: str) -> list[Resource]:
        """Every group that serves a kind of this name (to suggest the right apiVersion)."""
        return [res for gk, res in self._by_gk.items() if gk.kind == kind]

    def for_resource(self, group: str, name: str) -> Resource | None:
        """Look up ``secrets``, ``secret`` or a short name, like kubectl's RESTMapper."""
        return self._by_name.get((group, name.lower()))


def _resources_from_aggregated(groups: list[dict]) -> list[Resource]:
    found = []
    for group_doc in groups:
        group = group_doc.get("metadata", {}).get("name", "")
        for version_doc in group_doc.get("versions", []):  # in preference order
            if version_doc.get("freshness") == "Stale":
                continue
            version = version_doc["version"]
            for res in version_doc.get("resources", []):
                kind_ref = res.get("responseKind") or {}
                kind = kind_ref.get("kind")
                if not kind:
                    continue
                found.append(
                    Resource(
                        group=group,
                        version=version,
                        kind=kind,
                        plural=res["resource"],
                        namespaced=res.get("scope") == "Namespaced",
                        verbs=frozenset(res.get("verbs", [])),
                        singular=res.get("singularResource", ""),
                        short_names=tuple(res.get("shortNames", [])),
                    )
                )
    return found


def _resources_from_legacy(group: str, version: str, doc: dict) -> list[Resource]:
    return [
        Resource(
            group=group,
            version=version,
            kind=res["kind"],
            plural=res["name"],
            namespaced=bool(res.get("namespaced")),
            verbs=frozenset(res.get("verbs", [])),
            singular=res.get("singularName", ""),
            short_names=tuple(res.get("shortNames", [])),
        )
        for res in doc.get("resources", [])
        if "/" not in res["name"]  # subresources are not objects
    ]


# ----- the client -------------------------------------------------------------------------


class AdaptiveLimit:
    """How many requests may be in flight: halves when the server pushes back (429,
    503), grows back by one after each run of successes, never above ``ceiling``."""

    def __init__(self, ceiling: int):
        self.ceiling = max(1, ceiling)
        self.limit = self.ceiling
        self._in_flight = 0
        self._successes = 0
        self._cond = threading.Condition()

    def __enter__(self):
        with self._cond:
            while self._in_flight >= self.limit:
                self._cond.wait()
            self._in_flight += 1
        return self

    def __exit__(self, *exc):
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    def pushed_back(self) -> None:
        with self._cond:
            self.limit = max(1, self.limit // 2)
            self._successes = 0

    def succeeded(self) -> None:
        with self._cond:
            self._successes += 1
            if self.limit < self.ceiling and self._successes >= self.limit:
                self.limit += 1
                self._successes = 0
                self._cond.notify_all()


@dataclass
class Response:
    status: int
    body: object
    warnings: list[str]


def _parse_warnings(values: list[str]) -> list[str]:
    """Turn ``299 - "message"`` headers into plain messages."""
    messages = []
    for value in values:
        parts = value.split(" ", 2)
        text = parts[2] if len(parts) == 3 else value
        if text.startswith('"') and text.endswith('"'):
            text = text[1:-1].replace('\\"', '"')
        messages.append(text)
    return messages


class KubeClient:
    """A thread-safe client over one urllib3 connection pool.

    ``parallelism`` bounds both the pool and the worker threads of ``map``.
    Idempotent requests (GET, server-side apply, DELETE with a UID
    precondition) are retried on 429, 5xx and connection errors with jittered
    exponential backoff that honours Retry-After, for at most ``retry_seconds``.
    """

    def __init__(self, cfg, parallelism: int = 8, retry_seconds: float = 30.0, timeout: float = 60.0,
                 impersonate_user: str | None = None, impersonate_groups: list[str] | None = None):
        import urllib3

        self._urllib3 = urllib3
        self.cfg = cfg
        self.host = cfg.host.rstrip("/")
        self.parallelism = max(1, int(parallelism))
        self.retry_seconds = retry_seconds
        self.timeout = urllib3.Timeout(connect=10.0, read=timeout)
        self.requests_sent = 0
        self._count_lock = threading.Lock()
        self.flow = AdaptiveLimit(self.parallelism)
        pool_args = {
            "num_pools": 4,
            "maxsize": self.parallelism + 2,
            "block": True,
            "retries": False,
            "cert_reqs": "CERT_REQUIRED" if cfg.verify_ssl else "CERT_NONE",
            "ca_certs": cfg.ssl_ca_cert,
            "cert_file": cfg.cert_file,
            "key_file": cfg.key_file,
        }
        if getattr(cfg, "tls_server_name", None):
            pool_args["server_hostname"] = cfg.tls_server_name
        if not cfg.verify_ssl:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        if cfg.proxy and not _bypasses_proxy(self.host, cfg.no_proxy):
            self._pool = urllib3.ProxyManager(cfg.proxy, proxy_headers=cfg.proxy_headers, **pool_args)
        else:
            self._pool = urllib3.PoolManager(**pool_args)
        self._static_headers = urllib3.HTTPHeaderDict({"User-Agent": USER_AGENT})
        if impersonate_user:
            self._static_headers["Impersonate-User"] = impersonate_user
        for group in impersonate_groups or []:
            self._static_headers.add("Impersonate-Group", group)

    # -- plumbing --------------------------------------------------------------------------
    def _headers(self, accept: str, content_type: str | None):
        headers = self._urllib3.HTTPHeaderDict(self._static_headers)
        headers["Accept"] = accept
        if content_type:
            headers["Content-Type"] = content_type
        if self.cfg.refresh_api_key_hook is not None:
            # Exec plugins and token files refresh short-lived credentials here.
            self.cfg.refresh_api_key_hook(self.cfg)
        token = self.cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
        if token:
            headers["Authorization"] = token
        return headers

    def request(self, method: str, path: str, *, query: dict | None = None, body=None,
                content_type: str | None = None, accept: str = "application/json",
                retry: bool | None = None) -> Response:
        """Send one request; HTTP errors become ``ApiError`` (``ConflictError`` for 409)."""
        url = self.host + path
        if query:
            url += "?" + urllib.parse.urlencode(query, doseq=True)
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body, separators=(",", ":"))
            content_type = content_type or "application/json"
        headers = self._headers(accept, content_type)
        retry = (method == "GET") if retry is None else retry
        deadline = time.monotonic() + self.retry_seconds
        attempt = 0
        while True:
            attempt += 1
            try:
                with self.flow:
                    resp = self._pool.request(method, url, body=data, headers=headers, timeout=self.timeout,
                                              preload_content=True)
            except self._urllib3.exceptions.HTTPError as err:
                if retry and time.monotonic() < deadline:
                    time.sleep(_backoff(attempt))
                    continue
                raise ApiError(
                    f"{method} {path} failed: {_unwrap(err)}",
                    fix="check that the API server is reachable (host, proxy, certificates)",
                ) from None
            finally:
                with self._count_lock:
                    self.requests_sent += 1
            if resp.status in (429, 503):
                self.flow.pushed_back()  # the server is overloaded: send less at once
            else:
                self.flow.succeeded()
            # 500 is as often a lasting server-side error ("range is full") as a passing
            # one: a few tries only, so a run with many such objects still ends soon.
            persistent = resp.status == 500 and attempt >= MAX_ATTEMPTS_ON_500
            if resp.status in RETRYABLE_STATUS and retry and not persistent and time.monotonic() < deadline:
                time.sleep(_retry_after(resp.headers.get("Retry-After"), attempt))
                continue
            break
        warnings = _parse_warnings(resp.headers.getlist("Warning"))
        try:
            payload = json.loads(resp.data) if resp.data else None
        except ValueError:
            payload = resp.data.decode(errors="replace")
        if resp.status >= 400:
            raise _api_error(method, path, resp.status, payload)
        return Response(resp.status, payload, warnings)

    def map(self, func, items):
        """Run ``func`` over items with bounded parallelism; results keep input order.

        Exceptions are returned in place of results rather than raised, so that
        one failed object never hides the outcome of the others.
        """
        items = list(items)

        def safe(item):
            try:
                return func(item)
            except Exception as err:  # reported per object by the caller
                return err

        if len(items) <= 1 or self.parallelism == 1:
            return [safe(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self.parallelism, len(items))) as pool:
            return list(pool.map(safe, items))

    # -- discovery -------------------------------------------------------------------------
    def discover(self) -> Discovery:
        """One discovery pass: aggregated discovery (2 requests) where served."""
        core = self.request("GET", "/api", accept=AGGREGATED_DISCOVERY).body
        groups = self.request("GET", "/apis", accept=AGGREGATED_DISCOVERY).body
        if (isinstance(core, dict) and core.get("kind") == "APIGroupDiscoveryList"
                and isinstance(groups, dict) and groups.get("kind") == "APIGroupDiscoveryList"):
            return Discovery(_resources_from_aggregated(core.get("items", []) + groups.get("items", [])))
        return self._legacy_discovery(core, groups)

    def _legacy_discovery(self, core: dict, groups: dict) -> Discovery:
        versions = [("", v) for v in core.get("versions", ["v1"])]
        for group in groups.get("groups", []):
            preferred = group.get("preferredVersion", {}).get("version")
            ordered = sorted(group.get("versions", []), key=lambda v: v["version"] != preferred)
            versions += [(group["name"], v["version"]) for v in ordered]

        def fetch(group_version):
            group, version = group_version
            path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            try:
                return _resources_from_legacy(group, version, self.request("GET", path).body)
            except ApiError:
                return []  # an unavailable aggregated API must not break the run

        resources = []
        for found in self.map(fetch, versions):
            resources += found
        return Discovery(resources)

    # -- object requests --------------------------------------------------------------------
    def apply(self, res: Resource, obj: dict, *, field_manager: str, force: bool = False,
              dry_run: bool = False, field_validation: str = "Strict") -> Response:
        meta = obj["metadata"]
        query = {"fieldManager": field_manager, "fieldValidation": field_validation}
        if force:
            query["force"] = "true"
        if dry_run:
            query["dryRun"] = "All"
        path = res.path(meta.get("namespace"), meta["name"])
        # JSON is YAML, and much faster to produce than YAML.
        return self.request("PATCH", path, query=query, body=obj, content_type=APPLY_PATCH, retry=True)

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict | None:
        try:
            return self.request("GET", res.path(namespace, name)).body
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    def create(self, res: Resource, obj: dict, *, field_manager: str, dry_run: bool = False) -> Response:
        query = {"fieldManager": field_manager}
        if dry_run:
            query["dryRun"] = "All"
        return self.request("POST", res.path(obj["metadata"].get("namespace")), query=query, body=obj)

    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             metadata_only: bool = True, page_size: int = 500):
        """Yield every object of a resource, one page at a time."""
        query = {"limit": str(page_size)}
        if label_selector:
            query["labelSelector"] = label_selector
        accept = METADATA_LIST if metadata_only else "application/json"
        while True:
            body = self.request("GET", res.path(namespace), query=query, accept=accept).body
            yield from body.get("items") or []
            token = (body.get("metadata") or {}).get("continue")
            if not token:
                return
            query["continue"] = token

    def delete(self, res: Resource, name: str, namespace: str | None, *, uid: str | None = None,
               propagation_policy: str = "Background", dry_run: bool = False) -> Response:
        body = {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "propagationPolicy": propagation_policy}
        if uid:
            body["preconditions"] = {"uid": uid}
        if dry_run:
            body["dryRun"] = ["All"]
        # With a UID precondition a repeated DELETE is safe: it can only hit the
        # same object, or find it gone.
        return self.request("DELETE", res.path(namespace, name), body=body, retry=bool(uid))

    def merge_patch(self, res: Resource, name: str, namespace: str | None, patch: dict, *,
                    field_manager: str, dry_run: bool = False) -> Response:
        query = {"fieldManager": field_manager}
        if dry_run:
            query["dryRun"] = "All"
        return self.request("PATCH", res.path(namespace, name), query=query, body=patch,
                            content_type="application/merge-patch+json")


    def json_patch(self, res: Resource, name: str, namespace: str | None, operations: list, *,
                   field_manager: str) -> Response:
        """An RFC 6902 JSON patch (used to rewrite managedFields; guard it with a resourceVersion op)."""
        return self.request("PATCH", res.path(namespace, name), query={"fieldManager": field_manager},
                            body=operations, content_type="application/json-patch+json")


def connect(auth: dict, **kwargs) -> KubeClient:
    cfg = load_configuration(auth)
    groups = auth.get("impersonate_groups")
    if isinstance(groups, str):
        groups = [g.strip() for g in groups.split(",") if g.strip()]
    return KubeClient(cfg, impersonate_user=auth.get("impersonate_user"), impersonate_groups=groups, **kwargs)


# ----- helpers ----------------------------------------------------------------------------


def _bypasses_proxy(host: str, no_proxy: str | None) -> bool:
    if not no_proxy:
        return False
    hostname = urllib.parse.urlparse(host).hostname or ""
    for entry in no_proxy.split(","):
        entry = entry.strip().lstrip(".")
        if entry and (hostname == entry or hostname.endswith("." + entry) or entry == "*"):
            return True
    return False


def _backoff(attempt: int) -> float:
    return min(5.0, 0.2 * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)


def _retry_after(value: str | None, attempt: int) -> float:
    try:
        return min(10.0, max(0.0, float(value)))
    except (TypeError, ValueError):
        return _backoff(attempt)


def _unwrap(err: Exception) -> str:
    reason = getattr(err, "reason", None)
    return str(reason or err)


def _api_error(method: str, path: str, status: int, payload) -> ApiError:
    status_obj = payload if isinstance(payload, dict) and payload.get("kind") == "Status" else None
    message = (status_obj or {}).get("message") or (payload if isinstance(payload, str) else "") or f"HTTP {status}"
    reason = (status_obj or {}).get("reason") or ""
    cls = ConflictError if status == 409 else ApiError
    return cls(message, status=status, reason=reason, body=status_obj, details={"request": f"{method} {path}"})
