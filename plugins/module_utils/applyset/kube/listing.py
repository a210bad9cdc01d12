"""What a run reads before it writes: LISTs of (resource, namespace) pairs in parallel, the
recorded scope of a set, and the live objects they give (``LiveObject``).

Reads only; any failed LIST stops the run before its first write.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..object_meta import KubeObject, ObjectMeta, metadata_of
from .api import KubeApi
from .. import spec
from ..errors import ApiError, ApplySetError
from .discovery import Discovery, Resource
from .list_errors import explain_error

if TYPE_CHECKING:  # names for annotations only: the parent is a layer above, versions imports this module
    from ..parent.model import Parent
    from .versions import VersionFallback

# One LIST: a resource and a namespace (None: cluster-scoped, or across all namespaces).
ListPair = tuple[Resource, "str | None"]
# ``list_pairs``' answer: the items of each pair, keyed by the resource of the version that answered.
Listed = dict[ListPair, list[KubeObject]]


@dataclass(frozen=True)
class LiveObject:
    """One listed object: the ``resource`` it was listed under and the object as listed (a whole
    object, or ``{"metadata": ...}`` from a metadata-only LIST)."""

    resource: Resource
    obj: KubeObject

    @property
    def meta(self) -> ObjectMeta:
        """Its metadata as listed (a LIST item always has one)."""
        return metadata_of(self.obj)

    @property
    def uid(self) -> str | None:
        """Its UID, when listed with one."""
        return self.meta.get("uid")

    @property
    def key(self) -> spec.ObjectId:
        """Its identity (group, kind, namespace, name)."""
        return spec.ObjectId.from_metadata(self.resource, self.meta)


@dataclass(frozen=True)
class ListScope:
    """Where a set's members may live: the (resource, namespace) pairs to LIST, the recorded kinds
    whose members cannot be listed (they stay in the hint), and warnings about both."""

    pairs: tuple[ListPair, ...]
    not_listed: frozenset[spec.GroupKind]
    warnings: tuple[str, ...]


def recorded_scope(parent: Parent, discovery: Discovery) -> ListScope:
    """The pairs where members of ``parent``'s set may live: its hint as recorded before this run.

    Args:
        parent: the run's ``parent.model.Parent``.
        discovery: what the server serves.
    """
    namespaces = sorted(parent.namespaces)
    pairs: list[ListPair] = []
    warnings: list[str] = []
    not_listed = set(parent.unlistable_group_kinds)
    for gk in sorted(parent.group_kinds):
        res = cast(Resource, discovery.for_group_kind(gk))  # group_kinds holds served kinds only (parent.read)
        if "list" not in res.verbs and res.verbs:
            warnings.append(f"{gk} cannot be listed, so its members cannot be pruned; it stays in the hint")
            not_listed.add(gk)
            continue
        if res.namespaced:
            if not namespaces:
                warnings.append(f"{gk} is namespaced but the parent records no namespaces; nothing of it can be pruned")
            pairs += [(res, ns) for ns in namespaces]
        else:
            pairs.append((res, None))
    return ListScope(tuple(pairs), frozenset(not_listed), tuple(warnings))


def list_each(client: KubeApi, pairs: Sequence[ListPair], selector_for: Callable[[ListPair], str | None],
              full_for: Collection[ListPair] = frozenset(), fallback: VersionFallback | None = None,
              ) -> list[tuple[ListPair, Resource, list[KubeObject] | ApplySetError]]:
    """LIST each (resource, namespace) pair in parallel; a failure is returned in place of its items.

    Args:
        client: the ``client.KubeClient``.
        pairs: the pairs to list, in the order the requests should go out.
        selector_for: ``pair -> label selector or None``.
        full_for: pairs listed as whole objects (each item gets the apiVersion and kind of the
            version that answered); the others are listed metadata only.
        fallback: a ``versions.VersionFallback``: a pair whose LIST fails at its version is listed
            at another served version (None: never).

    Returns:
        ``[(pair, resource, items or error)]`` in the order of ``pairs``; ``resource`` is the one
        of the version that answered (the pair's own on a failure).

    Raises:
        Exception: anything but an ``ApplySetError`` from a LIST.
    """

    def fetch(pair: ListPair) -> tuple[Resource, list[KubeObject]]:
        res, ns = pair
        full = pair in full_for
        kwargs: dict[str, Any] = {"label_selector": selector_for(pair), "metadata_only": not full}
        used, items = (fallback.list(res, ns, **kwargs) if fallback is not None
                       else (res, list(client.list(res, ns, **kwargs))))
        if full:
            for item in items:  # LIST items carry no apiVersion/kind of their own
                item.setdefault("apiVersion", used.api_version)
                item.setdefault("kind", used.kind)
        return used, items

    found: list[tuple[ListPair, Resource, list[KubeObject] | ApplySetError]] = []
    for pair, answer in zip(pairs, client.map(fetch, pairs)):
        if isinstance(answer, ApplySetError):
            found.append((pair, pair[0], answer))
        elif isinstance(answer, Exception):
            raise answer
        else:
            found.append((pair, *answer))
    return found


def failure_of(err: Exception, pair: ListPair, obj: str) -> Exception:
    """The error that stops a run whose LIST of ``pair`` failed with ``err``: credential advice
    only for a 401 or 403, any other failure named as what it is (``list_errors.explain``)."""
    if not isinstance(err, ApiError):
        return err
    res, ns = pair
    where = f" in namespace {ns}" if ns else ""
    why = explain_error(err, res, ns)
    if why.credentials:
        return ApplySetError(f"listing {res.group_kind} objects{where} failed: {err.message}", obj=obj,
                             fix="the credentials need list on every kind the set records; nothing was changed")
    return ApplySetError(f"listing {res.group_kind} objects{where} failed: {why.what}: {err.message}", obj=obj,
                         fix=f"{why.fix}; nothing was changed")


def list_pairs(client: KubeApi, pairs: Sequence[ListPair], selector_for: Callable[[ListPair], str | None], obj: str,
               full_for: Collection[ListPair] = frozenset(), fallback: VersionFallback | None = None) -> Listed:
    """LIST each (resource, namespace) pair in parallel (``list_each``); any failure stops the run.

    Args:
        client: the ``client.KubeClient``.
        pairs: the pairs to list, in the order the requests should go out.
        selector_for: ``pair -> label selector or None``.
        obj: what a failure names (``ApplySet <parent>``).
        full_for: pairs listed as whole objects; the others are listed metadata only.
        fallback: a ``versions.VersionFallback``, or None.

    Returns:
        ``{(resource, namespace): [items]}``, keyed by the resource of the version that answered
        (the pair's own, unless ``fallback`` listed it at another).

    Raises:
        ApplySetError: a LIST failed (nothing was changed).
    """
    listed: Listed = {}
    for pair, used, items in list_each(client, pairs, selector_for, full_for, fallback):
        if isinstance(items, Exception):
            raise failure_of(items, pair, obj)
        listed[(used, pair[1])] = items
    return listed


def live_objects(listed: Listed) -> list[LiveObject]:
    """The items of ``list_pairs``' answer as ``LiveObject`` values, pair by pair."""
    return [LiveObject(res, item) for (res, _ns), items in listed.items() for item in items]
