"""Write the ApplySet parent: its hints and the run's claim, its legacy annotation, its deletion.

Writes are server-side applies with a resourceVersion precondition, so two runs can never
interleave their parent updates silently; a 409 whose write had in fact landed (the answer was
lost and the retry met our own write) is recognised by reading the parent again. ``parent_body``
is the one body of the parent's labels and annotations (``verify.repair`` writes through it too);
``records`` says whether a release would change nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from ..object_meta import KubeObject, ObjectMeta, annotations_of, metadata_of
from . import members
from . import plan_key as plan_keys
from .. import spec
from ..errors import ApiError, ParentChanged, ParentError, missing_namespace
from ..kube.api import KubeApi
from ..kube.http_requests import Response
from ..spec import GroupKind
from .model import ClaimRecord, Parent


def _claim_text(claim: ClaimRecord | None) -> str | None:
    """The claim annotation's value, written byte-for-byte the same for the same claim."""
    return json.dumps(claim, sort_keys=True, separators=(",", ":")) if claim else None


def parent_body(parent: Parent, group_kinds: Iterable[GroupKind], namespaces: Iterable[str | None],
                claim: ClaimRecord | None = None) -> KubeObject:
    """The server-side apply body for the parent's labels and annotations.

    :param parent: the parent to write (its id, name, namespace and read resourceVersion).
    :param group_kinds: the kinds to record in contains-group-kinds.
    :param namespaces: the namespaces to record; the parent's own is left out of the annotation.
    :param claim: with a claim (``{"run", "expires"}``), the body also claims the set for one
        run; without it, server-side apply drops a claim this field manager made before.
    :returns: the body, with our tooling value, a Secret parent's plan key (``plan_key.py``) and,
        when the parent was read, its resourceVersion as a precondition.
    """
    meta: dict[str, Any] = {
        "name": parent.name,
        "labels": {spec.LABEL_ID: parent.id},
        "annotations": {
            spec.ANNOTATION_TOOLING: spec.tooling_value(),
            spec.ANNOTATION_GROUP_KINDS: spec.format_group_kinds(group_kinds),
            spec.ANNOTATION_ADDITIONAL_NAMESPACES: spec.format_namespaces(namespaces, parent.namespace),
        },
    }
    if claim:
        meta["annotations"][spec.ANNOTATION_CLAIM] = _claim_text(claim)
    if parent.record_members is not None:
        meta["annotations"][members.ANNOTATION_MEMBERS] = members.format_record(parent.record_members)
    if parent.revision is not None:  # kept on every write; the release writes a new one (history/revisions.py)
        meta["annotations"][spec.ANNOTATION_REVISION] = str(parent.revision)
        meta["annotations"][spec.ANNOTATION_REVISION_DIGEST] = parent.revision_digest or ""
    if parent.namespace:
        meta["namespace"] = parent.namespace
    body: KubeObject = {"apiVersion": parent.resource.api_version, "kind": parent.resource.kind, "metadata": meta}
    if parent.plan_key is not None and plan_keys.holds_key(parent.resource):
        # Sent with every write: an apply of ours that left it out would remove it.
        body["data"] = plan_keys.data(parent.plan_key)
    if parent.resource_version:
        # Optimistic concurrency: the write fails with 409 if anyone changed the parent since we read it.
        meta["resourceVersion"] = parent.resource_version
    return body


