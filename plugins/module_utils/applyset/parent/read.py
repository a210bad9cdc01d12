"""Read and judge the ApplySet parent before a run writes.

``read`` GETs the parent and judges what ``inspect`` parsed from it: it refuses anything that
could make us prune the wrong objects (a forged or mismatched id, another tool's set unless the
user asks to take it over, a parent kind the specification does not allow), and sorts recorded
kinds the server does not serve into kept and dropped ones. The rest of the parent lives beside
it in this package:

* ``model``: ``LiveParent`` and ``inspect`` (what a live parent says), ``Parent`` (the parent a
  run holds), ``claim_holds``;
* ``resolve``: ``resolve`` (the parent option) and ``check_kind_allowed``;
* ``write``: ``parent_body``, ``write``, ``drop_legacy_annotation``, ``records``, ``delete``
  (resourceVersion-guarded writes, a lost answer recognised).
"""

from __future__ import annotations

from . import members, retention
from .. import spec
from ..object_meta import KubeObject
from ..errors import ApiError, ParentError
from ..kube.discovery import Discovery, Resource
from ..kube.api import KubeApi
from .model import LiveParent, Parent, inspect
from .resolve import check_kind_allowed
from ..spec import GroupKind


def read(client: KubeApi, discovery: Discovery, res: Resource, name: str, namespace: str,
         *, takeover: bool = False, definition: KubeObject | None = None) -> tuple[Parent, list[str]]:
    """GET the parent and judge what it says before a run writes anything.

    :param client: the API client.
    :param discovery: the server's discovery, to map and sort the recorded kinds.
    :param res: the parent's resource, as ``resolve`` found it.
    :param name: the parent's name.
    :param namespace: its namespace, "" when cluster-scoped.
    :param takeover: manage a set whose parent another tool made (or that has no tooling).
    :param definition: a custom-resource parent's full definition, to create it when missing.
    :returns: ``(parent, warnings)``: the engine's ``Parent`` (``exists`` False when there is
        none yet) and warnings for the user about recorded kinds the server does not serve.
    :raises ParentError: for a parent kind that is not allowed, a GET that fails, a missing
        custom-resource parent without a definition, another tool's set or a missing tooling
        annotation (unless ``takeover``), a missing or forged id label, a missing hint, or a
        legacy hint entry that may hold members but cannot be mapped to a kind.
    """
    applyset_id = spec.compute_id(name, namespace, res.kind, res.group)
    where_ref = res.parent_ref(name)
    warnings: list[str] = []
    check_kind_allowed(client, res)
    try:
        obj = client.get(res, name, namespace or None)
    except ApiError as err:
        raise ParentError(
            f'failed to fetch ApplySet parent object "{where_ref}": {err.message}',
            obj=f"parent {where_ref}",
            fix="check the credentials' RBAC: get on the parent is required",
        ) from None
    if obj is None:
        if res.group_kind not in spec.BUILTIN_PARENT_KINDS and definition is None:
            raise ParentError(
                "custom resource ApplySet parents cannot be created automatically",
                obj=f"parent {where_ref}",
                fix="create the parent first, or give its full definition (apiVersion, kind, metadata, spec) as parent",
            )
        parent = Parent(resource=res, name=name, namespace=namespace, id=applyset_id, definition=definition)
        if namespace:
            parent.namespaces.add(namespace)
        return parent, warnings

    live = inspect(res, obj, discovery)
    _refuse_foreign_or_forged(live, takeover)
    parent = Parent.from_live(live, definition=definition)
    parent.member_record = members.parse(obj)
    recorded = parent.group_kinds
    unserved = {gk for gk in recorded if discovery.for_group_kind(gk) is None}
    parent.group_kinds = recorded - unserved
    if unserved or live.unmapped_resources:
        _sort_unserved(client, discovery, parent, unserved, set(live.unmapped_resources), warnings)
    return parent, warnings


