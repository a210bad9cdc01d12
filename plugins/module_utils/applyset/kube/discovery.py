"""What the API server serves: its resources, from one discovery pass per run.

``discover`` asks for aggregated discovery (two requests) and falls back to one request per
group version on a server without it; ``Discovery`` answers lookups by group, version and kind
or by the names kubectl accepts. A ``Resource`` knows the URL path of its collection and of its
objects. The requests go through the client given (``client.KubeClient``): nothing here opens a
connection of its own.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from ..errors import ApiError, ApplySetError
from .http_errors import forbidden_discovery
from ..spec import GroupKind

# The Accept header of the two aggregated discovery requests; a server without it answers the
# legacy documents (APIVersions, APIGroupList) instead.
AGGREGATED_DISCOVERY = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)
# What a malformed discovery document raises while it is read.
_MALFORMED = (AttributeError, KeyError, TypeError, ValueError)


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
        """The ``apiVersion`` of its objects: ``apps/v1``, or ``v1`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_kind(self) -> GroupKind:
        """Its group and kind, without the version (what an ApplySet parent records)."""
        return GroupKind(self.group, self.kind)

    def parent_ref(self, name: str) -> str:
        """kubectl's reference to an ApplySet parent of this resource named ``name``, as in its
        messages: ``secrets./shop``."""
        return f"{self.plural}.{self.group}/{name}"

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The URL path of the collection, or of the object ``name`` in it.

        ``namespace`` is used only for a namespaced resource; without it the path lists across all
        namespaces. Both are URL-quoted.
        """
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{urllib.parse.quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{urllib.parse.quote(name, safe='')}"
        return base


# The definitions of custom resources and aggregated APIs, read where discovery alone cannot tell.
CRD_RESOURCE = Resource(group="apiextensions.k8s.io", version="v1", kind="CustomResourceDefinition",
                        plural="customresourcedefinitions", namespaced=False)
APISERVICE_RESOURCE = Resource(group="apiregistration.k8s.io", version="v1", kind="APIService",
                               plural="apiservices", namespaced=False)


class Discovery:
    """What the server serves, from one discovery pass per run.

    ``resources`` are in preference order: where a kind is served in several versions, the
    first one is the preferred version, and the lookups return it. A lookup that finds nothing
    returns None (or ``[]``); it never raises.
    """

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

    def for_gvk(self, group: str, version: str, kind: str) -> Resource | None:
        """The resource of ``kind`` in exactly this ``group`` and ``version``."""
        return self._by_gvk.get((group, version, kind))

    def for_group_kind(self, gk: GroupKind) -> Resource | None:
        """The preferred version's resource of the group and kind ``gk``."""
        return self._by_gk.get(gk)

    def with_kind(self, kind: str) -> list[Resource]:
        """The resource in every group that serves ``kind`` (to suggest the right apiVersion)."""
        return [res for gk, res in self._by_gk.items() if gk.kind == kind]

    def for_resource(self, group: str, name: str) -> Resource | None:
        """The resource that ``name`` names in ``group``: its plural (``secrets``), singular, kind in
        lower case or a short name, in any case, like kubectl's RESTMapper."""
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


def discover(client) -> Discovery:
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
    def fetch(path):
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


def _legacy_versions(core: dict, groups: dict) -> list[tuple[str, str]]:
    """Every ``(group, version)`` the legacy documents ``/api`` and ``/apis`` list, each group's
    preferred version first."""
    versions = [("", v) for v in core.get("versions", ["v1"])]
    for group in groups.get("groups", []):
        preferred = group.get("preferredVersion", {}).get("version")
        ordered = sorted(group.get("versions", []), key=lambda v: v["version"] != preferred)
        versions += [(group["name"], v["version"]) for v in ordered]
    return versions


def _legacy_discovery(client, core: dict, groups: dict) -> Discovery:
    def fetch(group_version):
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

    resources = []
    for found in client.map(fetch, _legacy_versions(core, groups)):
        if isinstance(found, ApplySetError):
            raise found
        resources += found
    return Discovery(resources)
