"""List ApplySets made by any tool, and the members of one or more sets (``applyset_info``).

Everything here only reads. Parents are *inspected*, never judged: a parent that another
tool manages, or whose id label does not match it, is still listed as it is found.
(``parent.read`` refuses such parents because it prepares a write; ``fsck`` turns what is
inspected here into problems.)

Requests stay few and small: every LIST is metadata-only and paginated, parents are found
with label selectors, and the members of many sets are fetched with one LIST per
(kind, namespace) pair for all of them together (a set-based ``part-of in (...)`` selector).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from . import parent as parents
from . import redact, spec
from .errors import ApiError, ApplySetError
from .kube import Discovery, KubeClient, Resource
from .spec import GroupKind


# A set-based selector names every id; ids are 55 characters, so this keeps URLs short.
IDS_PER_SELECTOR = 40


# ----- what is found ---------------------------------------------------------------------


@dataclass(frozen=True)
class Unlisted:
    """A LIST that failed, so whatever it would have shown is unknown (RBAC, an API gone)."""

    group_kind: GroupKind
    namespace: str | None  # None: across all namespaces (or a cluster-scoped kind)
    reason: str

    def to_dict(self) -> dict:
        return {"group_kind": str(self.group_kind), "namespace": self.namespace, "reason": self.reason}


def unlisted_from(err: ApiError, res: Resource, namespace: str | None = None) -> Unlisted:
    return Unlisted(res.group_kind, namespace, f"HTTP {err.status}: {err.message}" if err.status else err.message)


@dataclass(frozen=True)
class Member:
    """One object that carries a ``part-of`` label, as a metadata-only LIST returns it."""

    resource: Resource
    namespace: str | None
    name: str
    uid: str | None
    part_of: str
    owner_references: tuple = ()
    full_object: dict | None = None  # only when full objects were asked for

    @classmethod
    def from_item(cls, res: Resource, item: dict, *, full: bool = False) -> Member:
        """``full``: the item comes from a LIST of whole objects, and is kept."""
        meta = item.get("metadata") or {}
        full_object = None
        if full:
            # LIST items carry no apiVersion/kind of their own.
            full_object = {"apiVersion": res.api_version, "kind": res.kind, **item}
        return cls(
            resource=res,
            namespace=meta.get("namespace") or None,
            name=meta.get("name", ""),
            uid=meta.get("uid"),
            part_of=(meta.get("labels") or {}).get(spec.LABEL_PART_OF, ""),
            owner_references=tuple(meta.get("ownerReferences") or ()),
            full_object=full_object,
        )

    @property
    def group_kind(self) -> GroupKind:
        return self.resource.group_kind

    @property
    def display(self) -> str:
        """``Deployment.apps shop/web``: what a person reads in a message."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.group_kind} {where}"

    @property
    def sort_key(self) -> tuple:
        return (self.resource.group, self.resource.kind, self.namespace or "", self.name)

    def controller(self) -> dict | None:
        """The owner reference marked ``controller: true``, if any."""
        return next((ref for ref in self.owner_references if isinstance(ref, dict) and ref.get("controller")),
                    None)

    def ref(self) -> dict:
        """apiVersion, kind, namespace and name: enough to find the object again."""
        return {"apiVersion": self.resource.api_version, "kind": self.resource.kind,
                "namespace": self.namespace, "name": self.name}

    def to_dict(self, full_object: bool = False) -> dict:
        data = dict(self.ref(), uid=self.uid)
        if full_object and self.full_object is not None:
            data["object"] = redact.hide_secret_data(self.full_object)
        return data


