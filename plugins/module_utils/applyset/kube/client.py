"""The HTTP client: the only place that sends requests to the Kubernetes API server.

Requests go out through one urllib3 pool, so that the engine controls exactly which requests
are sent: one server-side apply PATCH per object, metadata-only paginated LISTs, DELETEs with
preconditions, and nothing else. Each request is built first, without I/O (``http_requests``),
then sent with this client's credential and retried with backoff where it may be
(``KubeClient.send``), and its answer read (``read_response``). ``flow.AdaptiveLimit`` bounds the
requests in flight and follows the round trip; ``flow.CriticalPath`` counts the round trips a run
waited for (``round_trips``); ``KubeClient.map`` runs work in parallel.

The neighbours own the rest: ``connection`` where the server and the credentials come from
(``connect`` takes its ``load_connection``), ``discovery`` what the server serves (``Resource``,
``Discovery``), ``http_requests`` what a request looks like on the wire, ``http_errors`` how a
failure becomes an error. Callers import each name from the module that defines it.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..object_meta import KubeObject, list_meta_of
from .api import EarlyReadSeam, Item
from .connection import AuthOptions, ConnectionSource, bypasses_proxy, check_tls_files, load_connection, tls_context
from .discovery import Discovery, Resource
from .discovery_pass import discover
from ..errors import ApiError, ApplySetError
from .flow import AdaptiveLimit, CriticalPath, bounds
from .http_errors import api_error, connection_failed, is_timeout, is_tls_failure, unauthorized
from .kubeconfig import ClientSettings, KubeconfigDoc, export as export_kubeconfig
from .http_requests import (
    ApiRequest, JsonPatchOperation, ListBody, MergePatch, Query, Response, apply_request, build_request, create_request,
    delete_request, get_request, json_patch_request, list_request, merge_patch_request,
)
from ..spec import COLLECTION_VERSION, TOOL_NAME

if TYPE_CHECKING:  # urllib3 is imported when the first client is made
    from urllib3 import BaseHTTPResponse, HTTPHeaderDict, PoolManager

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
# Retries of a connection error before the server has ever answered this client.
FIRST_CONTACT_RETRY_SECONDS = 3.0
MAX_ATTEMPTS_ON_500 = 3
# A server that answers "Timeout" (a 504, or a Status whose reason is Timeout), or that stays silent
# until our read timeout after it has answered this client before, did not refuse the request: it
# was stalled and never got to it. An idempotent request gets this many more tries, whatever the
# time spent so far; each try is bounded by the read timeout, so the wait stays bounded.
MAX_STALLED_RETRIES = 3
USER_AGENT = f"{TOOL_NAME}/{COLLECTION_VERSION}"
# Objects per LIST page. Pages follow one another (each needs the continue token of the one
# before), so each costs a round trip on the critical path: 2,000 lists a set of 1,000 in one.
# The run keeps every listed object anyway, so larger pages cost no more memory than the list.
LIST_PAGE_SIZE = 2000


# ----- the client -------------------------------------------------------------------------


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


def read_response(req: ApiRequest, resp: BaseHTTPResponse, host: str, source: ConnectionSource) -> Response:
    """The ``Response`` to ``req`` from urllib3's answer ``resp`` (its ``status``, ``data`` and
    ``headers``), from the server ``host`` that ``source`` describes.

    Raises:
        AuthenticationFailed: HTTP 401, naming the credential (``http_errors.unauthorized``).
        ConflictError, ApiError: any other status of 400 or above (``http_errors.api_error``).
    """
    warnings = _parse_warnings(resp.headers.getlist("Warning"))
    try:
        payload = json.loads(resp.data) if resp.data else None
    except ValueError:
        payload = resp.data.decode(errors="replace")
    if resp.status == 401:
        raise unauthorized(host, source, req.method, req.path, payload)
    if resp.status >= 400:
        raise api_error(req.method, req.path, resp.status, payload)
    return Response(resp.status, payload, warnings)


class _ExportedConnection:
    """What another tool (helm's ``lookup``) needs of a client: its connection as a kubeconfig (a
    class of its own, so that the client's stays within its size)."""

    cfg: ClientSettings
    _static_headers: HTTPHeaderDict

    def kubeconfig(self) -> KubeconfigDoc:
        """The connection as a kubeconfig (``kubeconfig.export``; it holds the credential), with the
        impersonation the client's headers carry."""
        headers = self._static_headers
        return export_kubeconfig(self.cfg, impersonate_user=headers.get("Impersonate-User"),
                                 impersonate_groups=headers.getlist("Impersonate-Group"))


class KubeClient(_ExportedConnection):
    """A thread-safe client over one urllib3 connection pool.

    Args:
        cfg: the configuration of ``load_connection`` (a ``kubeconfig.ClientConfig`` or a
            ``kubernetes.client.Configuration``): server, TLS, credentials (refreshed before each
            request when an exec plugin or token file gives them), proxy.
        parallelism: the hard upper limit of requests in flight (the pool and the worker threads of
            ``map`` are sized to it); None: follow the round trip from 8 up to 64 (``flow.bounds``).
        retry_seconds: how long idempotent requests (GET, server-side apply, DELETE with a UID
            precondition) are retried on 429, 5xx and connection errors, with jittered exponential
            backoff that honours Retry-After.
        timeout: seconds to wait for an answer once connected (connecting: 10 s).
        impersonate_user, impersonate_groups: sent as ``Impersonate-User`` and ``Impersonate-Group``.
        source: where the settings came from, named by connection and credential errors.

    ``requests_sent`` counts every attempt, retries included; ``writes_sent`` those of them that
    were POST, PUT, PATCH or DELETE (dry runs included); ``round_trips`` the round trips waited for
    one after another (``flow.CriticalPath``).
    """

    def __init__(self, cfg: ClientSettings, parallelism: int | None = 8, retry_seconds: float = 30.0, timeout: float = 60.0,
                 impersonate_user: str | None = None, impersonate_groups: list[str] | None = None,
                 source: ConnectionSource | None = None) -> None:
        import urllib3

        self._urllib3 = urllib3
        self.cfg = cfg
        self.host = cfg.host.rstrip("/")
        self.source = source or ConnectionSource()
        start, self.parallelism = bounds(parallelism)
        self.retry_seconds = retry_seconds
        self._answered = False  # has the server ever answered this client (see _send_with_retries)
        self.timeout = urllib3.Timeout(connect=10.0, read=timeout)
        self.requests_sent = 0
        self.writes_sent = 0
        self._count_lock = threading.Lock()
        self.flow = AdaptiveLimit(self.parallelism, start)
        self.path = CriticalPath()
        self.early: EarlyReadSeam | None = None  # run/early.py's EarlyReads: reads sent before the run asked for them
        check_tls_files(cfg, self.source)
        pool_args = {
            "num_pools": 4,
            "maxsize": self.parallelism + 2,
            "block": True,
            "retries": False,
            "cert_reqs": "CERT_REQUIRED" if cfg.verify_ssl else "CERT_NONE",
            # one context for every connection, TLS sessions resumed (tls.py)
            "ssl_context": tls_context(self.source, verify=cfg.verify_ssl, ca_file=cfg.ssl_ca_cert,
                                       cert_file=cfg.cert_file, key_file=cfg.key_file),
        }
        if getattr(cfg, "tls_server_name", None):
            pool_args["server_hostname"] = cfg.tls_server_name
        if not cfg.verify_ssl:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        self._pool_args = pool_args
        self._watch_pool: urllib3.PoolManager | None = None  # made on the first watch (watch())
        self._pool: urllib3.PoolManager
        self._pool = _new_pool(self, pool_args)
        self._static_headers = urllib3.HTTPHeaderDict({"User-Agent": USER_AGENT})
        if impersonate_user:
            self._static_headers["Impersonate-User"] = impersonate_user
        for group in impersonate_groups or []:
            self._static_headers.add("Impersonate-Group", group)

    # -- plumbing --------------------------------------------------------------------------
    def _headers(self, accept: str, content_type: str | None) -> HTTPHeaderDict:
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

    def request(self, method: str, path: str, *, query: Query | None = None, body: object = None,
                content_type: str | None = None, accept: str = "application/json",
                retry: bool | None = None) -> Response:
        """Send one request to the API server and decode its answer: ``http_requests.build_request``
        builds it, ``send`` sends it.

        Args:
            method, path: the HTTP method and the URL path (``Resource.path``).
            query: query parameters; a list value repeats the parameter.
            body: bytes sent as they are, text as UTF-8, anything else as compact JSON (then
                ``content_type`` defaults to ``application/json``).
            content_type, accept: the request's ``Content-Type`` and ``Accept`` headers.
            retry: whether 429, 5xx and connection errors are retried (see the class); by default
                only GETs are.

        Returns:
            The ``Response``.

        Raises:
            ConnectionFailed: no answer (refused, unknown host, TLS verification failed, timeout).
            AuthenticationFailed: HTTP 401.
            ConflictError: HTTP 409.
            ApiError: any other HTTP status of 400 or above.
        """
        return self.send(build_request(method, path, query=query, body=body, content_type=content_type,
                                       accept=accept, retry=retry))

    def send(self, req: ApiRequest) -> Response:
        """Send ``req`` with this client's headers and credential, retried as ``req.retry`` says
        (see the class), and decode the answer (``read_response``). Raises as ``request``.

        A read that ``early`` sent before the run asked for it is answered from there, once
        (``run/early.py``); while the early reads go out, each answer is recorded there."""
        early = self.early
        if early is not None:
            taken = early.take(req)
            if taken is not None:
                return taken.result()
            recorded = early.record(req)
            if recorded is not None:
                return _settle(recorded, lambda: self._send_and_read(req))
        return self._send_and_read(req)

    def _send_and_read(self, req: ApiRequest) -> Response:
        headers = self._headers(req.accept, req.content_type)
        return read_response(req, self._send_with_retries(req, headers), self.host, self.source)

    def _send_with_retries(self, req: ApiRequest, headers: HTTPHeaderDict) -> BaseHTTPResponse:
        """The server's last answer to ``req``: retried on connection errors, 429 and 5xx while
        ``req.retry`` and the time allow (counted from the server's first answer to it), and after a
        stalled server (``MAX_STALLED_RETRIES``); raises ``ConnectionFailed`` when there was none."""
        url = self.host + req.target
        started = time.monotonic()
        deadline = started + self.retry_seconds
        attempt, stalls, answered = 0, 0, False
        while True:
            attempt += 1
            try:
                resp = self._send_once(req, url, headers)
            except self._urllib3.exceptions.HTTPError as err:
                # A server that has never answered this client is more likely down or misnamed
                # than flapping: a few seconds of retries, not the full wait (kubectl fails at once).
                limit = deadline if self._answered else min(deadline, started + FIRST_CONTACT_RETRY_SECONDS)
                stalled = self._answered and is_timeout(err)
                # A certificate that does not verify will not verify on the next try either.
                if req.retry and not is_tls_failure(err) and (
                        time.monotonic() < limit or (stalled and stalls < MAX_STALLED_RETRIES)):
                    stalls += stalled
                    time.sleep(_backoff(attempt))
                    continue
                raise connection_failed(self.host, self.source, req.method, req.path, err, attempt,
                                        time.monotonic() - started) from None
            self._answered = True
            if not answered:
                # retry time from the first answer: queued behind a stall, it meets a server catching up
                answered, deadline = True, max(deadline, time.monotonic() + self.retry_seconds)
            if resp.status in (429, 503):
                # the server is overloaded (priority and fairness rejects with 429): send less at once
                self.flow.pushed_back(_seconds(resp.headers.get("Retry-After")))
            if not req.retry or resp.status not in RETRYABLE_STATUS:
                return resp
            if _stalled_answer(resp) and stalls < MAX_STALLED_RETRIES:
                stalls += 1
            # 500 is as often a lasting server-side error ("range is full") as a passing
            # one, and so is the 429 of a conversion webhook that fails (kube-apiserver 1.34:
            # "storage is (re)initializing: ... conversion webhook ..."): a few tries only, so a
            # run with many such objects still ends soon, and a LIST goes on to another version.
            elif (attempt >= MAX_ATTEMPTS_ON_500 and _lasting_failure(resp)) or time.monotonic() >= deadline:
                return resp
            time.sleep(_retry_after(resp.headers.get("Retry-After"), attempt))

    @property
    def round_trips(self) -> int:
        """The round trips this client waited for one after another (``flow.CriticalPath``)."""
        return self.path.depth

    def _send_once(self, req: ApiRequest, url: str, headers: HTTPHeaderDict) -> BaseHTTPResponse:
        """One attempt, within the flow limit; counted in ``requests_sent`` (and ``writes_sent``)
        whether or not it is answered, and its latency reported to the flow limit."""
        depth = None
        try:
            with self.flow:
                depth = self.path.sent()
                sent_at = time.monotonic()
                resp = self._pool.request(req.method, url, body=req.body, headers=headers, timeout=self.timeout,
                                          preload_content=True)
                if resp.status not in (429, 503):
                    self.flow.succeeded(time.monotonic() - sent_at)
                return resp
        finally:
            if depth is not None:
                self.path.answered(depth)
            with self._count_lock:
                self.requests_sent += 1
                if req.writes:
                    self.writes_sent += 1

    def map(self, func: Callable[[Item], Any], items: Iterable[Item]) -> list[Any]:
        """Run ``func`` on each of ``items`` with bounded parallelism; results keep input order.

        The library's own errors (an ``ApplySetError``: an API error for one object, say) are
        returned in place of results rather than raised, so that one failed object never hides
        the outcome of the others. Anything else is a bug, not an outcome: it propagates.
        """
        work = list(items)

        def safe(item: Item) -> Any:
            try:
                return func(item)
            except ApplySetError as err:  # reported per object by the caller
                return err

        if len(work) <= 1 or self.parallelism == 1:
            return [safe(item) for item in work]
        with ThreadPoolExecutor(max_workers=min(self.parallelism, len(work))) as pool:
            return list(pool.map(safe, work))

    def stream(self, req: ApiRequest, read_timeout: float) -> Any:
        """Send ``req`` (a watch) once and return urllib3's answer unread, to stream from
        (``send_streaming``; ``read_timeout`` bounds each read). Raises ``ConnectionFailed``."""
        return send_streaming(self, req, read_timeout)

    # -- discovery -------------------------------------------------------------------------
    def discover(self) -> Discovery:
        """One discovery pass (``discovery.discover``): 2 requests where aggregated discovery is
        served. Raises as ``discovery.discover``."""
        return discover(self)

    # -- object requests (built by http_requests) ---------------------------------------------
    def apply(self, res: Resource, obj: KubeObject, *, field_manager: str, force: bool = False,
              dry_run: bool = False, field_validation: str = "Strict") -> Response:
        """Server-side apply ``obj`` to ``res`` (its namespace and name say where) as ``field_manager``.

        ``force`` takes over fields other managers own; ``dry_run`` sends ``dryRun=All``;
        ``field_validation`` is ``Strict``, ``Warn`` or ``Ignore``. Retried like a GET (applying the
        same object twice is the same). Raises as ``request``: ``ConflictError`` when fields are
        owned by another manager and ``force`` is false.
        """
        return self.send(apply_request(res, obj, field_manager=field_manager, force=force, dry_run=dry_run,
                                       field_validation=field_validation))

    def get(self, res: Resource, name: str, namespace: str | None = None) -> KubeObject | None:
        """The object ``name`` of ``res`` (in ``namespace``), or None when it does not exist; raises
        as ``request`` for any error other than 404."""
        try:
            return self.send(get_request(res, name, namespace)).body
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    def create(self, res: Resource, obj: KubeObject, *, field_manager: str, dry_run: bool = False) -> Response:
        """POST ``obj`` into its namespace's collection of ``res`` as ``field_manager`` (``dry_run``:
        ``dryRun=All``). Not retried. Raises as ``request``: ``ConflictError`` when it exists already.
        """
        return self.send(create_request(res, obj, field_manager=field_manager, dry_run=dry_run))

    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             metadata_only: bool = True, page_size: int | None = None) -> Iterator[KubeObject]:
        """Yield every object of ``res`` (in ``namespace``, or in all), fetched ``page_size`` at a time.

        ``label_selector`` filters on the server; ``metadata_only`` asks for
        ``PartialObjectMetadata`` (no spec or status); ``page_size`` defaults to ``LIST_PAGE_SIZE``. Raises as ``request``, at the page that fails.
        """
        token = None
        while True:
            body: ListBody = self.send(list_request(res, namespace, label_selector=label_selector,
                                                    metadata_only=metadata_only, page_size=page_size or LIST_PAGE_SIZE,
                                                    continue_token=token)).body
            yield from body.get("items") or []
            token = list_meta_of(body).get("continue")
            if not token:
                return

    def delete(self, res: Resource, name: str, namespace: str | None, *, uid: str | None = None,
               propagation_policy: str = "Background", dry_run: bool = False) -> Response:
        """Delete the object ``name`` of ``res`` in ``namespace``.

        With ``uid`` the server deletes only that very object (a precondition), and the request is
        retried; without it, it is sent once. ``propagation_policy`` is ``Background``,
        ``Foreground`` or ``Orphan``; ``dry_run`` sends ``dryRun=All``. Raises as ``request``
        (``ConflictError`` when the UID no longer matches, ``ApiError`` 404 when it is gone).
        """
        return self.send(delete_request(res, name, namespace, uid=uid, propagation_policy=propagation_policy,
                                        dry_run=dry_run))

    def merge_patch(self, res: Resource, name: str, namespace: str | None, patch: MergePatch, *,
                    field_manager: str, dry_run: bool = False) -> Response:
        """An RFC 7386 JSON merge ``patch`` of the object ``name`` of ``res`` in ``namespace``, as
        ``field_manager`` (``dry_run``: ``dryRun=All``). Not retried. Raises as ``request``."""
        return self.send(merge_patch_request(res, name, namespace, patch, field_manager=field_manager,
                                             dry_run=dry_run))

    def json_patch(self, res: Resource, name: str, namespace: str | None, operations: Sequence[JsonPatchOperation], *,
                   field_manager: str) -> Response:
        """Send the RFC 6902 JSON patch ``operations`` for the object ``name`` of ``res`` in ``namespace``
        as ``field_manager``. Used to rewrite managedFields: guard it with a ``replace`` of the
        resourceVersion (``rules.csa.patch``), so that a stale one fails with ``ConflictError``. Not
        retried. Raises as ``request``."""
        return self.send(json_patch_request(res, name, namespace, operations, field_manager=field_manager))


