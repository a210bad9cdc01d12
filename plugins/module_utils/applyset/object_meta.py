"""The metadata of a Kubernetes object as the API server sent it (a decoded JSON ``dict``), read one way.

An object from a LIST, a GET, a watch event or the input may lack ``metadata`` or any key of it,
and a missing object is None: each reader answers ``{}`` or None then, instead of raising. The
rest of the object (spec, status) is the kind's, read by the rules that know it.
"""

from __future__ import annotations

from collections.abc import Mapping


def metadata_of(obj: Mapping | None) -> dict:
    """``obj.metadata``; ``{}`` when ``obj`` is None or has none."""
    return (obj or {}).get("metadata") or {}


def name_of(obj: Mapping | None) -> str | None:
    """``metadata.name``, or None."""
    return _text(metadata_of(obj).get("name"))


def uid_of(obj: Mapping | None) -> str | None:
    """``metadata.uid``, or None (not created yet, or a dry run's)."""
    return _text(metadata_of(obj).get("uid"))


def labels_of(obj: Mapping | None) -> dict[str, str]:
    """``metadata.labels``; ``{}`` when there are none."""
    return metadata_of(obj).get("labels") or {}


def annotations_of(obj: Mapping | None) -> dict[str, str]:
    """``metadata.annotations``; ``{}`` when there are none."""
    return metadata_of(obj).get("annotations") or {}


def _text(value: object) -> str | None:
    """``value`` when it is a string (as the API server sends names and UIDs), else None."""
    return value if isinstance(value, str) else None