@dataclass(frozen=True)
class SetInfo:
    """One ApplySet parent as found on the cluster, with its hints parsed but not judged."""

    resource: Resource
    name: str
    namespace: str  # "" when cluster-scoped
    uid: str | None
    resource_version: str | None
    live_id: str | None  # the id label as found (None when missing)
    tooling: str | None
    annotations: dict  # the parent's applyset.kubernetes.io/ annotations, verbatim
    group_kinds: frozenset  # recorded GroupKinds, served or not
    unmapped_resources: frozenset  # legacy contains-group-resources entries discovery cannot map
    additional_namespaces: frozenset
    hint_source: str | None  # the annotation the group-kinds came from; None when there is none
    claim: dict | None = None  # applyset_apply's {"run", "expires"} while a run changes the set
    last_written: str | None = None  # newest managedFields time: when any tool last changed the parent

    def claimed(self, now: float | None = None) -> bool:
        """True while a run of applyset_apply holds an unexpired claim on the set."""
        try:
            expires = float((self.claim or {}).get("expires", 0))
        except (TypeError, ValueError):
            return False  # an unreadable claim protects nothing, as in the engine
        return expires > (time.time() if now is None else now)

    @property
    def expected_id(self) -> str:
        return spec.compute_id(self.name, self.namespace, self.resource.kind, self.resource.group)

    @property
    def id_matches(self) -> bool:
        return self.live_id == self.expected_id

    @property
    def tool(self) -> str | None:
        return spec.tooling_name(self.tooling) if self.tooling else None

    @property
    def is_ours(self) -> bool:
        return self.tool == spec.TOOL_NAME

    @property
    def legacy_hint(self) -> bool:
        return self.hint_source == spec.ANNOTATION_GROUP_RESOURCES

    @property
    def namespaces(self) -> frozenset:
        """The namespaces where namespaced members may live: the recorded ones and the parent's own."""
        return self.additional_namespaces | ({self.namespace} if self.namespace else frozenset())

    @property
    def group_kind(self) -> GroupKind:
        return self.resource.group_kind

    @property
    def ref(self) -> str:
        """kubectl-style reference, e.g. ``secrets./shop`` or ``applysets.example.com/shop``."""
        return self.resource.parent_ref(self.name)

    @property
    def display(self) -> str:
        """``Secret shop/web`` or ``ApplySet.example.com platform``."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.group_kind} {where}"

    @property
    def sort_key(self) -> tuple:
        return (self.namespace, self.resource.group, self.resource.kind, self.name)

    def parent_ref(self) -> dict:
        return {"apiVersion": self.resource.api_version, "kind": self.resource.kind,
                "namespace": self.namespace or None, "name": self.name}

    def to_dict(self) -> dict:
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


def inspect_parent(res: Resource, obj: dict, discovery: Discovery) -> SetInfo:
    """Read a parent's label and annotations without raising on anything they hold."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    group_kinds, unmapped, source = _recorded_group_kinds(annotations, discovery)
    return SetInfo(
        resource=res,
        name=meta.get("name", ""),
        namespace=meta.get("namespace") or "",
        uid=meta.get("uid"),
        resource_version=meta.get("resourceVersion"),
        live_id=labels.get(spec.LABEL_ID),
        tooling=annotations.get(spec.ANNOTATION_TOOLING),
        annotations={k: v for k, v in annotations.items() if k.startswith(spec.PREFIX)},
        group_kinds=frozenset(group_kinds),
        unmapped_resources=frozenset(unmapped),
        additional_namespaces=frozenset(spec.parse_namespaces(annotations.get(spec.ANNOTATION_ADDITIONAL_NAMESPACES))),
        hint_source=source,
        claim=_parse_claim(annotations.get(spec.ANNOTATION_LOCK)),
        last_written=_last_written(meta),
    )


def _last_written(meta: dict) -> str | None:
    """The newest time in managedFields (RFC 3339 UTC, so the text sorts as the time does)."""
    times = [entry.get("time") for entry in meta.get("managedFields") or () if isinstance(entry, dict)]
    return max((t for t in times if isinstance(t, str)), default=None)


def _parse_claim(text: str | None) -> dict | None:
    try:
        claim = json.loads(text) if text else None
    except ValueError:
        return None
    return claim if isinstance(claim, dict) else None


def _recorded_group_kinds(annotations: dict, discovery: Discovery) -> tuple[set, set, str | None]:
    """Group-kinds from contains-group-kinds, or else from kubectl 1.27/1.28's contains-group-resources.

    Like kubectl, the legacy annotation is only read when contains-group-kinds is absent. Its
    ``resource.group`` entries are mapped to kinds through discovery; entries the server does
    not serve cannot be mapped and are returned apart.
    """
    kinds_text = annotations.get(spec.ANNOTATION_GROUP_KINDS)
    if kinds_text is not None:
        return spec.parse_group_kinds(kinds_text), set(), spec.ANNOTATION_GROUP_KINDS
    legacy_text = annotations.get(spec.ANNOTATION_GROUP_RESOURCES)
    if not legacy_text:
        return set(), set(), None
    kinds, unmapped = set(), set()
    for group_resource in spec.parse_group_resources(legacy_text):
        res = discovery.for_resource(group_resource.group, group_resource.resource)
        if res is None:
            unmapped.add(group_resource)
        else:
            kinds.add(res.group_kind)
    return kinds, unmapped, spec.ANNOTATION_GROUP_RESOURCES


# ----- finding parents -------------------------------------------------------------------