def connect(auth: AuthOptions, **kwargs: Any) -> KubeClient:
    """A client for the cluster the options name (see ``load_connection``), impersonating if asked.

    Args:
        auth: the options as ``ansible_support.auth_params`` gives them; ``impersonate_user`` and
            ``impersonate_groups`` (a list) are sent as ``Impersonate-*`` headers.
        kwargs: passed on to ``KubeClient`` (``parallelism``, ``retry_seconds``, ``timeout``).

    Raises:
        InputError, ConfigError: as ``load_connection``. No request is sent yet.
    """
    cfg, source = load_connection(auth)
    return KubeClient(cfg, impersonate_user=auth.get("impersonate_user"),
                      impersonate_groups=auth.get("impersonate_groups"), source=source, **kwargs)


# ----- helpers ----------------------------------------------------------------------------


def send_streaming(client: KubeClient, req: ApiRequest, read_timeout: float) -> BaseHTTPResponse:
    """Send ``req`` (a watch) once with ``client``'s headers and credential and return urllib3's
    answer unread, to stream from (``watch.open_watch``). It holds its connection while it runs, so
    it goes through a pool of its own, outside the flow limit (which bounds requests answered in a
    round trip); ``read_timeout`` bounds each read. Counted in ``requests_sent``.

    Raises:
        ConnectionFailed: no answer.
    """
    if client._watch_pool is None:  # one connection per watch, closed when it ends
        client._watch_pool = _new_pool(client, {**client._pool_args, "maxsize": 1, "block": False})
    headers, started = client._headers(req.accept, req.content_type), time.monotonic()
    with client._count_lock:
        client.requests_sent += 1
    urllib3 = client._urllib3
    try:
        resp = client._watch_pool.request(req.method, client.host + req.target, headers=headers, preload_content=False,
                                          timeout=urllib3.Timeout(connect=10.0, read=max(0.1, read_timeout)))
    except urllib3.exceptions.HTTPError as err:
        raise connection_failed(client.host, client.source, req.method, req.path, err, 1,
                                time.monotonic() - started) from None
    client._answered = True
    return resp


