"""What an approved plan binds beside the bodies' digests: the values of each Secret it sends,
and the starting point of each member it configures.

A body's digest leaves a Secret's values out (``nochange.request_digest``: an unkeyed hash of a
short password can be guessed offline), so on its own a plan would approve a Secret whatever
its values. ``values_digest`` binds them with a keyed digest (HMAC-SHA256) instead: the key is
the set's plan key (``parent/plan_key.py``), random, kept in the parent Secret's data, so it is
readable only with the rights that read the Secret values themselves, and it is never in a
result, a plan or a log. Whoever reads the plan cannot test a guess of a value against it.

A member the plan configures would be written over whatever the cluster holds when the run
comes: ``start_digest`` binds what it holds at the preview, in the fields the plan sends (the
live object projected onto the body), so that a change made there since (``kubectl set image``
of a hotfix) changes the plan and is named, while a field only others set does not. A Secret's
projection is keyed as well; without a key its values are left out of it.

Both fields are set only on the entries they concern, so the id of a plan without Secrets or
members to configure is what it was. Pure: values in, a value out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from . import server_form
from ..object_meta import KubeObject
from .field_policy import HIDDEN  # a field left to others: not projected
from ..inputs import redact

_CHARS = 16  # of the base64url digest: 96 bits
_VALUES = ("data", "stringData")
_ABSENT = {"(absent)": True}  # what the projection holds where the live object has no value


def values_digest(body: KubeObject, key: bytes | None) -> str | None:
    """The keyed digest of a Secret body's ``data`` and ``stringData`` values; None for anything
    else, for a Secret without values, and without a ``key``."""
    if key is None or not redact.is_secret(body):
        return None
    values = {name: body[name] for name in _VALUES if isinstance(body.get(name), dict)}
    return _short(hmac.new(key, b"values\0" + _json(values).encode("utf-8"), hashlib.sha256).digest())


def start_digest(body: KubeObject, live: KubeObject, key: bytes | None) -> str:
    """The digest of what ``live`` holds in the fields ``body`` sends.

    Args:
        body: the body the run would send (a field whose value is ``HIDDEN`` is left to others
            and not projected).
        live: the live object as a full-object LIST returned it.
        key: the set's plan key: a Secret's projection is keyed with it; without it the Secret's
            values are left out.

    Returns:
        16 base64url characters.
    """
    shape = server_form.as_stored(body)
    projection = _project(shape, live)
    if not redact.is_secret(body):
        return _short(hashlib.sha256(b"start\0" + _json(projection).encode("utf-8")).digest())
    if key is None:
        projection = {name: value for name, value in projection.items() if name not in _VALUES}
        return _short(hashlib.sha256(b"start\0" + _json(projection).encode("utf-8")).digest())
    return _short(hmac.new(key, b"start\0" + _json(projection).encode("utf-8"), hashlib.sha256).digest())


def _project(shape: object, live: object) -> Any:  # a JSON value: a map for a map (start_digest reads its items)
    """``live`` cut to the fields of ``shape``: maps by key; lists of maps by ``name`` where they
    carry one (containers, env, volumes: the order may differ), else by index; anything else
    (a scalar, a list of scalars, which the server keeps whole) as ``live`` holds it."""
    if isinstance(shape, dict) and isinstance(live, dict):
        return {k: _project(v, live.get(k, _ABSENT)) for k, v in shape.items() if v != HIDDEN}
    if isinstance(shape, list) and isinstance(live, list) and any(isinstance(s, dict) for s in shape):
        return [_project(item, _element(item, index, live)) for index, item in enumerate(shape)]
    return live


def _element(item: object, index: int, live: list) -> object:
    if isinstance(item, dict) and "name" in item:
        return next((x for x in live if isinstance(x, dict) and x.get("name") == item["name"]), _ABSENT)
    return live[index] if index < len(live) else _ABSENT


def _short(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii")[:_CHARS]


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
