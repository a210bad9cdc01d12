"""One discovery pass: what the API server serves, read through the client given.

``discover`` asks for aggregated discovery (two requests) and falls back to one request per
group version on a server without it, and returns a ``discovery.Discovery``. The requests go
through the client (a ``api.KubeApi``): nothing here opens a connection of its own.
"""

from __future__ import annotations

from typing import Any

from ..errors import ApiError, ApplySetError
from .api import KubeApi
from .discovery import Discovery, Resource
from .http_errors import forbidden_discovery

# The Accept header of the two aggregated discovery requests; a server without it answers the
# legacy documents (APIVersions, APIGroupList) instead.
AGGREGATED_DISCOVERY = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)
# A discovery document (APIGroupDiscoveryList, APIVersions, APIGroupList, APIResourceList) or a group of
# one: decoded JSON read as the server sent it; a malformed one raises one of _MALFORMED on the way.
DiscoveryDoc = dict[str, Any]
# What a malformed discovery document raises while it is read.
_MALFORMED = (AttributeError, KeyError, TypeError, ValueError)


def _resources_from_aggregated(groups: list[DiscoveryDoc]) -> list[Resource]:
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


def _resources_from_legacy(group: str, version: str, doc: DiscoveryDoc) -> list[Resource]:
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


def discover(client: KubeApi) -> Discovery:
    """One discovery pass through ``client`` (a ``client.KubeClient``: its ``request`` and ``map``):
    aggregated discovery (2 requests) where served, else one request per group version (an
    unavailable aggregated API is skipped).

    Returns:
        The ``Discovery`` of every resource served, in preference order.

    Raises:
        AuthenticationFailed: discovery refused (401, or 403 for anonymous or unbound users).
        ApiError: another HTTP error, or discovery documents that are malformed.
        ConnectionFailed: no answer.
    """
    def fetch(path: str) -> DiscoveryDoc:
        return client.request("GET", path, accept=AGGREGATED_DISCOVERY).body

    # Both at once (one round trip, not two), unless the client sends one request at a time.
    if getattr(client, "parallelism", 1) > 1:
        answers = client.map(fetch, ["/api", "/apis"])
    else:
        answers = []
        for path in ("/api", "/apis"):
            try:
                answers.append(fetch(path))
            except ApplySetError as err:
                answers.append(err)
                break
    for answer in answers:
        if isinstance(answer, ApiError) and answer.status == 403:
            raise forbidden_discovery(client.host, client.source, answer) from None
        if isinstance(answer, ApplySetError):
            raise answer
    core, groups = answers
    try:
        if (isinstance(core, dict) and core.get("kind") == "APIGroupDiscoveryList"
                and isinstance(groups, dict) and groups.get("kind") == "APIGroupDiscoveryList"):
            return Discovery(_resources_from_aggregated(core.get("items", []) + groups.get("items", [])))
        return _legacy_discovery(client, core, groups)
    except _MALFORMED as err:
        raise ApiError(f"the API server's discovery documents are malformed ({type(err).__name__}: {err})",
                       fix="check the API server (or the proxy in front of it): /api and /apis must answer "
                       "with discovery documents") from None


def _legacy_versions(core: DiscoveryDoc, groups: DiscoveryDoc) -> list[tuple[str, str]]:
    """Every ``(group, version)`` the legacy documents ``/api`` and ``/apis`` list, each group's
    preferred version first."""
    versions = [("", v) for v in core.get("versions", ["v1"])]
    for group in groups.get("groups", []):
        preferred = group.get("preferredVersion", {}).get("version")
        ordered = sorted(group.get("versions", []), key=lambda v: v["version"] != preferred)
        versions += [(group["name"], v["version"]) for v in ordered]
    return versions


def _legacy_discovery(client: KubeApi, core: DiscoveryDoc, groups: DiscoveryDoc) -> Discovery:
    def fetch(group_version: tuple[str, str]) -> list[Resource]:
        group, version = group_version
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            doc = client.request("GET", path).body
        except ApiError:
            return []  # an unavailable aggregated API must not break the run
        try:
            return _resources_from_legacy(group, version, doc)
        except _MALFORMED as err:
            raise ApiError(f"the discovery document of {path} is malformed ({type(err).__name__}: {err})",
                           fix="check the API server (or the aggregated API serving it)") from None

    resources: list[Resource] = []
    for found in client.map(fetch, _legacy_versions(core, groups)):
        if isinstance(found, ApplySetError):
            raise found
        resources += found
    return Discovery(resources)