def write(client: KubeApi, parent: Parent, group_kinds: Iterable[GroupKind], namespaces: Iterable[str | None], *,
          claim: ClaimRecord | None = None,
          dry_run: bool = False) -> None:
    """Record the hints (and the run's claim, if any) on the parent, creating it if needed.

    :param client: the API client.
    :param parent: the parent; updated in place with the new resourceVersion, tooling and claim.
    :param group_kinds: the kinds to record.
    :param namespaces: the namespaces to record.
    :param claim: the run's claim to write with the hints, or None to write it away.
    :param dry_run: send the writes as server-side dry runs; ``parent`` is left unchanged.
    :raises ParentChanged: when the parent changed since it was read (resourceVersion stale), or
        was created by someone else meanwhile.
    :raises ParentError: when the write fails otherwise (the message names the cause).
    """
    if parent.plan_key is None and plan_keys.holds_key(parent.resource) and not dry_run:
        parent.plan_key = plan_keys.new()  # the set's first write since it has none (plan_key.py)
    if not parent.exists:
        # Created without the claim: a field set by a create is owned through an
        # Update operation, which our later server-side applies could not remove.
        body = _creation_body(parent, group_kinds, namespaces, None)
        try:
            created = client.create(parent.resource, body, field_manager=spec.PARENT_FIELD_MANAGER,
                                    dry_run=dry_run).body
        except ApiError as err:
            if err.status == 409:
                raise ParentChanged(
                    f"{parent.ref} was created by someone else while this run was starting",
                    obj=f"parent {parent.ref}",
                    fix="another run is probably deploying the same set; wait for it and run again",
                ) from None
            raise _write_error(parent, err) from None
        if dry_run:
            return
        parent.exists = True
        parent.uid = created["metadata"]["uid"]
        parent.resource_version = created["metadata"]["resourceVersion"]
        parent.tooling = spec.tooling_value()
        if claim is None:
            return
    body = parent_body(parent, group_kinds, namespaces, claim)
    # force: after a takeover, or after the create above (an Update operation),
    # other managers may own these fields; the resourceVersion guards concurrency.
    result = _guarded(client, parent, lambda: client.apply(parent.resource, body,
                                                           field_manager=spec.PARENT_FIELD_MANAGER,
                                                           force=True, dry_run=dry_run),
                      landed=lambda live: _says(live, body["metadata"], claim_expected=claim is not None))
    if not dry_run:
        parent.resource_version = result["metadata"]["resourceVersion"]
        parent.tooling = spec.tooling_value()
        parent.claim = claim
        if parent.legacy_annotation:
            drop_legacy_annotation(client, parent)


def drop_legacy_annotation(client: KubeApi, parent: Parent, *, dry_run: bool = False) -> None:
    """Remove contains-group-resources once contains-group-kinds covers it, as kubectl 1.29 does.

    kubectl removes it by leaving it out of its next server-side apply, which works because its
    own parent field manager wrote it. Another manager's apply cannot remove a field it does not
    own, so this is a JSON merge patch of just that key, guarded by the resourceVersion read.

    :param client: the API client.
    :param parent: the parent; its resourceVersion is the precondition and is updated.
    :param dry_run: send the patch as a server-side dry run; ``parent`` is left unchanged.
    :raises ParentError: when the parent changed since it was read, or the patch fails.
    """
    patch = {"metadata": {"annotations": {spec.ANNOTATION_GROUP_RESOURCES: None},
                          "resourceVersion": parent.resource_version}}
    result = _guarded(client, parent, lambda: client.merge_patch(parent.resource, parent.name,
                                                                 parent.namespace or None, patch,
                                                                 field_manager=spec.PARENT_FIELD_MANAGER,
                                                                 dry_run=dry_run),
                      landed=lambda live: spec.ANNOTATION_GROUP_RESOURCES not in _annotations(live)
                      and _annotations(live).get(spec.ANNOTATION_CLAIM) == _claim_text(parent.claim))
    if not dry_run:
        parent.resource_version = result["metadata"]["resourceVersion"]
        parent.legacy_annotation = False


def _creation_body(parent: Parent, group_kinds: Iterable[GroupKind], namespaces: Iterable[str | None],
                   claim: ClaimRecord | None) -> KubeObject:
    body = parent_body(parent, group_kinds, namespaces, claim)
    if parent.definition:
        merged = dict(parent.definition)
        meta = metadata_of(merged).copy()
        meta["labels"] = {**(meta.get("labels") or {}), **body["metadata"]["labels"]}
        meta["annotations"] = {**(meta.get("annotations") or {}), **body["metadata"]["annotations"]}
        meta["name"] = parent.name
        if parent.namespace:
            meta["namespace"] = parent.namespace
        merged["metadata"] = meta
        merged["apiVersion"] = parent.resource.api_version
        merged["kind"] = parent.resource.kind
        return merged
    return body


