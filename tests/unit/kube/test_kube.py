"""kube.py at the HTTP boundary: exact methods, URLs, query strings and content types.

The urllib3 pool is replaced by a recorder; no server, fake or real, is involved.
Behaviour against a real API server is proven in tests/integration.
"""

import json
from types import SimpleNamespace

import pytest
from applyset.kube import client as kube
from applyset.kube import discovery
from applyset.errors import ApiError, ConflictError


class Recorder:
    """Stands in for urllib3.PoolManager: records requests, replays canned responses."""

    def __init__(self, responses):
        self.responses = list(responses)
        self.sent = []

    def request(self, method, url, body=None, headers=None, **_):
        self.sent.append(SimpleNamespace(method=method, url=url, body=body, headers=dict(headers)))
        status, payload, extra = self.responses.pop(0)
        import urllib3
        hdrs = urllib3.HTTPHeaderDict(extra or {})
        data = json.dumps(payload).encode() if payload is not None else b""
        return SimpleNamespace(status=status, data=data, headers=hdrs)


def client(responses, **kwargs):
    cfg = SimpleNamespace(host="https://k8s.test:6443/", verify_ssl=True, ssl_ca_cert=None, cert_file=None,
                          key_file=None, proxy=None, no_proxy=None, proxy_headers=None, tls_server_name=None,
                          refresh_api_key_hook=None,
                          get_api_key_with_prefix=lambda *a, **k: "Bearer t0k3n")
    c = kube.KubeClient(cfg, retry_seconds=2, **kwargs)
    c._pool = Recorder(responses)
    return c


DEPLOYMENTS = discovery.Resource(group="apps", version="v1", kind="Deployment", plural="deployments", namespaced=True)
NAMESPACES = discovery.Resource(group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False)


def test_apply_is_one_server_side_apply_patch():
    c = client([(200, {"metadata": {"name": "web"}}, None)])
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}
    c.apply(DEPLOYMENTS, obj, field_manager="mgr", force=True, dry_run=True)
    (req,) = c._pool.sent
    assert req.method == "PATCH"
    assert req.url == ("https://k8s.test:6443/apis/apps/v1/namespaces/shop/deployments/web"
                       "?fieldManager=mgr&fieldValidation=Strict&force=true&dryRun=All")
    assert req.headers["Content-Type"] == "application/apply-patch+yaml"
    assert req.headers["Authorization"] == "Bearer t0k3n"
    assert json.loads(req.body) == obj


