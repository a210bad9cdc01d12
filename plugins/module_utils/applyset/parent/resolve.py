"""Resolve the parent option into the parent's resource, name and namespace.

``resolve`` turns what the user wrote (a kubectl-style ``[RESOURCE][.GROUP]/NAME``, a reference
dict, or a custom resource's full definition) into the resource discovery serves, the name and
the namespace. ``check_kind_allowed`` decides which kinds may be a parent at all: Secret,
ConfigMap, or a custom resource whose CRD carries the ``is-parent-type`` label.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..object_meta import KubeObject, labels_of, metadata_of
from .. import spec
from ..errors import ApiError, InputError, ParentError
from ..kube.discovery import CRD_RESOURCE
from ..kube.discovery import Discovery, Resource
from ..kube.api import KubeApi
from ..spec import GroupKind


def resolve(discovery: Discovery, parent_spec: object,
            default_namespace: str | None) -> tuple[Resource, str, str, KubeObject | None]:
    """Turn the user's parent option into the resource and name of the parent.

    :param discovery: the server's discovery, to find the parent's resource.
    :param parent_spec: a kubectl-style string (``[RESOURCE][.GROUP]/NAME``), a reference dict
        (``kind``, ``name``, optional ``apiVersion``/``group`` and ``namespace``), or a full
        object with ``metadata`` (a custom resource parent to create when it does not exist yet).
    :param default_namespace: the namespace of a namespaced parent that names none.
    :returns: ``(resource, name, namespace, definition)``; namespace is "" when cluster-scoped,
        definition is the full object or None.
    :raises InputError: for a reference that cannot name a parent the server serves, or a
        namespace missing (namespaced kind) or given (cluster-scoped kind).
    """
    definition: KubeObject | None = None
    ref: Mapping[str, Any]
    if isinstance(parent_spec, str):
        res, name, namespace, shown = _resolve_text(discovery, parent_spec)
    elif isinstance(parent_spec, dict):
        if "metadata" in parent_spec:
            definition = parent_spec
            meta = metadata_of(parent_spec)
            ref = {"apiVersion": parent_spec.get("apiVersion"), "kind": parent_spec.get("kind"),
                   "name": meta.get("name"), "namespace": meta.get("namespace")}
        else:
            ref = parent_spec
        res, name, namespace, shown = _resolve_reference(discovery, ref)
    else:
        raise InputError("parent must be a string or a dict", obj="parent",
                         fix='e.g. parent: "configmaps/my-app" or parent: {kind: Secret, name: my-app}')
    return res, name, _parent_namespace(res, namespace, default_namespace, shown), definition


def _resolve_text(discovery: Discovery, text: str) -> tuple[Resource, str, None, str]:
    """A kubectl-style ``[RESOURCE][.GROUP]/NAME``: (resource, name, no namespace, as shown)."""
    resource_name, group, name = spec.parse_parent_ref(text)
    res = discovery.for_resource(group, resource_name)
    if res is None:
        raise InputError(
            f'invalid parent reference "{text}": the server has no resource "{resource_name}"'
            + (f' in group "{group}"' if group else ""),
            obj="parent",
            fix="use secrets/NAME, configmaps/NAME or PLURAL.GROUP/NAME of a CRD labelled "
            f"{spec.LABEL_PARENT_TYPE}",
        )
    return res, name, None, text


def _resolve_reference(discovery: Discovery, ref: Mapping[str, Any]) -> tuple[Resource, str, str | None, str]:
    """A reference dict (``kind`` defaults to Secret): (resource, name, namespace, as shown)."""
    name = ref.get("name")
    kind = ref.get("kind") or "Secret"
    api_version = ref.get("apiVersion")
    group = (api_version.rpartition("/")[0] if api_version else ref.get("group")) or ""
    shown = f"{kind} {name}"
    if not name or not isinstance(name, str):
        raise InputError("the parent has no name", obj="parent", fix="set parent.name")
    res = None
    if api_version and "/" in api_version or api_version == "v1":
        res = discovery.for_gvk(group, api_version.rpartition("/")[2], kind)
    res = res or discovery.for_group_kind(GroupKind(group, kind))
    if res is None:
        raise InputError(
            f"the server does not serve the parent kind {GroupKind(group, kind)}",
            obj=f"parent {shown}",
            fix="use kind Secret or ConfigMap, or a custom resource whose CRD is installed and labelled "
            f"{spec.LABEL_PARENT_TYPE}=true",
        )
    return res, name, ref.get("namespace"), shown


def _parent_namespace(res: Resource, namespace: str | None, default_namespace: str | None, shown: str) -> str:
    """The parent's namespace: given, else the default for a namespaced kind; "" when cluster-scoped."""
    if res.namespaced:
        namespace = namespace or default_namespace
        if not namespace:
            raise InputError(
                "namespace is required to use namespace-scoped ApplySet",
                obj=f"parent {shown}",
                fix="set the namespace option or parent.namespace",
            )
        return namespace
    if namespace:
        raise InputError(
            f"{res.kind} is cluster-scoped, so the parent cannot have a namespace",
            obj=f"parent {shown}",
            fix="remove the parent's namespace",
        )
    return ""


def check_kind_allowed(client: KubeApi, res: Resource) -> None:
    """Check that the parent's kind may be a parent: Secret, ConfigMap, or a custom resource
    whose CRD carries the ``is-parent-type`` label.

    :param client: the API client (a custom resource's CRD is read).
    :param res: the parent's resource.
    :raises ParentError: for any other kind, or when the CRD cannot be read.
    """
    if res.group_kind in spec.BUILTIN_PARENT_KINDS:
        return
    message = f'resource "{res.api_version}, Resource={res.plural}" is not permitted as an ApplySet parent'
    builtin = ParentError(message, obj=f"parent kind {res.group_kind}",
                          fix="use a Secret or ConfigMap, or a custom resource whose CRD is labelled "
                          f"{spec.LABEL_PARENT_TYPE}=true")
    if not res.group:
        raise builtin
    try:
        crd = client.get(CRD_RESOURCE, f"{res.plural}.{res.group}")
    except ApiError as err:
        raise ParentError(
            f"identifying allowed custom resource parent types: {err.message}",
            obj=f"parent kind {res.group_kind}",
            fix="the user needs get on customresourcedefinitions to use a custom resource parent",
        ) from None
    if crd is None:
        raise builtin  # a built-in kind of a named group, such as deployments.apps
    if spec.LABEL_PARENT_TYPE not in labels_of(crd):
        raise ParentError(message, obj=f"parent kind {res.group_kind}",
                          fix="label its CRD as a parent type: "
                          f"kubectl label crd {res.plural}.{res.group} {spec.LABEL_PARENT_TYPE}=true")
