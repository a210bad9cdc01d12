"""Whether a member's server-side apply may be skipped: the live object already is what it would make.

A skipped member costs no request at all, so a wrong "unchanged" would leave drift or a dropped
field in place for good. Every rule here therefore errs towards writing: a member is skipped only
when ALL of these hold (``why_apply`` returns the first that fails, as the reason to write):

1. the live object carries our applied-digest annotation, equal to the digest of the body this
   run would send (``request_digest``). Server-side apply removes fields its manager stops
   applying, which no comparison of values can see; a changed body changes the digest, so a
   dropped field always means a write. The request's options are not in it: a new field manager
   has no Apply entry yet (rule 2), and when every value is already in place (rule 4) neither
   force nor field validation can change what the apply makes. Were they in it, a new field
   manager would conflict with the old one over the annotation itself;
2. our manager's ``operation: Apply`` entry is in the live object's managedFields (someone who
   removed it took the fields away from us; an apply gives them back);
3. no client-side tool owns fields that an apply would take over (``csa.plan``): that takeover
   happens only after an apply; in a rollback, no other field manager of the set's releases owns
   a field ours does not (``csa.release_fields_beyond_ours``): only the takeover before the
   apply and the apply remove it;
4. "desired is contained in live" (``contains``): every value we send is in the live object,
   strictly equal. This catches drift by anyone (edit, patch, label, scale, another manager's
   forced apply, a mutating webhook): they change a value we set.

The body is compared in the form the server stores it (``server_form.as_stored``): ``0.5`` CPU
stored as ``500m``, a Secret's ``stringData`` stored as ``data``. A zero value the server drops
(``hostNetwork: false``, ``env: []``) is contained while our Apply entry still owns the field:
somebody who removed it took it from every manager. Any other normalisation is not "contained",
so such a member is written on every run: a false "changed" costs one PATCH, a false
"unchanged" would cost correctness.

A Secret's values are left out of the digest (its keys are in): the annotation shows up in diffs
and in ``kubectl get``, and an unkeyed hash of a short password can be guessed offline. Nothing
is lost by it: a changed value is never "contained" (rule 4), and a dropped key changes the digest.

Pure: no requests, no Ansible.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Collection

from ..object_meta import FieldsV1, KubeObject, annotations_of, labels_of, managed_fields_of, metadata_of
from . import csa, server_form
from ..inputs import redact
from .. import spec

DIGEST_VERSION = "v1"


def _without_digest(body: KubeObject) -> KubeObject:
    """``body`` without our digest annotation (and without an annotations map it leaves empty)."""
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        return body
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict) or spec.ANNOTATION_APPLIED_DIGEST not in annotations:
        return body
    annotations = {k: v for k, v in annotations.items() if k != spec.ANNOTATION_APPLIED_DIGEST}
    meta = {**meta, "annotations": annotations}
    if not annotations:
        del meta["annotations"]
    return {**body, "metadata": meta}


def _values_hidden(body: KubeObject) -> KubeObject:
    """A Secret (``redact.is_secret``) with every ``data`` and ``stringData`` value replaced by
    the same placeholder; anything else as it is."""
    if not redact.is_secret(body):
        return body
    hidden = dict(body)
    for name in ("data", "stringData"):
        if isinstance(body.get(name), dict):
            hidden[name] = {key: "" for key in body[name]}
    return hidden


def request_digest(body: KubeObject) -> str:
    """The digest of a server-side apply body: ``v1:`` + unpadded base64url of the sha256 of its
    canonical JSON (sorted keys, no spaces), without the digest annotation itself and with a
    Secret's values left out (its keys are in).

    Args:
        body: the object as it is (or would be) sent.

    Returns:
        The annotation value, for example ``v1:3q2-7w...`` (43 characters after ``v1:``).
    """
    canonical = json.dumps(_values_hidden(_without_digest(body)), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    raw = hashlib.sha256(canonical.encode("utf-8")).digest()
    return f"{DIGEST_VERSION}:" + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def with_digest(body: KubeObject, *, digest_of: KubeObject | None = None) -> KubeObject:
    """``body`` with our digest annotation set to its digest, or to the digest of ``digest_of``
    (``field_policy.py``: the manifest with the values of the fields left to others hidden).

    Returns a new dict (the metadata and annotations copied); ``body`` is left as it is.
    """
    clean = _without_digest(body)
    digest = request_digest(clean if digest_of is None else digest_of)
    meta = metadata_of(clean).copy()
    meta["annotations"] = {**(meta.get("annotations") or {}), spec.ANNOTATION_APPLIED_DIGEST: digest}
    return {**clean, "metadata": meta}


def _scalar_equal(desired: object, live: object) -> bool:
    # bool is an int in Python: never let True equal 1. int and float compare by value
    # (JSON has one number type; the server may answer 1 for 1.0). Anything else: same type.
    if isinstance(desired, bool) or isinstance(live, bool):
        return isinstance(desired, bool) and isinstance(live, bool) and desired == live
    numbers = (int, float)
    if isinstance(desired, numbers) and isinstance(live, numbers):
        return desired == live
    if desired is None or live is None:
        return desired is None and live is None
    if isinstance(desired, str) and isinstance(live, str):
        return desired == live
    return False


def contains(desired: object, live: object, owned: FieldsV1 | None = None) -> bool:
    """Whether every value of ``desired`` is in ``live``, strictly equal.

    Maps recursively (``live`` may have more keys); lists element by element with equal length
    (each desired element contained in the live one at the same index); scalars equal with strict
    types (a bool never equals a number, a string only a string; int and float by value).
    Anything else (other types, a map against a list) is not contained.

    A key ``live`` does not have is contained when its value is one the server drops
    (``_dropped``): ``owned`` is our Apply entry's fieldsV1 at the same place (None when unknown),
    and tells a field the server dropped from one somebody removed.
    """
    # Plain loops, strings first: this runs over every value of every member on every re-run.
    if isinstance(desired, str):
        return isinstance(live, str) and desired == live
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return False
        for key, value in desired.items():
            sub = owned.get("f:" + key) if owned else None
            if key not in live:
                if not _dropped(value, sub):
                    return False
            elif value is None and sub is not None:
                continue  # a null we own: the server stores its zero value or default (replicas: 1)
            elif not contains(value, live[key], sub):
                return False
        return True
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return False
        owned_items = _owned_items(owned, live) if owned else (None,) * len(live)
        for d, l, sub in zip(desired, live, owned_items):
            if not contains(d, l, sub):
                return False
        return True
    if isinstance(live, (dict, list)):
        return False
    return _scalar_equal(desired, live)


def _dropped(value: object, owned: FieldsV1 | None) -> bool:
    """Whether the server leaves out a field sent with ``value``: a null (nothing to set), an empty
    list or map (Go's ``omitempty``), and, when we still own the field, false, 0 or "" (the zero
    value of a Go field with ``omitempty``). A field somebody else removed is no longer ours
    (server-side apply takes a removed field from every manager): not dropped, drift."""
    if value is None or (isinstance(value, (list, dict)) and not value):
        return True
    return owned is not None and value in (False, 0, "") and isinstance(value, (bool, int, float, str))


def _owned_items(owned: FieldsV1, live: list) -> list[FieldsV1 | None]:
    """The fieldsV1 node of each element of a ``live`` list (None when not ours); the keys are
    parsed once per list, not once per element."""
    keys = _parsed_keys(owned)
    return [owned.get(list_element_key(owned, item, index, keys)) for index, item in enumerate(live)]


def _parsed_keys(tree: object) -> list[tuple[str, object]]:
    """``(key, its parsed JSON)`` of each ``k:`` key of a FieldsV1 node (``(key, None)`` for a ``v:``)."""
    parsed: list[tuple[str, object]] = []
    for key in tree if isinstance(tree, dict) else ():
        if key.startswith("k:"):
            try:
                parsed.append((key, json.loads(key[2:])))
            except ValueError:
                continue
        elif key.startswith("v:"):
            parsed.append((key, None))
    return parsed


def list_element_key(tree: object, element: object, index: int,
                     parsed: list[tuple[str, object]] | None = None) -> str:
    """The fieldsV1 key of a list element: ``k:{...}`` whose values it has, ``v:...`` or ``i:N``.
    ``parsed`` is ``_parsed_keys(tree)`` when the caller looks up many elements of one list."""
    for key, wanted in _parsed_keys(tree) if parsed is None else parsed:
        if isinstance(wanted, dict) and isinstance(element, dict):
            if all(str(element.get(k)) == str(v) for k, v in wanted.items()):
                return key
        elif key.startswith("v:") and key[2:] == json.dumps(element, separators=(",", ":")):
            return key
    return f"i:{index}"


def apply_fields(live: KubeObject, manager: str) -> FieldsV1 | None:
    """The fieldsV1 of ``manager``'s Apply entry (not a subresource's) in ``live``, or None."""
    entry = next((e for e in managed_fields_of(live) if e.get("manager") == manager
                  and e.get("operation") == "Apply" and not e.get("subresource")), None)
    return None if entry is None else entry.get("fieldsV1") or {}


def why_not_whole(live_obj: KubeObject | None) -> str | None:
    """Why ``live_obj`` cannot be judged at all (missing, metadata only, being deleted), or None."""
    if live_obj is None:
        return "not found"
    if not isinstance(live_obj, dict) or live_obj.get("kind") == "PartialObjectMetadata":
        return "only its metadata was listed"
    if metadata_of(live_obj).get("deletionTimestamp"):
        return "being deleted"
    return None


def why_apply(member_body: KubeObject, live_obj: KubeObject | None, manager: str, *, digested: bool = False,
              set_managers: Collection[str] = frozenset()) -> str | None:
    """The reason the member must be applied, or None when the apply may be skipped.

    Args:
        member_body: the body this run would send, with or without our digest annotation.
        digested: ``member_body`` comes from ``with_digest`` (the engine's plan does that for
            every member), so its digest annotation is right and need not be computed again.
        live_obj: the live object as a full-object LIST or GET returned it; None when not found,
            and metadata-only objects are never enough (they carry no spec to compare).
        manager: the field manager of this run.
        set_managers: in a rollback, every field manager the set's releases used (rule 3).

    Returns:
        A short reason ("not found", "applied by another request", ...), or None.
    """
    problem = why_not_whole(live_obj)
    if problem or live_obj is None:
        return problem
    meta = metadata_of(live_obj)
    body = member_body if digested else with_digest(member_body)  # the body as sent
    want = annotations_of(body)[spec.ANNOTATION_APPLIED_DIGEST]
    have = annotations_of(live_obj).get(spec.ANNOTATION_APPLIED_DIGEST)
    if have is None:
        return "no applied digest recorded"
    if have != want:
        return "the manifest changed since the last apply"
    owned = apply_fields(live_obj, manager)
    if owned is None:
        return f"field manager {manager} has no Apply entry"
    if csa.plan(meta.get("managedFields"), manager) is not None:
        return "client-side tools own fields that an apply takes over"
    if csa.release_fields_beyond_ours(meta.get("managedFields"), manager, set_managers, body.get("apiVersion")):
        return "field managers of earlier releases own fields that this rollback takes over"
    if not contains(server_form.as_stored(body), live_obj, owned):
        return "the live object differs from the manifest"
    return None


def in_place_blocker(live_obj: KubeObject | None, manager: str, set_id: str,
                     set_managers: Collection[str] = frozenset()) -> str | None:
    """Why a member's apply cannot be sent as a conditional in-place update, or None when it can.

    A run whose only writes are in-place updates goes without the claim (see the engine's
    ``without_claim.py``). Each such apply carries the listed object's ``uid`` and
    ``resourceVersion`` (``conditional``), so the server applies it to exactly the object that
    was listed, or refuses it with a 409: it never creates an object again that another run
    pruned meanwhile (a server-side apply without them would), and never writes over a change
    made since the LIST. It must also leave the set as it is: the object already carries this
    set's part-of label, and it needs no second write (no client-side fields to take over).

    Args:
        live_obj: the live object as a full-object LIST returned it; None when not found.
        manager: the field manager of this run.
        set_id: the ApplySet ID of this run's parent.
        set_managers: in a rollback, every field manager the set's releases used: fields of the
            others are taken over with a write of its own before the apply.

    Returns:
        A short reason ("not found", "not yet a member of this set", ...), or None.
    """
    problem = why_not_whole(live_obj)
    if problem or live_obj is None:
        return problem
    meta = metadata_of(live_obj)
    if not meta.get("uid") or not meta.get("resourceVersion"):
        return "no uid or resourceVersion to make the update conditional on"
    if labels_of(live_obj).get(spec.LABEL_PART_OF) != set_id:
        return "not yet a member of this set"
    if csa.may_take_over(meta.get("managedFields"), manager):
        return "client-side tools own fields that an apply may take over"
    if csa.merge_releases(meta.get("managedFields"), manager, set_managers, live_obj.get("apiVersion")) is not None:
        return "field managers of earlier releases own fields that this rollback takes over first"
    return None


def conditional(body: KubeObject, live_obj: KubeObject) -> KubeObject:
    """``body`` with the live object's ``uid`` and ``resourceVersion`` as preconditions.

    The server refuses the apply with a 409 when the object is gone (no resurrection), was
    deleted and created again (another uid), or changed since it was listed. Neither field is
    recorded in managedFields, and the digest annotation already in ``body`` is computed without
    them, so the applied object is the same as an unconditional apply would make.
    """
    live_meta = metadata_of(live_obj)
    meta = {**body["metadata"], "uid": live_meta["uid"], "resourceVersion": live_meta["resourceVersion"]}
    return {**body, "metadata": meta}
