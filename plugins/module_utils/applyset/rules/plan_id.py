"""The plan of a run as a compact, stable list, and its id: one digest of what a real run would do.

A run computes its plan after its reads and before its first write, from what it already
decided (no request of its own): the set's identity, each member's identity, action and the
digest of the body it would send, each prune's identity and UID, the hooks that would run and
the order. The plan is a list of small dicts (``entry``), sorted (``canonical``); its id is
``plan-v1:`` + the first 24 hex digits of the sha256 of its canonical JSON (``digest``). The
version is in the id, so that an id made by a later change of the digested fields is told
apart from a stale one.

What is not in the plan cannot change its id: resourceVersions, timestamps, status, and fields
other managers own that the plan does not send. A member's action says whether the live object
already holds every value the run sends (``nochange.py``: ``unchanged``) or not (``configure``),
so a label someone else added leaves it as it was, and a value of ours that someone changed
makes it ``configure``. A body's digest is the applied-digest annotation the run already
computed (``nochange.request_digest``): a Secret's values are not in it (its keys are), as they
are kept out of every unkeyed digest the collection shows; they are bound by the entry's
``values``, a keyed digest, and a member to configure by its ``start``, the live values it starts
from (``plan_bind.py``). Fields ``ignore_fields`` leaves to others are hidden in it too.

Pure: values in, a value out; the same input gives the same id on every Python (sorted keys,
no ``hash()``, no set order).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..object_meta import KubeObject, annotations_of
from . import nochange
from .. import spec

PLAN_VERSION = "plan-v1"
ID_HEX_DIGITS = 24
_BODY_CHARS = 16  # of a body's base64url digest: 96 bits, enough to tell two bodies apart

# The actions of a plan's entries.
SET_APPLY, SET_UNINSTALL, SET_DISBAND = "apply", "uninstall", "disband"  # the set entry
CREATE, CONFIGURE, UNCHANGED, SKIP = "create", "configure", "unchanged", "skip"  # members
ADOPT, CREATE_NAMESPACE, RUN_HOOK = "adopt", "create-namespace", "run-hook"
PRUNE, KEEP, LEAVE = "prune", "keep", "leave"  # prune candidates: deleted, kept by annotation, left to their controller
DELETE, UNLABEL = "delete", "unlabel"  # uninstall, disband
RETIRE_HELM_RELEASE = "retire-helm-release"  # helm.take_over: the release's records deleted

# plan_digests.py: a plan published as digests, each entry in 11 characters - 6 of its object's
# digest, 1 for its action, 4 of the rest's digest. Here so that plan_diff reads them without it.
DIGEST_KEY_CHARS, DIGEST_TOKEN_CHARS = 6, 11

# One entry of a plan: ``object`` and ``action``, and the fields ``entry`` sets. Decoded JSON: an approved
# plan's entries come from the user (``plan_diff.parse_approved`` checks only ``object`` and ``action``).
PlanEntry = dict[str, Any]

MEMBER_ACTIONS = frozenset({CREATE, CONFIGURE, UNCHANGED, SKIP})
SET_ACTIONS = frozenset({SET_APPLY, SET_UNINSTALL, SET_DISBAND})


def ref_of(key: spec.ObjectId) -> str:
    """How the plan names an object: ``Kind namespace/name``, with ``.group`` after a kind of a
    named group (``Deployment.apps shop/web``), so that two kinds of one name stay apart."""
    kind = f"{key.kind}.{key.group}" if key.group else key.kind
    return f"{kind} {key.namespace}/{key.name}" if key.namespace else f"{kind} {key.name}"


def entry(obj: str, action: str, **fields: object) -> PlanEntry:
    """One entry of a plan: ``object`` (its ``ref_of``), ``action`` and the ``fields`` that are set
    (an empty or None value is left out, so that adding a field later keeps old ids)."""
    out: PlanEntry = {"object": obj, "action": action}
    out.update((name, value) for name, value in sorted(fields.items()) if value not in (None, "", [], ()))
    return out


def body_digest(body: KubeObject) -> str:
    """The short digest of a body the run would send: its applied-digest annotation (set by the
    plan step, and by ``ignore_fields`` over the manifest's own values), else computed the same way."""
    annotations = annotations_of(body)
    digest = annotations.get(spec.ANNOTATION_APPLIED_DIGEST) or nochange.request_digest(body)
    return digest.partition(":")[2][:_BODY_CHARS]


def entry_key(item: PlanEntry) -> tuple[str, str]:
    """What tells two entries of one plan apart: the object, and a hook's phase (a hook may run
    in two phases)."""
    return (str(item.get("object", "")), str(item.get("phase", "")))


def canonical(entries: list[PlanEntry]) -> list[PlanEntry]:
    """The plan as it is digested and shown: the set's entry first, then by object."""
    # Two entries of one key never come from one run; the action and the UID still order a hand-made plan.
    return sorted(entries, key=lambda e: (e.get("action") not in SET_ACTIONS,
                                          entry_key(e), str(e.get("action", "")), str(e.get("uid", ""))))


def digest(plan: list[PlanEntry]) -> str:
    """The plan's id: ``plan-v1:`` and 24 hex digits of the sha256 of its canonical JSON."""
    return f"{PLAN_VERSION}:" + hashlib.sha256(_json(canonical(plan)).encode("utf-8")).hexdigest()[:ID_HEX_DIGITS]


def parse_digests(text: object) -> dict[str, tuple[str, str]]:
    """``{object digest: (action code, rest digest)}`` of a plan's digests (``plan_digests.tokens``).

    Raises:
        ValueError: not a string of whole entries.
    """
    if not isinstance(text, str) or len(text) % DIGEST_TOKEN_CHARS:
        raise ValueError(f"plan digests are {DIGEST_TOKEN_CHARS} characters per entry")
    key, size = DIGEST_KEY_CHARS, DIGEST_TOKEN_CHARS
    return {text[i:i + key]: (text[i + key], text[i + key + 1:i + size]) for i in range(0, len(text), size)}


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def as_lines(plan: list[PlanEntry], limit: int = 60) -> list[str]:
    """The plan as lines a person reads: ``create ConfigMap shop/banner``, the set's line first;
    at most ``limit`` of them (the last one says how many more)."""
    lines = [f"{e.get('action')} {e.get('object')}" + (f" ({e['phase']})" if e.get("phase") else "")
             for e in canonical(plan)]
    if len(lines) > limit:
        lines = lines[:limit - 1] + [f"... and {len(lines) - limit + 1} more (see plan)"]
    return lines
