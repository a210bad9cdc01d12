"""Resolve, read, validate and write the ApplySet parent.

The parent records the set: its ``id`` label, our ``tooling`` annotation and
the hints (``contains-group-kinds``, ``additional-namespaces``) that tell a
later run where members may live. Reading refuses anything that could make us
prune the wrong objects: a forged or mismatched id, another tool's set (unless
the user asks to take it over), a parent kind the specification does not allow.
Writes are server-side applies with a resourceVersion precondition, so two runs
can never interleave their parent updates silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from . import retention, spec
from .errors import ApiError, InputError, ParentError, missing_namespace
from .kube import Discovery, KubeClient, Resource
from .spec import GroupKind

CRD_RESOURCE = retention.CRD_RESOURCE


@dataclass
class Parent:
    """The parent as found on the cluster (or about to be created)."""

    resource: Resource
    name: str
    namespace: str  # "" when cluster-scoped
    id: str
    exists: bool = False
    uid: str | None = None
    resource_version: str | None = None
    tooling: str | None = None
    group_kinds: set = field(default_factory=set)  # recorded hint, served kinds only
    # Recorded kinds not served right now that may still hold objects: they stay in the hint,
    # but their members cannot be listed (kind -> why they may hold objects).
    unlistable_group_kinds: dict = field(default_factory=dict)
    # Recorded kinds that provably cannot hold objects any more: they leave the hint.
    dropped_group_kinds: set = field(default_factory=set)
    namespaces: set = field(default_factory=set)  # recorded scope, incl. the parent's own namespace
    definition: dict | None = None  # body for creating a custom-resource parent
    legacy_hint: bool = False  # recorded only as contains-group-resources (kubectl < 1.29)
    legacy_annotation: bool = False  # contains-group-resources present, alone or beside contains-group-kinds
    lock: dict | None = None  # {"run", "expires"} while some run changes the set

    def locked_by_other(self, run_id: str, now: float) -> bool:
        """True while another run's claim on the set has not expired."""
        lock = self.lock or {}
        try:
            expires = float(lock.get("expires", 0))
        except (TypeError, ValueError):
            return False  # an unreadable claim protects nothing
        return bool(lock) and lock.get("run") != run_id and expires > now

    @property
    def group_kind(self) -> GroupKind:
        return self.resource.group_kind

    @property
    def ref(self) -> str:
        """kubectl-style reference, e.g. ``secrets./shop`` or ``applysets.example.com/shop``."""
        return self.resource.parent_ref(self.name)

    @property
    def recorded_group_kinds(self) -> set:
        """Every kind the hint keeps: served ones and those that may still hold objects."""
        return self.group_kinds | set(self.unlistable_group_kinds)

    def describe(self) -> dict:
        return {
            "id": self.id,
            "parent": {
                "apiVersion": self.resource.api_version,
                "kind": self.resource.kind,
                "name": self.name,
                "namespace": self.namespace or None,
            },
            "tooling": self.tooling,
        }


