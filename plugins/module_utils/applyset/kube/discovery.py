"""What the API server serves: its resources, from one discovery pass per run.

``Discovery`` answers lookups by group, version and kind or by the names kubectl accepts; a
``Resource`` knows the URL path of its collection and of its objects. ``discovery_pass.discover``
reads them from the server.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from ..spec import GroupKind


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

    def __init__(self, resources: list[Resource]) -> None:
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