def _guarded(client: KubeApi, parent: Parent, send: Callable[[], Response],
             landed: Callable[[KubeObject], bool]) -> KubeObject:
    """Send one write to the parent, guarded by the resourceVersion this run read.

    A 409 means the parent changed since then. Usually someone else changed it; but when the
    connection dropped after the server had done our write, the client's retry meets our own
    write. So the parent is read again: if it already says exactly what we wrote (for a claim,
    the claim's value names this run and its expiry, which no one else can write), the write
    landed and the run goes on.
    """
    try:
        return send().body
    except ApiError as err:
        if err.status != 409:
            raise _write_error(parent, err) from None
    try:
        live = client.get(parent.resource, parent.name, parent.namespace or None)
    except ApiError as err:
        raise _write_error(parent, err) from None
    if live is not None and landed(live):
        return live
    raise _stale_error(parent)


def _annotations(live: KubeObject) -> dict[str, str]:
    return annotations_of(live)


def _says(live: KubeObject, wanted_meta: ObjectMeta, *, claim_expected: bool) -> bool:
    """Whether the live parent carries every label and annotation of a body we sent."""
    meta = metadata_of(live)
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    if any(labels.get(k) != v for k, v in (wanted_meta.get("labels") or {}).items()):
        return False
    if any(annotations.get(k) != v for k, v in (wanted_meta.get("annotations") or {}).items()):
        return False
    return claim_expected or spec.ANNOTATION_CLAIM not in annotations


def records(parent: Parent, live: KubeObject, group_kinds: Iterable[GroupKind],
            namespaces: Iterable[str | None]) -> bool:
    """Whether the live parent already carries exactly what a release would write.

    Args:
        parent: the parent as this run read it.
        live: the parent object as read now.
        group_kinds, namespaces: the hint the release would record.

    Returns:
        True when every label and annotation of that body is there, with no claim and no legacy
        ``contains-group-resources`` hint (which a release would remove): not writing it changes nothing.
    """
    annotations = annotations_of(live)
    return (_says(live, parent_body(parent, group_kinds, namespaces)["metadata"], claim_expected=False)
            and spec.ANNOTATION_GROUP_RESOURCES not in annotations)


def _stale_error(parent: Parent) -> ParentChanged:
    return ParentChanged(
        f"{parent.ref} was changed by someone else during this run (resourceVersion "
        f"{parent.resource_version} is stale)",
        obj=f"parent {parent.ref}",
        fix="another run is probably deploying the same set; wait for it and run again",
    )


def _write_error(parent: Parent, err: ApiError) -> ParentError:
    if err.status is None:  # no answer at all: the network, not the credentials
        return ParentError(
            f"failed to update ApplySet: {err.message}",
            obj=f"parent {parent.ref}",
            fix="a connection problem, not a conflict: check that the API server is reachable and run again; "
            "the parent still covers every object that may exist",
        )
    if missing_namespace(err):
        return ParentError(
            f"namespace {missing_namespace(err)} does not exist ({err.message})", obj=f"parent {parent.ref}",
            fix="add a Namespace object for it to the set, or set create_namespace: true")
    return ParentError(
        f"failed to update ApplySet: {err.message}",
        obj=f"parent {parent.ref}",
        fix="check the credentials' RBAC: create and patch on the parent are required",
    )


def delete(client: KubeApi, parent: Parent, *, dry_run: bool = False) -> None:
    """Delete the parent, if it exists, with a UID precondition (never a namesake made meanwhile).

    :param client: the API client.
    :param parent: the parent to delete.
    :param dry_run: send the DELETE as a server-side dry run.
    """
    if parent.exists:
        client.delete(parent.resource, parent.name, parent.namespace or None, uid=parent.uid, dry_run=dry_run)