def resolve(discovery: Discovery, parent_spec, default_namespace: str | None) -> tuple[Resource, str, str, dict | None]:
    """Turn the user's parent option into (resource, name, namespace, definition).

    ``parent_spec`` is a kubectl-style string (``[RESOURCE][.GROUP]/NAME``), a
    reference dict (``kind``, ``name``, optional ``apiVersion``/``group`` and
    ``namespace``), or a full object with ``metadata`` (a custom resource
    parent to create when it does not exist yet).
    """
    definition = None
    if isinstance(parent_spec, str):
        resource_name, group, name = spec.parse_parent_ref(parent_spec)
        res = discovery.for_resource(group, resource_name)
        namespace = None
        shown = parent_spec
        if res is None:
            raise InputError(
                f'invalid parent reference "{parent_spec}": the server has no resource "{resource_name}"'
                + (f' in group "{group}"' if group else ""),
                obj="parent",
                fix="use secrets/NAME, configmaps/NAME or PLURAL.GROUP/NAME of a CRD labelled "
                f"{spec.LABEL_PARENT_TYPE}",
            )
    elif isinstance(parent_spec, dict):
        if "metadata" in parent_spec:
            definition = parent_spec
            meta = parent_spec.get("metadata") or {}
            ref = {"apiVersion": parent_spec.get("apiVersion"), "kind": parent_spec.get("kind"),
                   "name": meta.get("name"), "namespace": meta.get("namespace")}
        else:
            ref = parent_spec
        name = ref.get("name")
        namespace = ref.get("namespace")
        kind = ref.get("kind") or "Secret"
        api_version = ref.get("apiVersion")
        group = ref.get("group")
        if api_version:
            group = api_version.rpartition("/")[0]
        group = group or ""
        shown = f"{kind} {name}"
        if not name or not isinstance(name, str):
            raise InputError("the parent has no name", obj="parent", fix="set parent.name")
        if api_version and "/" in api_version or api_version == "v1":
            version = api_version.rpartition("/")[2]
            res = discovery.for_gvk(group, version, kind) or discovery.for_group_kind(GroupKind(group, kind))
        else:
            res = discovery.for_group_kind(GroupKind(group, kind))
        if res is None:
            raise InputError(
                f"the server does not serve the parent kind {GroupKind(group, kind)}",
                obj=f"parent {shown}",
                fix="use kind Secret or ConfigMap, or a custom resource whose CRD is installed and labelled "
                f"{spec.LABEL_PARENT_TYPE}=true",
            )
    else:
        raise InputError("parent must be a string or a dict", obj="parent",
                         fix='e.g. parent: "configmaps/my-app" or parent: {kind: Secret, name: my-app}')

    if res.namespaced:
        namespace = namespace or default_namespace
        if not namespace:
            raise InputError(
                "namespace is required to use namespace-scoped ApplySet",
                obj=f"parent {shown}",
                fix="set the namespace option or parent.namespace",
            )
    elif namespace:
        raise InputError(
            f"{res.kind} is cluster-scoped, so the parent cannot have a namespace",
            obj=f"parent {shown}",
            fix="remove the parent's namespace",
        )
    return res, name, namespace or "", definition


def check_kind_allowed(client: KubeClient, res: Resource) -> None:
    """Secrets and ConfigMaps, or custom resources whose CRD carries the marker label."""
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
    if spec.LABEL_PARENT_TYPE not in ((crd.get("metadata") or {}).get("labels") or {}):
        raise ParentError(message, obj=f"parent kind {res.group_kind}",
                          fix="label its CRD as a parent type: "
                          f"kubectl label crd {res.plural}.{res.group} {spec.LABEL_PARENT_TYPE}=true")


def read(client: KubeClient, discovery: Discovery, res: Resource, name: str, namespace: str,
         *, takeover: bool = False, definition: dict | None = None) -> tuple[Parent, list[str]]:
    """GET and validate the parent. Returns the parent and warnings for the user."""
    applyset_id = spec.compute_id(name, namespace, res.kind, res.group)
    parent = Parent(resource=res, name=name, namespace=namespace, id=applyset_id, definition=definition)
    warnings: list[str] = []
    check_kind_allowed(client, res)
    try:
        live = client.get(res, name, namespace or None)
    except ApiError as err:
        raise ParentError(
            f'failed to fetch ApplySet parent object "{parent.ref}": {err.message}',
            obj=f"parent {parent.ref}",
            fix="check the credentials' RBAC: get on the parent is required",
        ) from None
    if live is None:
        if res.group_kind not in spec.BUILTIN_PARENT_KINDS and definition is None:
            raise ParentError(
                "custom resource ApplySet parents cannot be created automatically",
                obj=f"parent {parent.ref}",
                fix="create the parent first, or give its full definition (apiVersion, kind, metadata, spec) as parent",
            )
        if namespace:
            parent.namespaces.add(namespace)
        return parent, warnings

    meta = live.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    parent.exists = True
    parent.uid = meta.get("uid")
    parent.resource_version = meta.get("resourceVersion")
    parent.tooling = annotations.get(spec.ANNOTATION_TOOLING)
    parent.lock = _parse_lock(annotations.get(spec.ANNOTATION_LOCK))
    where = f'ApplySet parent object "{parent.ref}"'
    takeover_fix = "set takeover: true to make this collection manage the set from now on"

    if parent.tooling is None:
        if not takeover:
            raise ParentError(
                f'{where} already exists and is missing required annotation "{spec.ANNOTATION_TOOLING}"',
                obj=f"parent {parent.ref}",
                fix=f"choose another parent name, or {takeover_fix}",
            )
    elif spec.tooling_name(parent.tooling) != spec.TOOL_NAME and not takeover:
        raise ParentError(
            f'{where} already exists and is managed by tooling "{spec.tooling_name(parent.tooling)}" '
            f'instead of "{spec.TOOL_NAME}"',
            obj=f"parent {parent.ref}",
            fix=f"manage this set with {spec.tooling_name(parent.tooling)}, or {takeover_fix}",
        )

    live_id = labels.get(spec.LABEL_ID)
    if live_id is None and not (takeover and parent.tooling is None):
        raise ParentError(
            f"{where} exists and does not have required label {spec.LABEL_ID}",
            obj=f"parent {parent.ref}",
            fix=f"choose another parent name, or {takeover_fix}" if not takeover else
            f"add the label {spec.LABEL_ID}={applyset_id} by hand after checking the set",
        )
    if live_id is not None and live_id != applyset_id:
        # Never repaired automatically: a copied id would let us prune another set's objects.
        raise ParentError(
            f'{where} exists and has incorrect value for label "{spec.LABEL_ID}" '
            f"(got: {live_id}, want: {applyset_id})",
            obj=f"parent {parent.ref}",
            fix="this may be an impersonation of another set; inspect the parent and its members, then fix "
            "or delete the label by hand",
        )

    parent.legacy_annotation = spec.ANNOTATION_GROUP_RESOURCES in annotations
    recorded, unmapped = _recorded_group_kinds(parent, annotations, discovery, allow_missing=takeover)
    unserved = {gk for gk in recorded if discovery.for_group_kind(gk) is None}
    parent.group_kinds = recorded - unserved
    if unserved or unmapped:
        _sort_unserved(client, discovery, parent, unserved, unmapped, warnings)
    parent.namespaces = spec.parse_namespaces(annotations.get(spec.ANNOTATION_ADDITIONAL_NAMESPACES))
    if namespace:
        parent.namespaces.add(namespace)
    return parent, warnings


