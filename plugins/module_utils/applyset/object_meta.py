"""The metadata of a Kubernetes object as the API server sent it (a decoded JSON ``dict``), read one way.

An object from a LIST, a GET, a watch event or the input may lack ``metadata`` or any key of it,
and a missing object is None: each reader answers ``{}`` or None then, instead of raising. The
rest of the object (spec, status) is the kind's, read by the rules that know it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast

KubeObject = dict[str, Any]
"""A Kubernetes object as the API server sent it or the input gave it: decoded JSON, whose
``apiVersion``, ``kind`` and ``metadata`` every kind shares and whose other fields (spec, status,
data ...) are the kind's. A name for the bare ``dict`` rather than a class or a TypedDict: the
core holds tens of thousands of them, read mostly to be sent on, and a TypedDict refuses the
kinds' own fields; the parts every kind shares are typed below (``ObjectMeta``, ``Condition``)."""


class OwnerReference(TypedDict, total=False):
    """One of ``metadata.ownerReferences``."""

    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


FieldsV1 = dict[str, Any]
"""A FieldsV1 trie: keys ``f:name``, ``k:{...}``, ``v:...``, ``i:N`` or ``"."`` (the node is a field
of its own), each value the trie under it (``{}`` for a leaf)."""


class ManagedFieldsEntry(TypedDict, total=False):
    """One of ``metadata.managedFields``: what one field manager owns, by one operation."""

    manager: str
    operation: str  # "Apply" or "Update"
    apiVersion: str
    time: str
    fieldsType: str  # "FieldsV1"
    fieldsV1: FieldsV1
    subresource: str


class ObjectMeta(TypedDict, total=False):
    """``metadata``, as every kind has it (the fields the core reads; any may be missing)."""

    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]
    finalizers: list[str]
    managedFields: list[ManagedFieldsEntry]


class Condition(TypedDict, total=False):
    """One of ``status.conditions``, as kstatus and the controllers write it."""

    type: str
    status: str  # "True", "False" or "Unknown"
    reason: str
    message: str
    observedGeneration: int
    lastTransitionTime: str


# ``metadata`` of a LIST's answer (a ListMeta, not an ObjectMeta): ``continue`` is a keyword in Python.
ListMeta = TypedDict("ListMeta", {"resourceVersion": str, "continue": str, "remainingItemCount": int}, total=False)


def metadata_of(obj: Mapping[str, Any] | None) -> ObjectMeta:
    """``obj.metadata``; ``{}`` when ``obj`` is None or has none."""
    return cast(ObjectMeta, (obj or {}).get("metadata") or {})


def list_meta_of(body: Mapping[str, Any] | None) -> ListMeta:
    """A LIST answer's ``metadata`` (its resourceVersion and continue token); ``{}`` when it has none."""
    return cast(ListMeta, (body or {}).get("metadata") or {})


def managed_fields_of(obj: KubeObject | None) -> list[ManagedFieldsEntry]:
    """The entries of ``obj``'s ``metadata.managedFields`` that are objects, in order; [] when none."""
    return [e for e in metadata_of(obj).get("managedFields") or () if isinstance(e, dict)]


def generation_of(obj: Mapping[str, Any] | None) -> int | None:
    """``metadata.generation``, or None (a kind the server does not count generations of)."""
    generation = metadata_of(obj).get("generation")
    return generation if isinstance(generation, int) else None


def conditions_of(obj: Mapping[str, Any] | None) -> list[Condition]:
    """``status.conditions`` that are objects with a type, in the order the controller wrote them."""
    status = (obj or {}).get("status")
    found = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(found, list):
        return []
    return [cast(Condition, c) for c in found if isinstance(c, dict) and c.get("type")]


def name_of(obj: Mapping[str, Any] | None) -> str | None:
    """``metadata.name``, or None."""
    return _text(metadata_of(obj).get("name"))


def uid_of(obj: Mapping[str, Any] | None) -> str | None:
    """``metadata.uid``, or None (not created yet, or a dry run's)."""
    return _text(metadata_of(obj).get("uid"))


def labels_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    """``metadata.labels``; ``{}`` when there are none."""
    return metadata_of(obj).get("labels") or {}


def annotations_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    """``metadata.annotations``; ``{}`` when there are none."""
    return metadata_of(obj).get("annotations") or {}


def _text(value: object) -> str | None:
    """``value`` when it is a string (as the API server sends names and UIDs), else None."""
    return value if isinstance(value, str) else None
