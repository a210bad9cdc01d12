"""What a run reads first, sent together: discovery and the parent's GET in one round trip.

The parent's resource is known without discovery when it is a Secret or a ConfigMap (the
default, ``secrets/NAME``, ``configmaps/NAME``, or a reference of those kinds): core ``v1``,
served by every API server. ``discover_and_read`` then sends its GET together with discovery,
and hands back the client wrapped so that the parent's first read is answered from it
(``Prefetched``): one round trip less on every run, and nothing read twice. Any other parent,
and a client that sends one request at a time, reads after discovery as before.
"""

from __future__ import annotations

from typing import Any, cast

from ..kube.api import KubeApi
from ..kube.discovery import Discovery, Resource
from ..errors import ApiError, ApplySetError
from ..object_meta import KubeObject
from .resolve import resolve

_VERBS = frozenset({"create", "delete", "get", "list", "patch", "update", "watch"})
# The parent kinds every API server serves, as discovery would describe them.
CORE_PARENTS = Discovery([Resource("", "v1", "Secret", "secrets", True, _VERBS, "secret"),
                          Resource("", "v1", "ConfigMap", "configmaps", True, _VERBS, "configmap", ("cm",))])
_USED = object()


def parent_path(parent_spec: object, namespace: str | None) -> str | None:
    """The URL path of a Secret or ConfigMap parent named by reference, or None (another kind, a
    full definition, or input that the real resolution will refuse with its own message)."""
    try:
        res, name, ns, definition = resolve(CORE_PARENTS, parent_spec, namespace)
    except ApplySetError:
        return None
    return None if definition is not None else res.path(ns or None, name)


class Prefetched:
    """``client``, with the GET of ``path`` answered already (``answer``: the object, None when it
    does not exist, or the error to raise). The first ``get`` of that path takes it; anything
    else, and every later read, goes to the server."""

    def __init__(self, client: KubeApi, path: str, answer: KubeObject | Exception | None) -> None:
        self._client = client
        self._path = path
        self._answer: object = answer  # _USED once taken

    def get(self, res: Resource, name: str, namespace: str | None = None) -> KubeObject | None:
        """As ``kube.client.KubeClient.get``."""
        if self._answer is not _USED and res.path(namespace, name) == self._path:
            answer, self._answer = self._answer, _USED
            if isinstance(answer, Exception):
                raise answer
            return cast("KubeObject | None", answer)
        return self._client.get(res, name, namespace)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._client, attr)


def discover_and_read(client: KubeApi, parent_spec: object, namespace: str | None) -> tuple[Discovery, KubeApi]:
    """``(discovery, reader)``: one discovery pass, and the client to read the parent with (the
    parent's GET sent together with discovery where its path is known beforehand).

    Raises as ``kube.client.KubeClient.discover``; an error of the parent's GET is raised when it is read.
    """
    path = parent_path(parent_spec, namespace)
    if path is None or getattr(client, "parallelism", 1) <= 1:
        return client.discover(), client

    def fetch(which: str) -> Discovery | KubeObject | None:
        if which == "discovery":
            return client.discover()
        try:
            return client.request("GET", path).body
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    found, answer = client.map(fetch, ["discovery", "parent"])
    if isinstance(found, Exception):
        raise found
    return found, Prefetched(client, path, answer)