def test_list_is_metadata_only_and_follows_continue_tokens():
    c = client([
        (200, {"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "tok"}}, None),
        (200, {"items": [{"metadata": {"name": "b"}}], "metadata": {}}, None),
    ])
    items = list(c.list(DEPLOYMENTS, "shop", label_selector="applyset.kubernetes.io/part-of=x", page_size=1))
    assert [i["metadata"]["name"] for i in items] == ["a", "b"]
    first, second = c._pool.sent
    assert first.url.startswith("https://k8s.test:6443/apis/apps/v1/namespaces/shop/deployments?limit=1&")
    assert "labelSelector=applyset.kubernetes.io%2Fpart-of%3Dx" in first.url
    assert first.headers["Accept"].startswith("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
    assert second.url.endswith("&continue=tok")


def test_delete_sends_uid_precondition_and_propagation():
    c = client([(200, {}, None)])
    c.delete(NAMESPACES, "old", None, uid="u-1", propagation_policy="Foreground")
    (req,) = c._pool.sent
    assert req.method == "DELETE" and req.url == "https://k8s.test:6443/api/v1/namespaces/old"
    assert json.loads(req.body) == {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions",
                                    "propagationPolicy": "Foreground", "preconditions": {"uid": "u-1"}}


def test_retries_idempotent_requests_honouring_retry_after_then_succeeds():
    c = client([(429, {"kind": "Status"}, {"Retry-After": "0"}), (503, None, None), (200, {"ok": 1}, None)])
    assert c.request("GET", "/version").body == {"ok": 1}
    assert len(c._pool.sent) == 3


def test_does_not_retry_a_plain_post():
    c = client([(503, {"kind": "Status", "message": "busy", "reason": "ServiceUnavailable"}, None)])
    with pytest.raises(ApiError) as err:
        c.request("POST", "/api/v1/namespaces", body={})
    assert err.value.status == 503 and len(c._pool.sent) == 1


def test_conflict_becomes_conflict_error_with_fields():
    status = {"kind": "Status", "reason": "Conflict", "message": "Apply failed with 1 conflict",
              "details": {"causes": [{"field": ".data.v", "message": 'conflict with "other"'}]}}
    c = client([(409, status, None)])
    with pytest.raises(ConflictError) as err:
        c.apply(DEPLOYMENTS, {"metadata": {"name": "x", "namespace": "n"}}, field_manager="m")
    assert err.value.conflicting_fields == [".data.v"]


def test_warning_headers_are_passed_on_as_text():
    c = client([(200, {}, {"Warning": '299 - "v1 Thing is deprecated"'})])
    assert c.request("GET", "/x").warnings == ["v1 Thing is deprecated"]


def test_aggregated_discovery_takes_two_requests_and_keeps_preferred_versions():
    core = {"kind": "APIGroupDiscoveryList", "items": [{"metadata": {"name": ""}, "versions": [{
        "version": "v1", "resources": [{"resource": "secrets", "singularResource": "secret", "scope": "Namespaced",
                                        "responseKind": {"kind": "Secret"}, "verbs": ["get", "list"]}]}]}]}
    groups = {"kind": "APIGroupDiscoveryList", "items": [{"metadata": {"name": "example.com"}, "versions": [
        {"version": "v2", "resources": [{"resource": "things", "scope": "Cluster", "responseKind": {"kind": "Thing"}}]},
        {"version": "v1", "resources": [{"resource": "things", "scope": "Cluster", "responseKind": {"kind": "Thing"}}]},
    ]}]}
    c = client([(200, core, None), (200, groups, None)])
    found = c.discover()
    assert len(c._pool.sent) == 2
    assert "apidiscovery.k8s.io;v=v2" in c._pool.sent[0].headers["Accept"]
    assert found.for_resource("", "secret").plural == "secrets"
    from applyset.spec import GroupKind
    assert found.for_group_kind(GroupKind("example.com", "Thing")).version == "v2"


def test_pushback_halves_parallelism_and_successes_restore_it():
    c = client([(429, {"kind": "Status"}, {"Retry-After": "0"})] * 3 + [(200, {}, None)] * 40, parallelism=8)
    c.request("GET", "/x")
    assert c.flow.limit == 2  # 8 -> 4 -> 2 -> 1 by the 429s, then +1 by the success
    for _ in range(39):
        c.request("GET", "/x")
    assert c.flow.limit == 8  # grown back, never above the configured parallelism


def test_a_lasting_500_is_tried_three_times_only():
    c = client([(500, {"kind": "Status", "message": "range is full"}, None)] * 5)
    with pytest.raises(ApiError, match="range is full"):
        c.request("GET", "/x")
    assert len(c._pool.sent) == 3


def test_a_malformed_legacy_discovery_document_is_an_api_error_not_a_type_error():
    # A server without aggregated discovery answers the legacy documents; one is broken.
    core = {"kind": "APIVersions", "versions": ["v1"]}
    groups = {"kind": "APIGroupList", "groups": [{"name": "example.com", "versions": [{"version": "v1"}],
                                                  "preferredVersion": {"version": "v1"}}]}
    broken = {"kind": "APIResourceList", "resources": {"name": "not a list"}}
    fine = {"kind": "APIResourceList", "resources": [{"name": "secrets", "kind": "Secret", "namespaced": True}]}
    c = client([(200, core, None), (200, groups, None), (200, fine, None), (200, broken, None)], parallelism=1)
    with pytest.raises(ApiError, match="the discovery document of /apis/example.com/v1 is malformed"):
        c.discover()


def test_map_returns_library_errors_per_item_but_lets_bugs_propagate():
    c = client([], parallelism=1)

    def work(item):
        if item == "api":
            raise ApiError("refused", status=403)
        if item == "bug":
            raise TypeError("'KeyError' object is not iterable")
        return item.upper()

    results = c.map(work, ["ok", "api"])
    assert results[0] == "OK" and isinstance(results[1], ApiError)
    with pytest.raises(TypeError):
        c.map(work, ["ok", "bug"])


# ----- a stalled server: answers Timeout, or nothing until the read timeout ------------------------------

TIMEOUT_504 = {"kind": "Status", "status": "Failure", "reason": "Timeout", "code": 504,
               "message": "Timeout: request did not complete within requested timeout - context deadline exceeded"}


class SlowClock:
    """The client's clock and sleeps; every request takes ``per_request`` seconds (a stalled server)."""

    def __init__(self, per_request: float):
        self.now, self.per_request = 1000.0, per_request

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def stalled_client(monkeypatch, responses, per_request=70.0):
    clock = SlowClock(per_request)
    monkeypatch.setattr(kube, "time", clock)
    c = client(responses)
    replay = c._pool.request

    def slow(*args, **kwargs):
        clock.now += clock.per_request
        return replay(*args, **kwargs)

    c._pool.request = slow
    return c


class Stalling(Recorder):
    """A stalled server: a silent try (an exception among the answers) waits out the read timeout
    (70 s of the fake clock), an answer takes ``answer_seconds``."""

    def __init__(self, responses, answer_seconds=70.0):
        super().__init__(responses)
        self.answer_seconds = answer_seconds

    def request(self, method, url, body=None, headers=None, **kwargs):
        if isinstance(self.responses[0], Exception):
            kube.time.now += 70.0
            self.sent.append(url)
            raise self.responses.pop(0)
        kube.time.now += self.answer_seconds
        return super().request(method, url, body, headers, **kwargs)


QUOTA_TIMED_OUT = {"kind": "Status", "status": "Failure", "reason": "InternalError", "code": 500,
                   "message": "Internal error occurred: resource quota evaluation timed out"}


def test_a_500_caused_by_a_timeout_inside_the_server_is_retried_like_a_429(monkeypatch):
    # A server catching up after a stall: its quota admission times out several times in a row
    # (the sleeps are the fake clock's, well within the retry deadline).
    c = stalled_client(monkeypatch, [(500, QUOTA_TIMED_OUT, None)] * 3 + [(200, {"ok": 1}, None)], per_request=0.0)
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}
    assert c.apply(DEPLOYMENTS, obj, field_manager="m").body == {"ok": 1}
    assert len(c._pool.sent) == 4  # a lasting 500 gets three tries only


def test_a_500_caused_by_a_timeout_inside_the_server_is_not_retried_for_a_plain_post():
    c = client([(500, QUOTA_TIMED_OUT, None), (200, {}, None)])
    with pytest.raises(ApiError, match="resource quota evaluation timed out"):
        c.request("POST", "/api/v1/namespaces", body={})
    assert len(c._pool.sent) == 1


def test_a_server_timeout_answer_to_an_idempotent_request_is_retried_after_the_deadline(monkeypatch):
    c = stalled_client(monkeypatch, [(504, TIMEOUT_504, None), (504, TIMEOUT_504, None), (200, {"ok": 1}, None)])
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}
    assert c.apply(DEPLOYMENTS, obj, field_manager="m").body == {"ok": 1}
    assert len(c._pool.sent) == 3


def test_a_timeout_status_of_another_code_counts_as_well_but_only_three_more_times(monkeypatch):
    stalled = {**TIMEOUT_504, "code": 500}
    c = stalled_client(monkeypatch, [(500, stalled, None)] * 6)
    with pytest.raises(ApiError, match="request did not complete"):
        c.request("GET", "/x")
    assert len(c._pool.sent) == 4  # the first try and three more, each after the deadline


def test_a_server_timeout_answer_to_a_plain_post_is_not_retried(monkeypatch):
    c = stalled_client(monkeypatch, [(504, TIMEOUT_504, None), (200, {}, None)])
    with pytest.raises(ApiError) as err:
        c.request("POST", "/api/v1/namespaces", body={})
    assert err.value.status == 504 and len(c._pool.sent) == 1


def test_no_answer_until_the_read_timeout_is_retried_three_times_once_the_server_answered(monkeypatch):
    import urllib3

    from applyset.errors import ConnectionFailed

    silent = urllib3.exceptions.ReadTimeoutError(None, "/x", "Read timed out. (read timeout=60)")
    answers = [(200, {}, None), silent, silent, silent, (200, {"ok": 2}, None), silent, silent, silent, silent]

    monkeypatch.setattr(kube, "time", SlowClock(0))
    c = client([])
    c._pool = Stalling(answers)
    c.request("GET", "/version")  # the server has answered this client
    assert c.request("GET", "/x").body == {"ok": 2}  # after three silent tries
    assert len(c._pool.sent) == 5
    with pytest.raises(ConnectionFailed):  # four silent tries: the first and three more
        c.request("GET", "/x")
    assert c._pool.responses == []


def test_a_429_of_a_failing_conversion_webhook_is_tried_three_times_only():
    broken = {"kind": "Status", "reason": "TooManyRequests", "code": 429,
              "message": 'storage is (re)initializing: conversion webhook for example.com/v2, Kind=Widget failed: '
                         'Post "https://conv.example.svc:443/convert?timeout=30s": service "conv" not found'}
    c = client([(429, broken, None)] * 5)
    with pytest.raises(ApiError, match="conversion webhook"):
        c.request("GET", "/x")
    assert len(c._pool.sent) == 3


def test_a_plain_429_is_retried_for_the_whole_window():
    c = client([(429, {"kind": "Status", "message": "too many requests"}, {"Retry-After": "0"})] * 4
               + [(200, {"ok": 1}, None)])
    assert c.request("GET", "/x").body == {"ok": 1}
    assert len(c._pool.sent) == 5


def test_a_server_back_from_a_stall_gets_the_retry_time_again_for_its_passing_500s(monkeypatch):
    # test_refusals' 45-second SIGSTOP: the apply's tries time out past the retry deadline, then the
    # server answers that its quota evaluation timed out while it catches up; that 500 is retried.
    import urllib3

    silent = urllib3.exceptions.ReadTimeoutError(None, "/x", "Read timed out. (read timeout=60)")
    answers = [(200, {}, None), silent, silent] + [(500, QUOTA_TIMED_OUT, None)] * 3 + [(200, {"ok": 3}, None)]

    monkeypatch.setattr(kube, "time", SlowClock(0))
    c = client([])
    c.retry_seconds = 30.0  # the module's: the backoff between the three 500s stays well inside it
    c._pool = Stalling(answers, answer_seconds=0.0)
    c.request("GET", "/version")  # the server has answered this client
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}
    assert c.apply(DEPLOYMENTS, obj, field_manager="m").body == {"ok": 3}
    assert c._pool.responses == []


def test_a_request_queued_past_the_retry_time_still_retries_a_passing_500(monkeypatch):
    # test_refusals' 45-second stop, the other way: the request waited behind the stalled ones (its
    # first answer came after the retry time), then met the server catching up.
    c = stalled_client(monkeypatch, [(500, QUOTA_TIMED_OUT, None)] * 2 + [(200, {"ok": 4}, None)], per_request=0.0)
    c.retry_seconds = 30.0
    first = c._pool.request

    def queued_first(*args, **kwargs):
        if not c._pool.sent:
            kube.time.now += 45.0  # waited for the flow limit while the server was stopped
        return first(*args, **kwargs)

    c._pool.request = queued_first
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}
    assert c.apply(DEPLOYMENTS, obj, field_manager="m").body == {"ok": 4}