def _new_pool(client: KubeClient, args: dict[str, Any]) -> PoolManager:
    cfg = client.cfg
    if cfg.proxy and not bypasses_proxy(client.host, cfg.no_proxy):
        return client._urllib3.ProxyManager(cfg.proxy, proxy_headers=cfg.proxy_headers, **args)
    return client._urllib3.PoolManager(**args)


def _settle(future: Future, call: Callable[[], Response]) -> Response:
    """``call()``, its answer or error also set on ``future`` (which is never left pending)."""
    try:
        answer = call()
    except BaseException as err:
        future.set_exception(err)
        raise
    future.set_result(answer)
    return answer


def _lasting_failure(resp: BaseHTTPResponse) -> bool:
    """Whether an answer worth a retry is as likely to last: a 500, or a 429 that names a failed
    conversion webhook. A 500 whose cause is a timeout inside the server ("resource quota evaluation
    timed out", "etcdserver: request timed out", "context deadline exceeded") is not: it comes from a
    server catching up after a stall, and is retried like a 429 until the retry deadline."""
    if resp.status == 500:
        return not _internal_timeout(resp)
    return resp.status == 429 and b"conversion webhook" in (resp.data or b"")


# Words of a 500's Status message that say the server timed out waiting on itself (an admission
# plugin, etcd, a context deadline), not that it refused the request.
_INTERNAL_TIMEOUT_WORDS = ("timed out", "timeout", "deadline exceeded")


def _internal_timeout(resp: BaseHTTPResponse) -> bool:
    """Whether a 500 says the server ran out of time inside itself (a passing condition)."""
    try:
        status = json.loads(resp.data or b"{}")
    except ValueError:
        return False
    message = str(status.get("message") or "").lower() if isinstance(status, dict) else ""
    return any(word in message for word in _INTERNAL_TIMEOUT_WORDS)


def _stalled_answer(resp: BaseHTTPResponse) -> bool:
    """Whether the server answered that it did not get to the request in time: a 504, or a 5xx
    Status whose reason is Timeout ("request did not complete within requested timeout")."""
    if resp.status == 504:
        return True
    try:
        status = json.loads(resp.data or b"{}")
    except ValueError:
        return False
    return isinstance(status, dict) and status.get("reason") == "Timeout"


def _backoff(attempt: int) -> float:
    return min(5.0, 0.2 * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)


def _seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header's seconds (None: absent or not a number)."""
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return None


def _retry_after(value: str | None, attempt: int) -> float:
    if value is None:
        return _backoff(attempt)
    try:
        return min(10.0, max(0.0, float(value)))
    except (TypeError, ValueError):
        return _backoff(attempt)