@dataclass
class SetListing:
    """The sets found, and the parent kinds whose LIST failed (so sets may be missing)."""

    sets: list[SetInfo] = field(default_factory=list)
    unlisted: list[Unlisted] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parent_resources(client: KubeClient, discovery: Discovery, listing: SetListing) -> list[Resource]:
    """Every kind that may be a parent: Secrets, ConfigMaps and custom resources of marked CRDs."""
    found = [res for res in (discovery.for_group_kind(gk) for gk in (spec.SECRET_KIND, spec.CONFIGMAP_KIND))
             if res is not None]
    try:
        crds = list(client.list(parents.CRD_RESOURCE, label_selector=spec.LABEL_PARENT_TYPE))
    except ApiError as err:
        listing.unlisted.append(unlisted_from(err, parents.CRD_RESOURCE))
        listing.warnings.append(
            "custom resource parents were not looked for: listing CustomResourceDefinitions labelled "
            f"{spec.LABEL_PARENT_TYPE} failed ({err.message})")
        return found
    for crd in crds:
        crd_name = (crd.get("metadata") or {}).get("name", "")
        plural, _dot, group = crd_name.partition(".")  # a CRD is always named <plural>.<group>
        res = discovery.for_resource(group, plural)
        if res is None:
            listing.warnings.append(f"CustomResourceDefinition {crd_name} is marked as an ApplySet parent type "
                                    "but the server does not serve it (yet); its parents were not looked for")
        else:
            found.append(res)
    return found


def _parent_selector(res: Resource) -> str | None:
    # Any Secret or ConfigMap may exist, so only the labelled ones are parents. Every custom
    # resource of a marked CRD exists to be a parent: list them all, so that one whose id
    # label is missing is seen (and reported by verify) rather than silently skipped.
    return spec.LABEL_ID if res.group_kind in spec.BUILTIN_PARENT_KINDS else None


def find_sets(client: KubeClient, discovery: Discovery, namespace: str | None = None) -> SetListing:
    """List the parents of every tool, in one namespace or (namespace None) cluster-wide.

    With a namespace, only parents in that namespace are listed; cluster-scoped custom
    resource parents live in no namespace and are left out.
    """
    listing = SetListing()
    resources = parent_resources(client, discovery, listing)
    if namespace:
        resources = [res for res in resources if res.namespaced]

    def fetch(res):
        return list(client.list(res, namespace if res.namespaced else None, label_selector=_parent_selector(res)))

    for res, items in zip(resources, client.map(fetch, resources)):
        if isinstance(items, ApiError):
            listing.unlisted.append(unlisted_from(items, res, namespace if res.namespaced else None))
            continue
        if isinstance(items, Exception):
            raise items
        listing.sets += [inspect_parent(res, item, discovery) for item in items]
    listing.sets.sort(key=lambda s: s.sort_key)
    return listing


def get_set(client: KubeClient, discovery: Discovery, parent_spec,
            namespace: str | None) -> tuple[SetInfo | None, Resource, str, str]:
    """Find one set by its parent, given as in applyset_apply (string, reference or definition).

    Returns (set or None when the parent does not exist, resource, name, namespace).
    Raises ``InputError``/``ParentError`` for a reference that cannot name a parent.
    """
    res, name, parent_namespace, _definition = parents.resolve(discovery, parent_spec, namespace)
    parents.check_kind_allowed(client, res)
    try:
        live = client.get(res, name, parent_namespace or None)
    except ApiError as err:
        where = f" in namespace {parent_namespace}" if parent_namespace else ""
        raise ApplySetError(
            f"reading the ApplySet parent failed: {err.message}",
            obj=f"parent {res.group_kind} {name}{where}",
            fix="the credentials need get on the parent",
        ) from None
    if live is None:
        return None, res, name, parent_namespace
    return inspect_parent(res, live, discovery), res, name, parent_namespace


# ----- finding members -------------------------------------------------------------------


@dataclass
class MemberListing:
    """Members by set id, and the (kind, namespace) LISTs that failed."""

    by_id: dict = field(default_factory=dict)  # expected id -> list[Member], sorted
    unlisted: list[Unlisted] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def scope_of(set_info: SetInfo, discovery: Discovery) -> list[tuple[Resource, str | None]]:
    """(resource, namespace) pairs where the set's members may live, as prune sees them.

    Namespaced kinds are looked for in the recorded namespaces only: that is all a prune
    would look at. Kinds the server does not serve cannot hold objects and are skipped.
    """
    pairs = []
    for gk in sorted(set_info.group_kinds):
        res = discovery.for_group_kind(gk)
        if res is None:
            continue
        if res.namespaced:
            pairs += [(res, ns) for ns in sorted(set_info.namespaces)]
        else:
            pairs.append((res, None))
    return pairs