def _recorded_group_kinds(parent: Parent, annotations: dict, discovery: Discovery,
                          allow_missing: bool) -> tuple[set, set]:
    """(recorded kinds, legacy (group, resource) entries discovery cannot map).

    kubectl reads contains-group-resources only when contains-group-kinds is absent. When both
    are present (a kubectl 1.27/1.28 set that a newer tool took over), we read both: a prune
    scope may only be wider than kubectl's, never narrower.
    """
    kinds_text = annotations.get(spec.ANNOTATION_GROUP_KINDS)
    legacy = annotations.get(spec.ANNOTATION_GROUP_RESOURCES)
    kinds, unmapped = set(), set()
    if kinds_text is not None:
        kinds = spec.parse_group_kinds(kinds_text)
    elif legacy:
        parent.legacy_hint = True
    elif not allow_missing:
        raise ParentError(
            f'parsing ApplySet annotation on "{parent.ref}": the "{spec.ANNOTATION_GROUP_KINDS}" annotation must be '
            "set on all ApplySet parent objects",
            obj=f"parent {parent.ref}",
            fix="run applyset_verify with fix: true to rebuild the hint from the members, or set takeover: true",
        )
    for group, resource in spec.parse_group_resources(legacy or ""):
        res = discovery.for_resource(group, resource)
        if res is None:
            unmapped.add((group, resource))
        else:
            kinds.add(res.group_kind)
    return kinds, unmapped


def _sort_unserved(client: KubeClient, discovery: Discovery, parent: Parent, unserved: set, unmapped: set,
                   warnings: list) -> None:
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


def _parse_lock(text: str | None) -> dict | None:
    if not text:
        return None
    try:
        lock = json.loads(text)
    except ValueError:
        return None
    return lock if isinstance(lock, dict) else None


def parent_body(parent: Parent, group_kinds, namespaces, lock: dict | None = None) -> dict:
    """The server-side apply body for the parent's labels and annotations.

    With ``lock``, the body also claims the set for one run; without it, server-side
    apply drops a claim this field manager made before.
    """
    meta = {
        "name": parent.name,
        "labels": {spec.LABEL_ID: parent.id},
        "annotations": {
            spec.ANNOTATION_TOOLING: spec.tooling_value(),
            spec.ANNOTATION_GROUP_KINDS: spec.format_group_kinds(group_kinds),
            spec.ANNOTATION_ADDITIONAL_NAMESPACES: spec.format_namespaces(namespaces, parent.namespace),
        },
    }
    if lock:
        meta["annotations"][spec.ANNOTATION_LOCK] = _lock_text(lock)
    if parent.namespace:
        meta["namespace"] = parent.namespace
    if parent.resource_version:
        # Optimistic lock: the write fails with 409 if anyone changed the parent since we read it.
        meta["resourceVersion"] = parent.resource_version
    return {"apiVersion": parent.resource.api_version, "kind": parent.resource.kind, "metadata": meta}


