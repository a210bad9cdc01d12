"""Listing a recorded kind at a version that works.

Recorded kinds are listed at the version discovery prefers. A LIST at that version can fail
where another version's would not: a CustomResourceDefinition whose conversion webhook is down
answers 500 to every LIST that needs a conversion, while its objects can still be read at the
version they are stored at. ``VersionFallback.list`` then tries the kind's other served
versions, the CRD's storage version first (objects stored at that version need no
conversion). Which version answered only changes how the objects are read: a group, kind,
namespace and name are the same at every version, and so is everything decided about them.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any

from ..object_meta import KubeObject
from ..spec import GroupKind
from .api import KubeApi
from ..errors import ApiError
from .discovery import CRD_RESOURCE, Discovery, Resource
from .list_errors import explain_error


def may_help(err: ApiError) -> bool:
    """Whether another version's LIST may succeed where this one failed: the server failed (5xx), or
    a conversion webhook did (kube-apiserver 1.34 answers 429 "storage is (re)initializing: ...
    conversion webhook ... failed" while its watch cache cannot fill); refused credentials, a
    throttle or a kind gone fail the same at every version."""
    if not isinstance(err, ApiError) or not err.status:
        return False
    return err.status >= 500 or "conversion webhook" in (err.message or "").lower()


class VersionFallback:
    """The other served versions of a kind whose LIST failed, and the LISTs made at them.

    ``notes`` says, once per kind, which version answered instead and why (a run's warnings).
    ``only``: the (resource, namespace) pairs that may fall back (None: every pair); a pair listed
    at the version of its manifest keeps it.
    """

    def __init__(self, client: KubeApi, discovery: Discovery,
                 only: Collection[tuple[Resource, str | None]] | None = None) -> None:
        self.client = client
        self.discovery = discovery
        self.only = only
        self._storage: dict[GroupKind, str | None] = {}
        self._notes: dict[str, str] = {}
        self._lock = threading.Lock()

    @property
    def notes(self) -> list[str]:
        """One line per kind listed at another version, sorted."""
        return [self._notes[key] for key in sorted(self._notes)]

    def storage_version(self, res: Resource) -> str | None:
        """The storage version of ``res``'s CustomResourceDefinition (one GET per kind and run), or
        None for a built-in kind or a CRD that cannot be read."""
        if "." not in res.group:  # a CRD's group always has a dot; built-in groups mostly do not
            return None
        with self._lock:
            if res.group_kind not in self._storage:
                try:
                    crd = self.client.get(CRD_RESOURCE, f"{res.plural}.{res.group}")
                except ApiError:
                    crd = None
                versions = ((crd or {}).get("spec") or {}).get("versions") or []
                self._storage[res.group_kind] = next(
                    (v.get("name") for v in versions if isinstance(v, dict) and v.get("storage")), None)
            return self._storage[res.group_kind]

    def alternatives(self, res: Resource) -> list[Resource]:
        """The other listable served versions of ``res``'s kind: the storage version first, then in
        discovery's order of preference."""
        others = [r for r in self.discovery.resources
                  if r.group_kind == res.group_kind and r.version != res.version
                  and (not r.verbs or "list" in r.verbs)]
        if not others:
            return []
        storage = self.storage_version(res)
        return sorted(others, key=lambda r: r.version != storage)  # stable: preference order kept

    def list(self, res: Resource, namespace: str | None, **kwargs: Any) -> tuple[Resource, list[KubeObject]]:
        """LIST ``res`` in ``namespace`` (``kwargs`` as ``KubeClient.list``), at another served
        version when the preferred one fails in a way another may not.

        Returns:
            ``(resource, items)``: the resource of the version that answered, and the items.

        Raises:
            ApiError: the first failure, when no version answered.
        """
        try:
            return res, list(self.client.list(res, namespace, **kwargs))
        except ApiError as err:
            if not may_help(err) or (self.only is not None and (res, namespace) not in self.only):
                raise
            first = err
        for other in self.alternatives(res):
            try:
                items = list(self.client.list(other, namespace, **kwargs))
            except ApiError:
                continue
            storage = " (the storage version of its CustomResourceDefinition)" if (
                other.version == self.storage_version(res)) else ""
            with self._lock:
                self._notes.setdefault(
                    str(res.group_kind),
                    f"{res.group_kind}: listing at {res.api_version} failed ({explain_error(first, res).what}); "
                    f"listed at {other.api_version}{storage} instead")
            return other, items
        raise first
