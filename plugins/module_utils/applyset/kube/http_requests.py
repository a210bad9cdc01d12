"""What each request to the API server looks like on the wire, built without any I/O.

``build_request`` turns a method, a URL path, query parameters and a body into an
``ApiRequest``: a frozen value holding the path and query string, the ``Accept`` and
``Content-Type`` headers, the body's bytes and whether a failure may be retried. One builder
per kind of request the client sends says its rules: a server-side apply PATCH
(``apply_request``), a metadata-only LIST page (``list_request``), a DELETE with a UID
precondition (``delete_request``) and the others. ``client.KubeClient.send`` adds the server, the
static headers and the credential, and sends it; nothing here opens a connection, so that these
rules are tested without a pool (tests/unit/kube/test_kube_requests.py).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from ..object_meta import KubeObject, ListMeta
from .discovery import Resource

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
# A watch's events carry one object each: metadata only, as PartialObjectMetadata.
METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
# Methods that change something (or would, as a dry run): counted apart in ``writes_sent``.
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# Query parameters by name, in order; a list value repeats the parameter.
Query = Mapping[str, "str | list[str]"]
# An RFC 7386 JSON merge patch: any JSON object, which the server merges into the object.
MergePatch = dict[str, Any]
# One RFC 6902 JSON patch operation: ``op``, ``path`` and ``value`` (or ``from``).
JsonPatchOperation = dict[str, Any]


class ListBody(TypedDict, total=False):
    """A LIST page's answer: its ``items`` and its ``metadata`` (the resourceVersion, the
    ``continue`` token of the next page)."""

    apiVersion: str
    kind: str
    metadata: ListMeta
    items: list[KubeObject]


@dataclass(frozen=True)
class ApiRequest:
    """One request, as it is sent: ``method``, the URL ``path`` (without the server) and the
    ``query`` parameters as ``(name, value)`` pairs in order (a tuple value repeats the
    parameter); ``accept`` and ``content_type`` are its headers, ``body`` the bytes sent (None:
    no body); ``retry`` says whether 429, 5xx and connection errors are retried."""

    method: str
    path: str
    query: tuple = ()
    accept: str = "application/json"
    content_type: str | None = None
    body: bytes | None = None
    retry: bool = False

    @property
    def target(self) -> str:
        """The path and the encoded query string: what follows the server in the URL."""
        if not self.query:
            return self.path
        return self.path + "?" + urllib.parse.urlencode(self.query, doseq=True)

    @property
    def writes(self) -> bool:
        """Whether it changes something (or would, as a dry run): POST, PUT, PATCH or DELETE."""
        return self.method in WRITE_METHODS


def build_request(method: str, path: str, *, query: Query | None = None, body: object = None,
                  content_type: str | None = None, accept: str = "application/json",
                  retry: bool | None = None) -> ApiRequest:
    """The ``ApiRequest`` for ``method`` on ``path`` (``Resource.path``).

    Args:
        query: query parameters in order; a list value repeats the parameter.
        body: bytes sent as they are, text as UTF-8, anything else as compact JSON; with a body,
            ``content_type`` defaults to ``application/json``.
        content_type, accept: the ``Content-Type`` and ``Accept`` headers.
        retry: whether 429, 5xx and connection errors are retried; by default only GETs are.
    """
    data: bytes | None = None
    if body is not None:
        text = body if isinstance(body, (bytes, str)) else json.dumps(body, separators=(",", ":"))
        data = text.encode("utf-8") if isinstance(text, str) else text
        content_type = content_type or "application/json"
    pairs = tuple((name, tuple(value) if isinstance(value, list) else value) for name, value in (query or {}).items())
    return ApiRequest(method=method, path=path, query=pairs, accept=accept, content_type=content_type, body=data,
                      retry=(method == "GET") if retry is None else retry)


def apply_request(res: Resource, obj: KubeObject, *, field_manager: str, force: bool = False, dry_run: bool = False,
                  field_validation: str = "Strict") -> ApiRequest:
    """The server-side apply PATCH of ``obj`` (its namespace and name say where) to ``res``:
    ``fieldManager``, ``fieldValidation``, then ``force=true`` and ``dryRun=All`` when asked;
    the object as JSON (JSON is YAML, and much faster to produce); retried."""
    meta = obj["metadata"]
    query: dict[str, str] = {"fieldManager": field_manager, "fieldValidation": field_validation}
    if force:
        query["force"] = "true"
    if dry_run:
        query["dryRun"] = "All"
    return build_request("PATCH", res.path(meta.get("namespace"), meta["name"]), query=query, body=obj,
                         content_type=APPLY_PATCH, retry=True)


def get_request(res: Resource, name: str, namespace: str | None = None) -> ApiRequest:
    """The GET of the object ``name`` of ``res`` (in ``namespace``); retried."""
    return build_request("GET", res.path(namespace, name))


def create_request(res: Resource, obj: KubeObject, *, field_manager: str, dry_run: bool = False) -> ApiRequest:
    """The POST of ``obj`` into its namespace's collection of ``res``; not retried."""
    return build_request("POST", res.path(obj["metadata"].get("namespace")), query=_manager_query(field_manager, dry_run),
                         body=obj)