def _refuse_foreign_or_forged(live: LiveParent, takeover: bool) -> None:
    """Raise unless the parent is this collection's (or ``takeover`` allows it) and its id and hint hold."""
    where = f'ApplySet parent object "{live.ref}"'
    takeover_fix = "set takeover: true to make this collection manage the set from now on"
    if live.tooling is None:
        if not takeover:
            raise ParentError(
                f'{where} already exists and is missing required annotation "{spec.ANNOTATION_TOOLING}"',
                obj=f"parent {live.ref}",
                fix=f"choose another parent name, or {takeover_fix}",
            )
    elif spec.tooling_name(live.tooling) != spec.TOOL_NAME and not takeover:
        tool = spec.tooling_name(live.tooling)
        raise ParentError(
            f'{where} already exists and is managed by tooling "{tool}" instead of "{spec.TOOL_NAME}"',
            obj=f"parent {live.ref}",
            fix=f"manage this set with {tool}, or {takeover_fix}",
        )

    if live.live_id is None and not (takeover and live.tooling is None):
        raise ParentError(
            f"{where} exists and does not have required label {spec.LABEL_ID}",
            obj=f"parent {live.ref}",
            fix=f"choose another parent name, or {takeover_fix}" if not takeover else
            f"add the label {spec.LABEL_ID}={live.expected_id} by hand after checking the set",
        )
    if live.live_id is not None and not live.id_matches:
        # Never repaired automatically: a copied id would let us prune another set's objects.
        raise ParentError(
            f'{where} exists and has incorrect value for label "{spec.LABEL_ID}" '
            f"(got: {live.live_id}, want: {live.expected_id})",
            obj=f"parent {live.ref}",
            fix="this may be an impersonation of another set; inspect the parent and its members, then fix "
            "or delete the label by hand",
        )
    if live.hint_source is None and not takeover:
        raise ParentError(
            f'parsing ApplySet annotation on "{live.ref}": the "{spec.ANNOTATION_GROUP_KINDS}" annotation must be '
            "set on all ApplySet parent objects",
            obj=f"parent {live.ref}",
            fix="run applyset_verify with fix: true to rebuild the hint from the members, or set takeover: true",
        )


def _sort_unserved(client: KubeApi, discovery: Discovery, parent: Parent, unserved: set[GroupKind],
                   unmapped: set[spec.GroupResource], warnings: list[str]) -> None:
    """Split recorded kinds the server does not serve into kept (may hold objects) and dropped.

    A legacy entry whose kind cannot be known (its group's aggregated API is down) cannot be
    carried over into contains-group-kinds, so the run stops before it writes anything.
    """
    defs = retention.load(client, discovery)
    where = f'ApplySet parent object "{parent.ref}"'
    for group, resource in sorted(unmapped):
        crd = defs.crd_for_resource(group, resource)
        if crd is not None:
            names = (crd.get("spec") or {}).get("names") or {}
            unserved.add(GroupKind(group, names.get("kind", "")))
            continue
        reason = retention.why_resource_may_hold_objects(group, resource, defs)
        if reason is None:
            warnings.append(f"{spec.ANNOTATION_GROUP_RESOURCES} on {parent.ref} names {resource}.{group}; no CRD "
                            "or APIService defines it, so it cannot hold objects and is dropped from the hint")
            continue
        raise ParentError(
            f"{spec.ANNOTATION_GROUP_RESOURCES} on {where} names {resource}.{group}, which the server does not "
            f"serve right now, and its kind cannot be known, but it may still hold members: {reason}",
            obj=f"parent {parent.ref}",
            fix="run again when the API is served again (check kubectl get apiservices); nothing was changed",
        )
    for gk in sorted(unserved):
        reason = retention.why_it_may_hold_objects(gk, defs)
        if reason is None:
            parent.dropped_group_kinds.add(gk)
        else:
            parent.unlistable_group_kinds[gk] = reason
    if parent.dropped_group_kinds:
        warnings.append(
            f"{where} lists group-kinds that no CRD or APIService defines any more: "
            f"{spec.format_group_kinds(parent.dropped_group_kinds)}; they cannot hold objects and are dropped "
            "from the hint")
    for gk, reason in sorted(parent.unlistable_group_kinds.items()):
        warnings.append(
            f"{where} lists {gk}, which the server does not serve right now, but {reason}; its members cannot "
            "be listed, so none of them is pruned in this run, and it stays in the hint so that a later run "
            "prunes them once it is served again")
