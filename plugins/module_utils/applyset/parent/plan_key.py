"""The set's plan key: the secret that keys the digests of Secret values in a plan
(``rules/plan_bind.py``).

It is 32 random bytes in the parent Secret's ``data`` (``DATA_KEY``), written with the parent
the first time a run writes it: readable only by those who may read Secrets in the parent's
namespace, which is what reading the values themselves takes, and never shown (results pass
through ``redact.hide_secret_data``, and ``Parent`` keeps it out of its repr). A parent of
another kind has none: a ConfigMap or a custom resource is readable by many more, so the
Secret values of such a set are not bound by its plans (the plan step says so).

The key is written by the parent's create (an Update operation) and by each apply of the
parent, so a later apply that leaves it out (an older version's, or a repair's) does not remove
it. A set that lost it gets a new one at its next write; plans approved before that are then
refused as stale, never taken for approved. Pure: no requests.
"""

from __future__ import annotations

import base64
import binascii
import secrets

from ..kube.discovery import Resource
from ..object_meta import KubeObject
from .. import spec

DATA_KEY = "applyset.kubernetes.plan-key"
_BYTES = 32


def holds_key(resource: Resource) -> bool:
    """Whether a parent served by ``resource`` keeps a plan key (a Secret does)."""
    return resource.group_kind == spec.SECRET_KIND


def read(resource: Resource, obj: KubeObject | None) -> bytes | None:
    """The plan key a parent object holds, or None (another kind, none yet, or not readable)."""
    if obj is None or not holds_key(resource):
        return None
    text = (obj.get("data") or {}).get(DATA_KEY)
    if not isinstance(text, str):
        return None
    try:
        key = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return key if len(key) >= _BYTES else None


def new() -> bytes:
    """A new random plan key."""
    return secrets.token_bytes(_BYTES)


def data(key: bytes) -> dict[str, str]:
    """The parent's ``data`` holding ``key``."""
    return {DATA_KEY: base64.b64encode(key).decode("ascii")}