def write(client: KubeClient, parent: Parent, group_kinds, namespaces, *, lock: dict | None = None,
          dry_run: bool = False) -> None:
    """Record the hints (and the run's claim, if any) on the parent, creating it if needed."""
    if not parent.exists:
        # Created without the claim: a field set by a create is owned through an
        # Update operation, which our later server-side applies could not remove.
        body = _creation_body(parent, group_kinds, namespaces, None)
        try:
            created = client.create(parent.resource, body, field_manager=spec.PARENT_FIELD_MANAGER,
                                    dry_run=dry_run).body
        except ApiError as err:
            if err.status == 409:
                raise ParentError(
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
        if lock is None:
            return
    body = parent_body(parent, group_kinds, namespaces, lock)
    # force: after a takeover, or after the create above (an Update operation),
    # other managers may own these fields; the resourceVersion guards concurrency.
    result = _guarded(client, parent, lambda: client.apply(parent.resource, body,
                                                           field_manager=spec.PARENT_FIELD_MANAGER,
                                                           force=True, dry_run=dry_run),
                      landed=lambda live: _says(live, body["metadata"], lock_expected=lock is not None))
    if not dry_run:
        parent.resource_version = result["metadata"]["resourceVersion"]
        parent.tooling = spec.tooling_value()
        parent.lock = lock
        if parent.legacy_annotation:
            drop_legacy_annotation(client, parent)


def drop_legacy_annotation(client: KubeClient, parent: Parent, *, dry_run: bool = False) -> None:
    """Remove contains-group-resources once contains-group-kinds covers it, as kubectl 1.29 does.

    kubectl removes it by leaving it out of its next server-side apply, which works because its
    own parent field manager wrote it. Another manager's apply cannot remove a field it does not
    own, so this is a JSON merge patch of just that key, guarded by the resourceVersion read.
    """
    patch = {"metadata": {"annotations": {spec.ANNOTATION_GROUP_RESOURCES: None},
                          "resourceVersion": parent.resource_version}}
    result = _guarded(client, parent, lambda: client.merge_patch(parent.resource, parent.name,
                                                                 parent.namespace or None, patch,
                                                                 field_manager=spec.PARENT_FIELD_MANAGER,
                                                                 dry_run=dry_run),
                      landed=lambda live: spec.ANNOTATION_GROUP_RESOURCES not in _annotations(live)
                      and _annotations(live).get(spec.ANNOTATION_LOCK) == _lock_text(parent.lock))
    if not dry_run:
        parent.resource_version = result["metadata"]["resourceVersion"]
        parent.legacy_annotation = False


def _creation_body(parent: Parent, group_kinds, namespaces, lock: dict | None) -> dict:
    body = parent_body(parent, group_kinds, namespaces, lock)
    if parent.definition:
        merged = dict(parent.definition)
        meta = dict(merged.get("metadata") or {})
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


def _guarded(client: KubeClient, parent: Parent, send, landed) -> dict:
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


def _annotations(live: dict) -> dict:
    return (live.get("metadata") or {}).get("annotations") or {}


def _lock_text(lock: dict | None) -> str | None:
    return json.dumps(lock, sort_keys=True, separators=(",", ":")) if lock else None


def _says(live: dict, wanted_meta: dict, *, lock_expected: bool) -> bool:
    """Whether the live parent carries every label and annotation of a body we sent."""
    meta = live.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    if any(labels.get(k) != v for k, v in (wanted_meta.get("labels") or {}).items()):
        return False
    if any(annotations.get(k) != v for k, v in (wanted_meta.get("annotations") or {}).items()):
        return False
    return lock_expected or spec.ANNOTATION_LOCK not in annotations


def _stale_error(parent: Parent) -> ParentError:
    return ParentError(
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


def delete(client: KubeClient, parent: Parent, *, dry_run: bool = False) -> None:
    if parent.exists:
        client.delete(parent.resource, parent.name, parent.namespace or None, uid=parent.uid, dry_run=dry_run)
