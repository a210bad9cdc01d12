"""httprequests.py: each request as it goes on the wire, built without a pool or a server.

Exact paths and query strings, the headers a request sets and the bytes of its body; how they
are sent (retries, credentials) is tests/unit/kube/test_kube.py's.
"""

import dataclasses
import json
from types import SimpleNamespace

import pytest
import urllib3
from applyset.kube import http_requests as wire
from applyset.kube.discovery import Resource
from applyset.errors import ApiError, AuthenticationFailed, ConflictError
from applyset.kube.connection import ConnectionSource
from applyset.kube.client import read_response

DEPLOYMENTS = Resource(group="apps", version="v1", kind="Deployment", plural="deployments", namespaced=True)
NAMESPACES = Resource(group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False)
WEB = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}


def test_a_server_side_apply_is_a_retried_patch_of_the_object_as_compact_json():
    req = wire.apply_request(DEPLOYMENTS, WEB, field_manager="mgr", force=True, dry_run=True)
    assert req.method == "PATCH" and req.retry and req.writes
    assert req.target == ("/apis/apps/v1/namespaces/shop/deployments/web"
                          "?fieldManager=mgr&fieldValidation=Strict&force=true&dryRun=All")
    assert req.content_type == "application/apply-patch+yaml" == wire.APPLY_PATCH
    assert req.accept == "application/json"
    assert req.body == json.dumps(WEB, separators=(",", ":")).encode()


def test_an_apply_without_force_or_dry_run_says_only_the_manager_and_the_validation():
    req = wire.apply_request(DEPLOYMENTS, WEB, field_manager="mgr", field_validation="Warn")
    assert req.target == "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=mgr&fieldValidation=Warn"


def test_a_list_page_accepts_metadata_only_and_carries_the_continue_token():
    first = wire.list_request(DEPLOYMENTS, "shop", label_selector="applyset.kubernetes.io/part-of=x", page_size=1)
    assert first.method == "GET" and first.retry and not first.writes and first.body is None
    assert first.target == ("/apis/apps/v1/namespaces/shop/deployments"
                            "?limit=1&labelSelector=applyset.kubernetes.io%2Fpart-of%3Dx")
    assert first.accept == wire.METADATA_LIST
    assert first.accept == "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
    following = wire.list_request(DEPLOYMENTS, None, metadata_only=False, continue_token="tok")
    assert following.target == "/apis/apps/v1/deployments?limit=500&continue=tok"
    assert following.accept == "application/json"


def test_a_delete_sends_delete_options_with_the_uid_precondition_and_is_retried_only_with_it():
    req = wire.delete_request(NAMESPACES, "old", None, uid="u-1", propagation_policy="Foreground", dry_run=True)
    assert req.method == "DELETE" and req.target == "/api/v1/namespaces/old" and req.retry
    assert req.content_type == "application/json"
    assert json.loads(req.body) == {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions",
                                    "propagationPolicy": "Foreground", "preconditions": {"uid": "u-1"},
                                    "dryRun": ["All"]}
    unguarded = wire.delete_request(DEPLOYMENTS, "web", "shop")
    assert not unguarded.retry
    assert json.loads(unguarded.body) == {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions",
                                          "propagationPolicy": "Background"}


def test_create_posts_into_the_objects_namespace_and_is_not_retried():
    req = wire.create_request(DEPLOYMENTS, WEB, field_manager="mgr", dry_run=True)
    assert (req.method, req.target, req.retry) == ("POST", "/apis/apps/v1/namespaces/shop/deployments"
                                                   "?fieldManager=mgr&dryRun=All", False)
    assert req.content_type == "application/json" and json.loads(req.body) == WEB


def test_get_quotes_the_namespace_and_the_name():
    req = wire.get_request(DEPLOYMENTS, "a/b", "sh op")
    assert req.target == "/apis/apps/v1/namespaces/sh%20op/deployments/a%2Fb"
    assert req.retry and req.content_type is None and req.body is None


def test_merge_and_json_patches_say_their_content_types_and_are_not_retried():
    merge = wire.merge_patch_request(DEPLOYMENTS, "web", "shop", {"metadata": {"labels": {"a": "b"}}},
                                     field_manager="m", dry_run=True)
    assert merge.content_type == "application/merge-patch+json" and not merge.retry
    assert merge.target == "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=m&dryRun=All"
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": "7"}]
    patch = wire.json_patch_request(DEPLOYMENTS, "web", "shop", ops, field_manager="m")
    assert patch.content_type == "application/json-patch+json" and not patch.retry
    assert patch.target == "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=m"
    assert json.loads(patch.body) == ops


def test_build_request_defaults_list_values_and_bodies():
    assert wire.build_request("GET", "/version") == wire.ApiRequest("GET", "/version", retry=True)
    assert wire.build_request("GET", "/x", query={}).target == "/x"
    repeated = wire.build_request("GET", "/x", query={"a": ["1", "2"], "b": "c d"})
    assert repeated.target == "/x?a=1&a=2&b=c+d"
    assert wire.build_request("POST", "/x", body="té", content_type="text/plain").body == "té".encode()
    assert wire.build_request("POST", "/x", body=b"raw").body == b"raw"
    assert wire.build_request("PATCH", "/x", body={}, retry=True).retry
    with pytest.raises(dataclasses.FrozenInstanceError):
        repeated.method = "DELETE"


def answer(status, payload=None, warnings=()):
    headers = urllib3.HTTPHeaderDict()
    for warning in warnings:
        headers.add("Warning", warning)
    data = json.dumps(payload).encode() if payload is not None else b""
    return SimpleNamespace(status=status, data=data, headers=headers)


def test_reading_an_answer_decodes_json_and_warnings_and_turns_failures_into_errors():
    req = wire.get_request(DEPLOYMENTS, "web", "shop")
    source = ConnectionSource(credential="the api_key option", credential_kind="api_key")
    ok = read_response(req, answer(200, {"kind": "Deployment"}, ['299 - "deprecated"']), "https://h", source)
    assert (ok.status, ok.body, ok.warnings) == (200, {"kind": "Deployment"}, ["deprecated"])
    assert read_response(req, answer(200), "https://h", source).body is None
    with pytest.raises(AuthenticationFailed, match="the api_key option was not accepted"):
        read_response(req, answer(401, {"kind": "Status"}), "https://h", source)
    with pytest.raises(ConflictError):
        read_response(req, answer(409, {"kind": "Status", "message": "taken"}), "https://h", source)
    with pytest.raises(ApiError, match="not found") as err:
        read_response(req, answer(404, {"kind": "Status", "message": "not found"}), "https://h", source)
    assert err.value.details == {"request": "GET /apis/apps/v1/namespaces/shop/deployments/web"}