def list_request(res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
                 metadata_only: bool = True, page_size: int = 500, continue_token: str | None = None) -> ApiRequest:
    """The GET of one page of ``res`` (in ``namespace``, or in all): ``limit``, ``labelSelector``
    and the ``continue`` token of the page before, if any; ``metadata_only`` accepts a
    ``PartialObjectMetadataList`` (falling back to JSON). Retried."""
    query: dict[str, str] = {"limit": str(page_size)}
    if label_selector:
        query["labelSelector"] = label_selector
    if continue_token:
        query["continue"] = continue_token
    return build_request("GET", res.path(namespace), query=query,
                         accept=METADATA_LIST if metadata_only else "application/json")


def delete_request(res: Resource, name: str, namespace: str | None, *, uid: str | None = None,
                   propagation_policy: str = "Background", dry_run: bool = False) -> ApiRequest:
    """The DELETE of the object ``name`` of ``res``, with ``DeleteOptions`` in the body:
    ``propagationPolicy``, the ``uid`` precondition and ``dryRun`` when given. Retried only with a
    UID: then a repeated DELETE can only hit the same object, or find it gone."""
    body: dict[str, Any] = {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "propagationPolicy": propagation_policy}
    if uid:
        body["preconditions"] = {"uid": uid}
    if dry_run:
        body["dryRun"] = ["All"]
    return build_request("DELETE", res.path(namespace, name), body=body, retry=bool(uid))


def merge_patch_request(res: Resource, name: str, namespace: str | None, patch: MergePatch, *, field_manager: str,
                        dry_run: bool = False) -> ApiRequest:
    """The RFC 7386 JSON merge ``patch`` of the object ``name`` of ``res``; not retried."""
    return build_request("PATCH", res.path(namespace, name), query=_manager_query(field_manager, dry_run),
                         body=patch, content_type=MERGE_PATCH)


def json_patch_request(res: Resource, name: str, namespace: str | None, operations: Sequence[JsonPatchOperation], *,
                       field_manager: str) -> ApiRequest:
    """The RFC 6902 JSON patch ``operations`` of the object ``name`` of ``res``; not retried."""
    return build_request("PATCH", res.path(namespace, name), query={"fieldManager": field_manager},
                         body=operations, content_type=JSON_PATCH)


def _manager_query(field_manager: str, dry_run: bool) -> dict[str, str]:
    query = {"fieldManager": field_manager}
    if dry_run:
        query["dryRun"] = "All"
    return query


def watch_request(res: Resource, namespace: str | None, resource_version: str, *, timeout_seconds: int,
                  field_selector: str | None = None, metadata_only: bool = True) -> ApiRequest:
    """The WATCH of ``res`` (in ``namespace``, or in all) from ``resource_version``: a streaming GET
    with ``watch=true``, bookmarks asked for (so that a quiet watch still learns a newer
    resourceVersion to resume from) and ``timeoutSeconds`` (the server ends the stream then);
    ``field_selector`` narrows it (``metadata.name=NAME``, as kubectl wait does). Not retried:
    a watch that fails is resumed by its follower (``wait.watching``), not by the client."""
    query = {"watch": "true", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
             "timeoutSeconds": str(max(1, int(timeout_seconds)))}
    if field_selector:
        query["fieldSelector"] = field_selector
    return build_request("GET", res.path(namespace), query=query,
                         accept=METADATA_WATCH if metadata_only else "application/json", retry=False)


@dataclass
class Response:
    """A successful answer: HTTP ``status``, the decoded JSON ``body`` (None when empty, the text
    when it is not JSON) and the ``warnings`` of its ``Warning`` headers as plain messages."""

    status: int
    # Decoded JSON: a KubeObject for an object's request, a ListBody for a LIST page, a Status for a
    # DELETE; the text when not JSON (a pod's log); None when empty. Any: the caller knows which it
    # asked for, and a union would make each caller narrow what it already knows.
    body: Any
    warnings: list[str]
