"""Resolve, read, validate and write the ApplySet parent.

The parent records the set: its ``id`` label, the ``tooling`` annotation and the hints
(``contains-group-kinds``, ``additional-namespaces``) that tell a later run where members may
live. What a live parent object says is parsed in one place, ``inspect``, into a ``LiveParent``
that judges nothing; ``applyset_info`` and ``applyset_verify`` report it as it is. ``read``
judges it before a run writes: it refuses anything that could make us prune the wrong objects
(a forged or mismatched id, another tool's set unless the user asks to take it over, a parent
kind the specification does not allow). Writes are server-side applies with a resourceVersion
precondition, so two runs can never interleave their parent updates silently.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from . import retention, spec
from .errors import ApiError, InputError, ParentError, missing_namespace
from .kube import Discovery, KubeClient, Resource
from .spec import GroupKind


# ----- what a live parent says -------------------------------------------------------------


def claim_holds(claim: dict | None, now: float, *, other_than: str | None = None) -> bool:
    """Whether a run's claim on a set is still in force.

    :param claim: the parsed claim annotation, ``{"run": RUN_ID, "expires": UNIX_TIME}``, or None.
    :param now: the current time (``time.time()``).
    :param other_than: a run id whose own claim does not count (the run asking).
    :returns: True while the claim has not expired (and belongs to another run when
        ``other_than`` is given). An unreadable expiry protects nothing, so it gives False.
    """
    if not claim:
        return False
    try:
        expires = float(claim.get("expires", 0))
    except (TypeError, ValueError):
        return False
    return expires > now and (other_than is None or claim.get("run") != other_than)


@dataclass(frozen=True)
class LiveParent:
    """What one live ApplySet parent object says, parsed but not judged.

    Built by ``inspect`` only. The engine's ``read`` refuses what it must from it; inventory and
    fsck report it as found (a forged id, another tool's set, a missing hint).

    The recorded kinds are read from both hint annotations: ``contains-group-kinds`` and
    kubectl 1.27/1.28's ``contains-group-resources``. kubectl reads the legacy one only when
    the other is absent; reading both when both are present makes a prune scope wider than
    kubectl's, never narrower, so no member of either is ever missed.
    """

    resource: Resource
    name: str
    namespace: str  # "" when cluster-scoped
    uid: str | None
    resource_version: str | None
    live_id: str | None  # the id label as found (None when missing)
    tooling: str | None
    annotations: dict  # the parent's applyset.kubernetes.io/ annotations, verbatim
    group_kinds: frozenset  # recorded GroupKinds from both hint annotations, served or not
    legacy_group_kinds: frozenset  # the part of group_kinds that contains-group-resources names
    unmapped_resources: frozenset  # legacy GroupResource entries that discovery cannot map to a kind
    additional_namespaces: frozenset
    claim: dict | None = None  # applyset_apply's {"run", "expires"} while a run changes the set
    last_written: str | None = None  # newest managedFields time: when any tool last changed the parent

    def claimed(self, now: float | None = None) -> bool:
        """Whether a run of applyset_apply holds an unexpired claim on the set.

        :param now: the current time; None for ``time.time()``.
        """
        return claim_holds(self.claim, time.time() if now is None else now)

    @property
    def hint_source(self) -> str | None:
        """The annotation the recorded kinds come from: ``contains-group-kinds`` when present,
        else ``contains-group-resources`` when it lists anything, else None (no hint)."""
        if spec.ANNOTATION_GROUP_KINDS in self.annotations:
            return spec.ANNOTATION_GROUP_KINDS
        if self.annotations.get(spec.ANNOTATION_GROUP_RESOURCES):
            return spec.ANNOTATION_GROUP_RESOURCES
        return None

    @property
    def legacy_hint(self) -> bool:
        """The kinds are recorded only in contains-group-resources (a kubectl 1.27/1.28 set)."""
        return self.hint_source == spec.ANNOTATION_GROUP_RESOURCES

    @property
    def legacy_annotation(self) -> bool:
        """contains-group-resources is present, alone or beside contains-group-kinds."""
        return spec.ANNOTATION_GROUP_RESOURCES in self.annotations

    @property
    def legacy_only_group_kinds(self) -> frozenset:
        """Recorded kinds that only contains-group-resources names, beside contains-group-kinds."""
        if self.hint_source != spec.ANNOTATION_GROUP_KINDS:
            return frozenset()
        return self.legacy_group_kinds - spec.parse_group_kinds(self.annotations.get(spec.ANNOTATION_GROUP_KINDS))

    @property
    def expected_id(self) -> str:
        """The id computed from the parent's name, namespace and kind: the one a prune uses."""
        return spec.compute_id(self.name, self.namespace, self.resource.kind, self.resource.group)

    @property
    def id_matches(self) -> bool:
        """The id label is the expected id (False when it is missing)."""
        return self.live_id == self.expected_id

    @property
    def tool(self) -> str | None:
        """The managing tool's name from the tooling annotation (``kubectl``), or None."""
        return spec.tooling_name(self.tooling) if self.tooling else None

    @property
    def is_ours(self) -> bool:
        """The tooling annotation names this collection."""
        return self.tool == spec.TOOL_NAME

    @property
    def namespaces(self) -> frozenset:
        """The namespaces where namespaced members may live: the recorded ones and the parent's own."""
        return self.additional_namespaces | ({self.namespace} if self.namespace else frozenset())

    @property
    def group_kind(self) -> GroupKind:
        """The parent's API group and kind."""
        return self.resource.group_kind

    @property
    def object_id(self) -> spec.ObjectId:
        """Which object the parent is: group, kind, namespace and name."""
        return spec.ObjectId.of(self.resource, self.namespace, self.name)

    @property
    def ref(self) -> str:
        """kubectl-style reference, e.g. ``secrets./shop`` or ``applysets.example.com/shop``."""
        return self.resource.parent_ref(self.name)

    @property
    def display(self) -> str:
        """``Secret shop/web`` or ``ApplySet.example.com platform``."""
        return str(self.object_id)

    @property
    def sort_key(self) -> tuple:
        """Parents sort by namespace first, then kind and name (the order of info's output)."""
        return (self.namespace, self.resource.group, self.resource.kind, self.name)

    def parent_ref(self) -> dict:
        """apiVersion, kind, namespace (None when cluster-scoped) and name of the parent."""
        return {"apiVersion": self.resource.api_version, "kind": self.resource.kind,
                "namespace": self.namespace or None, "name": self.name}

    def to_dict(self) -> dict:
        """The set as applyset_info and applyset_verify show it."""
        return {
            "parent": self.parent_ref(),
            "id": self.live_id,
            "expected_id": self.expected_id,
            "id_matches": self.id_matches,
            "tooling": self.tooling,
            "tool": self.tool,
            "group_kinds": sorted(str(gk) for gk in self.group_kinds),
            "namespaces": sorted(self.namespaces),
            "hint_annotation": self.hint_source,
            "claim": self.claim,
            "last_written": self.last_written,
        }


def inspect(res: Resource, obj: dict, discovery: Discovery) -> LiveParent:
    """Parse a live parent object's id label, tooling, hints and claim; never raises on their content.

    :param res: the parent's resource (its kind, as discovery serves it).
    :param obj: the parent object as a GET or LIST returned it (only ``metadata`` is read).
    :param discovery: maps the legacy ``resource.group`` entries to kinds; entries it does
        not serve are kept apart in ``unmapped_resources``.
    :returns: the ``LiveParent``.
    """
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    kinds = spec.parse_group_kinds(annotations.get(spec.ANNOTATION_GROUP_KINDS))
    legacy_kinds, unmapped = set(), set()
    for group_resource in spec.parse_group_resources(annotations.get(spec.ANNOTATION_GROUP_RESOURCES)):
        mapped = discovery.for_resource(group_resource.group, group_resource.resource)
        if mapped is None:
            unmapped.add(group_resource)
        else:
            legacy_kinds.add(mapped.group_kind)
    return LiveParent(
        resource=res,
        name=meta.get("name", ""),
        namespace=meta.get("namespace") or "",
        uid=meta.get("uid"),
        resource_version=meta.get("resourceVersion"),
        live_id=labels.get(spec.LABEL_ID),
        tooling=annotations.get(spec.ANNOTATION_TOOLING),
        annotations={k: v for k, v in annotations.items() if k.startswith(spec.PREFIX)},
        group_kinds=frozenset(kinds | legacy_kinds),
        legacy_group_kinds=frozenset(legacy_kinds),
        unmapped_resources=frozenset(unmapped),
        additional_namespaces=frozenset(spec.parse_namespaces(annotations.get(spec.ANNOTATION_ADDITIONAL_NAMESPACES))),
        claim=_parse_claim(annotations.get(spec.ANNOTATION_CLAIM)),
        last_written=_last_written(meta),
    )


def _parse_claim(text: str | None) -> dict | None:
    """The claim annotation's JSON object; anything unreadable is no claim."""
    try:
        claim = json.loads(text) if text else None
    except ValueError:
        return None
    return claim if isinstance(claim, dict) else None


def _claim_text(claim: dict | None) -> str | None:
    """The claim annotation's value, written byte-for-byte the same for the same claim."""
    return json.dumps(claim, sort_keys=True, separators=(",", ":")) if claim else None


def _last_written(meta: dict) -> str | None:
    """The newest time in managedFields (RFC 3339 UTC, so the text sorts as the time does)."""
    times = [entry.get("time") for entry in meta.get("managedFields") or () if isinstance(entry, dict)]
    return max((t for t in times if isinstance(t, str)), default=None)


# ----- the parent a run writes -------------------------------------------------------------


@dataclass
class Parent:
    """The parent as a run of the engine holds it: found on the cluster, or about to be created.

    Unlike ``LiveParent`` it changes as the run writes (resourceVersion, claim, tooling), and its
    recorded kinds are sorted by whether the server serves them.
    """

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
    legacy_annotation: bool = False  # contains-group-resources present, alone or beside contains-group-kinds
    claim: dict | None = None  # {"run", "expires"} while some run changes the set

    @classmethod
    def from_live(cls, live: LiveParent, *, definition: dict | None = None) -> Parent:
        """The engine's model of an existing parent, before its recorded kinds are sorted.

        :param live: what the parent object says (``inspect``).
        :param definition: the custom-resource parent's definition, when the user gave one.
        :returns: a ``Parent`` whose ``id`` is the expected id (never the live label) and whose
            ``group_kinds`` hold every recorded kind; ``read`` then moves unserved ones out.
        """
        return cls(resource=live.resource, name=live.name, namespace=live.namespace, id=live.expected_id,
                   exists=True, uid=live.uid, resource_version=live.resource_version, tooling=live.tooling,
                   group_kinds=set(live.group_kinds), namespaces=set(live.namespaces), definition=definition,
                   legacy_annotation=live.legacy_annotation, claim=live.claim)

    def claimed_by_other(self, run_id: str, now: float) -> bool:
        """Whether another run's claim on the set has not expired.

        :param run_id: this run's id (its own claim does not count).
        :param now: the current time (``time.time()``).
        """
        return claim_holds(self.claim, now, other_than=run_id)

    @property
    def group_kind(self) -> GroupKind:
        """The parent's API group and kind."""
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
        """The id, parent reference and tooling, as the module result's ``applyset`` shows them."""
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
    definition = None
    if isinstance(parent_spec, str):
        res, name, namespace, shown = _resolve_text(discovery, parent_spec)
    elif isinstance(parent_spec, dict):
        if "metadata" in parent_spec:
            definition = parent_spec
            meta = parent_spec.get("metadata") or {}
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


def _resolve_reference(discovery: Discovery, ref: dict) -> tuple[Resource, str, str | None, str]:
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


def check_kind_allowed(client: KubeClient, res: Resource) -> None:
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
        crd = client.get(retention.CRD_RESOURCE, f"{res.plural}.{res.group}")
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


def parent_body(parent: Parent, group_kinds, namespaces, claim: dict | None = None) -> dict:
    """The server-side apply body for the parent's labels and annotations.

    :param parent: the parent to write (its id, name, namespace and read resourceVersion).
    :param group_kinds: the kinds to record in contains-group-kinds.
    :param namespaces: the namespaces to record; the parent's own is left out of the annotation.
    :param claim: with a claim (``{"run", "expires"}``), the body also claims the set for one
        run; without it, server-side apply drops a claim this field manager made before.
    :returns: the body, with our tooling value and, when the parent was read, its
        resourceVersion as a precondition.
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
    if claim:
        meta["annotations"][spec.ANNOTATION_CLAIM] = _claim_text(claim)
    if parent.namespace:
        meta["namespace"] = parent.namespace
    if parent.resource_version:
        # Optimistic concurrency: the write fails with 409 if anyone changed the parent since we read it.
        meta["resourceVersion"] = parent.resource_version
    return {"apiVersion": parent.resource.api_version, "kind": parent.resource.kind, "metadata": meta}


def write(client: KubeClient, parent: Parent, group_kinds, namespaces, *, claim: dict | None = None,
          dry_run: bool = False) -> None:
    """Record the hints (and the run's claim, if any) on the parent, creating it if needed.

    :param client: the API client.
    :param parent: the parent; updated in place with the new resourceVersion, tooling and claim.
    :param group_kinds: the kinds to record.
    :param namespaces: the namespaces to record.
    :param claim: the run's claim to write with the hints, or None to write it away.
    :param dry_run: send the writes as server-side dry runs; ``parent`` is left unchanged.
    :raises ParentError: when the parent changed since it was read (resourceVersion stale), was
        created by someone else meanwhile, or the write fails (the message names the cause).
    """
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


def drop_legacy_annotation(client: KubeClient, parent: Parent, *, dry_run: bool = False) -> None:
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


def _creation_body(parent: Parent, group_kinds, namespaces, claim: dict | None) -> dict:
    body = parent_body(parent, group_kinds, namespaces, claim)
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


def _says(live: dict, wanted_meta: dict, *, claim_expected: bool) -> bool:
    """Whether the live parent carries every label and annotation of a body we sent."""
    meta = live.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    if any(labels.get(k) != v for k, v in (wanted_meta.get("labels") or {}).items()):
        return False
    if any(annotations.get(k) != v for k, v in (wanted_meta.get("annotations") or {}).items()):
        return False
    return claim_expected or spec.ANNOTATION_CLAIM not in annotations


def records(parent: Parent, live: dict, group_kinds, namespaces) -> bool:
    """Whether the live parent already carries exactly what a release would write.

    Args:
        parent: the parent as this run read it.
        live: the parent object as read now.
        group_kinds, namespaces: the hint the release would record.

    Returns:
        True when every label and annotation of that body is there, with no claim and no legacy
        ``contains-group-resources`` hint (which a release would remove): not writing it changes nothing.
    """
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    return (_says(live, parent_body(parent, group_kinds, namespaces)["metadata"], claim_expected=False)
            and spec.ANNOTATION_GROUP_RESOURCES not in annotations)


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
    """Delete the parent, if it exists, with a UID precondition (never a namesake made meanwhile).

    :param client: the API client.
    :param parent: the parent to delete.
    :param dry_run: send the DELETE as a server-side dry run.
    """
    if parent.exists:
        client.delete(parent.resource, parent.name, parent.namespace or None, uid=parent.uid, dry_run=dry_run)