def find_members(client: KubeClient, discovery: Discovery, sets: list[SetInfo], *,
                 full_objects: bool = False) -> MemberListing:
    """The members of each set in its recorded scope, keyed by the set's expected id.

    A member is an object labelled ``part-of=<id>`` where the id is the one computed from
    the parent (what a prune would use); a forged id label on the parent does not change
    which objects belong to it. Sets that share a (kind, namespace) pair share its LIST.
    """
    wanted: dict[tuple, set] = {}
    for set_info in sets:
        for pair in scope_of(set_info, discovery):
            wanted.setdefault(pair, set()).add(set_info.expected_id)
    requests = []
    for (res, ns), ids in sorted(wanted.items(), key=lambda kv: (kv[0][0].group, kv[0][0].kind, kv[0][1] or "")):
        ordered = sorted(ids)
        for start in range(0, len(ordered), IDS_PER_SELECTOR):
            requests.append((res, ns, ordered[start:start + IDS_PER_SELECTOR]))

    def fetch(request):
        res, ns, ids = request
        selector = (f"{spec.LABEL_PART_OF}={ids[0]}" if len(ids) == 1
                    else f"{spec.LABEL_PART_OF} in ({','.join(ids)})")
        return list(client.list(res, ns, label_selector=selector, metadata_only=not full_objects))

    listing = MemberListing(by_id={s.expected_id: [] for s in sets})
    for (res, ns, ids), items in zip(requests, client.map(fetch, requests)):
        if isinstance(items, ApiError):
            listing.unlisted.append(unlisted_from(items, res, ns))
            continue
        if isinstance(items, Exception):
            raise items
        for item in items:
            member = Member.from_item(res, item, full=full_objects)
            if member.part_of in listing.by_id:
                listing.by_id[member.part_of].append(member)
    for members in listing.by_id.values():
        members.sort(key=lambda m: m.sort_key)
    return listing


# ----- the applyset_info run ---------------------------------------------------------------


@dataclass
class InfoReport:
    applysets: list = field(default_factory=list)  # dicts, sorted
    unlisted: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.unlisted

    def to_dict(self) -> dict:
        return {
            "applysets": self.applysets,
            "complete": self.complete,
            "unlisted": sorted((u.to_dict() for u in self.unlisted),
                               key=lambda u: (u["group_kind"], u["namespace"] or "")),
        }


def describe(client: KubeClient, *, parent_spec=None, namespace: str | None = None, members: bool = False,
             member_count: bool = False, full_objects: bool = False, readiness=None) -> InfoReport:
    """List sets (no parent) or view one set (parent given), for ``applyset_info``.

    ``members`` adds each set's member list, ``full_objects`` the whole objects in it, and
    ``member_count`` just the count. ``readiness``, when given, is a function
    ``obj -> (ready, reason)`` (``health.is_ready``) that adds ``ready`` and ``reason`` to
    each member; it implies the member list.
    """
    discovery = client.discover()
    report = InfoReport()
    if parent_spec is not None:
        set_info, res, name, parent_namespace = get_set(client, discovery, parent_spec, namespace)
        sets = [set_info] if set_info is not None else []
        if set_info is None:
            where = f" in namespace {parent_namespace}" if parent_namespace else ""
            report.warnings.append(f"the ApplySet parent {res.kind} {name}{where} does not exist, so applysets is "
                                   "empty; check the parent's kind, name and namespace")
    else:
        listing = find_sets(client, discovery, namespace)
        sets, report.unlisted, report.warnings = listing.sets, listing.unlisted, listing.warnings
    list_members = members or full_objects or readiness is not None
    found = None
    if sets and (list_members or member_count):
        # Readiness is judged on status, which only whole objects carry.
        found = find_members(client, discovery, sets, full_objects=full_objects or readiness is not None)
        report.unlisted += found.unlisted
    for set_info in sets:
        entry = set_info.to_dict()
        if found is not None:
            set_members = found.by_id[set_info.expected_id]
            entry["member_count"] = len(set_members)
            if list_members:
                entry["members"] = [_member_entry(m, full_objects, readiness) for m in set_members]
        report.applysets.append(entry)
    return report


def _member_entry(member: Member, full_objects: bool, readiness) -> dict:
    entry = member.to_dict(full_object=full_objects)
    if readiness is not None and member.full_object is not None:
        ready, reason = readiness(member.full_object)
        entry["ready"] = ready
        entry["reason"] = reason
    return entry
