"""List ApplySets made by any tool, and the members of one or more sets (``applyset_info``).

Everything here only reads. Parents are *inspected* (``parent.model.inspect``, the one parsing of
a parent object), never judged: a parent that another tool manages, or whose id label does
not match it, is still listed as it is found. (``parent.read.read`` refuses such parents because
it prepares a write; ``fsck`` turns what is inspected here into problems.)

Requests stay few and small: every LIST is metadata-only and paginated, parents are found
with label selectors, and the members of many sets are fetched with one LIST per
(kind, namespace) pair for all of them together (a set-based ``part-of in (...)`` selector).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar

from ..object_meta import KubeObject, OwnerReference, metadata_of
from ..parent import resolve as parent_resolve
from ..parent import model as parent_model
from ..inputs import redact
from .. import spec
from ..errors import ApiError, ApplySetError
from ..kube.discovery import CRD_RESOURCE
from ..kube.discovery import Discovery, Resource
from ..kube.api import KubeApi
from ..kube.list_errors import ListFailure, explain_error
from ..kube.versions import VersionFallback
from ..parent.model import LiveParent, ObjectReference
from ..spec import GroupKind, ObjectId
from ..wait.status import Readiness


# One LIST ``answered`` sends: a tuple that begins with the resource and the namespace.
Request = TypeVar("Request", bound=tuple)
# What a LIST fetched for ``answered``: the resource of the version that answered, and the items.
Fetched = tuple[Resource, list[KubeObject]]


class UnlistedRow(TypedDict):
    """A failed LIST as the modules return it in ``unlisted``."""

    group_kind: str
    namespace: str | None
    reason: str


# A set-based selector names every id; ids are 55 characters, so this keeps URLs short.
IDS_PER_SELECTOR = 40


# ----- what is found ---------------------------------------------------------------------


@dataclass(frozen=True)
class Unlisted:
    """A LIST that failed, so whatever it would have shown is unknown (RBAC, an API gone), and why
    (``failure``: ``kube.list_errors.explain``'s answer)."""

    group_kind: GroupKind
    namespace: str | None  # None: across all namespaces (or a cluster-scoped kind)
    reason: str
    failure: ListFailure | None = None

    @property
    def refused(self) -> bool:
        """The credentials were refused (401) or may not list it (403)."""
        return self.failure is not None and self.failure.credentials

    def to_dict(self) -> UnlistedRow:
        """The failed LIST as the modules return it in ``unlisted``."""
        return {"group_kind": str(self.group_kind), "namespace": self.namespace, "reason": self.reason}


def unlisted_from(err: ApiError, res: Resource, namespace: str | None = None) -> Unlisted:
    """The ``Unlisted`` record of a failed LIST.

    :param err: the LIST's error.
    :param res: the resource listed.
    :param namespace: the namespace listed, None across all namespaces.
    """
    return Unlisted(res.group_kind, namespace, f"HTTP {err.status}: {err.message}" if err.status else err.message,
                    explain_error(err, res, namespace))


def answered(client: KubeApi, fetch: Callable[[Request], Fetched], requests: Sequence[Request],
             unlisted: list[Unlisted]) -> Iterator[tuple[Request, Resource, list[KubeObject]]]:
    """Run ``fetch`` (``request -> (resource used, items)``) on each of ``requests`` (tuples that
    begin with the resource and the namespace) in parallel.

    :yields: ``(request, resource used, items)`` for each request answered, in order; an
        ``Unlisted`` is appended to ``unlisted`` for each ``ApiError``.
    :raises Exception: anything else a request raised.
    """
    for request, answer in zip(requests, client.map(fetch, requests)):
        if isinstance(answer, ApiError):
            unlisted.append(unlisted_from(answer, request[0], request[1]))
            continue
        if isinstance(answer, Exception):
            raise answer
        used, items = answer
        yield request, used, items


@dataclass(frozen=True)
class LiveMember:
    """One live object that carries a ``part-of`` label, as a metadata-only LIST returns it.

    (The objects a run wants to apply are ``plan``'s; these are the ones found on the cluster.)
    """

    resource: Resource
    namespace: str | None
    name: str
    uid: str | None
    part_of: str
    owner_references: tuple[OwnerReference, ...] = ()
    full_object: KubeObject | None = None  # only when full objects were asked for

    @classmethod
    def from_item(cls, res: Resource, item: KubeObject, *, full: bool = False) -> LiveMember:
        """Build it from one item of a LIST.

        :param res: the resource listed.
        :param item: the LIST item (items carry no apiVersion or kind of their own).
        :param full: the item comes from a LIST of whole objects, and is kept in ``full_object``.
        """
        meta = metadata_of(item)
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
        """The member's API group and kind."""
        return self.resource.group_kind

    @property
    def object_id(self) -> ObjectId:
        """Which object: group, kind, namespace and name."""
        return ObjectId.of(self.resource, self.namespace, self.name)

    @property
    def display(self) -> str:
        """``Deployment.apps shop/web``: what a person reads in a message."""
        return str(self.object_id)

    @property
    def sort_key(self) -> ObjectId:
        """Members sort by group, kind, namespace and name."""
        return self.object_id

    def controller(self) -> OwnerReference | None:
        """The owner reference marked ``controller: true``, if any."""
        return next((ref for ref in self.owner_references if isinstance(ref, dict) and ref.get("controller")),
                    None)

    def ref(self) -> ObjectReference:
        """apiVersion, kind, namespace and name: enough to find the object again."""
        return {"apiVersion": self.resource.api_version, "kind": self.resource.kind,
                "namespace": self.namespace, "name": self.name}

    def to_dict(self, full_object: bool = False) -> dict[str, Any]:
        """The member as info shows it: its ``ref()`` and uid.

        :param full_object: add the whole object (Secret data hidden) when it was listed.
        """
        data: dict[str, Any] = dict(self.ref(), uid=self.uid)
        if full_object and self.full_object is not None:
            data["object"] = redact.hide_secret_data(self.full_object)
        return data


# ----- finding parents -------------------------------------------------------------------


@dataclass
class SetListing:
    """The sets found, and the parent kinds whose LIST failed (so sets may be missing)."""

    sets: list[LiveParent] = field(default_factory=list)
    unlisted: list[Unlisted] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parent_resources(client: KubeApi, discovery: Discovery, listing: SetListing) -> list[Resource]:
    """Every kind that may be a parent: Secrets, ConfigMaps and custom resources of marked CRDs.

    :param client: the API client (the marked CRDs are listed).
    :param discovery: the server's discovery.
    :param listing: receives an ``Unlisted`` and a warning when the CRDs cannot be listed,
        and a warning for a marked CRD the server does not serve.
    :returns: the parent resources found.
    """
    found = [res for res in (discovery.for_group_kind(gk) for gk in (spec.SECRET_KIND, spec.CONFIGMAP_KIND))
             if res is not None]
    try:
        crds = list(client.list(CRD_RESOURCE, label_selector=spec.LABEL_PARENT_TYPE))
    except ApiError as err:
        listing.unlisted.append(unlisted_from(err, CRD_RESOURCE))
        listing.warnings.append(
            "custom resource parents were not looked for: listing CustomResourceDefinitions labelled "
            f"{spec.LABEL_PARENT_TYPE} failed ({err.message})")
        return found
    for crd in crds:
        crd_name = metadata_of(crd).get("name", "")
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


def find_sets(client: KubeApi, discovery: Discovery, namespace: str | None = None) -> SetListing:
    """List the parents of every tool, in one namespace or cluster-wide.

    :param client: the API client.
    :param discovery: the server's discovery.
    :param namespace: list only parents in this namespace (cluster-scoped custom resource
        parents live in no namespace and are left out); None lists them all.
    :returns: the sets found, sorted, with the parent LISTs that failed.
    :raises Exception: anything but an ``ApiError`` from a LIST propagates.
    """
    listing = SetListing()
    resources = parent_resources(client, discovery, listing)
    if namespace:
        resources = [res for res in resources if res.namespaced]

    def fetch(res: Resource) -> list[KubeObject]:
        return list(client.list(res, namespace if res.namespaced else None, label_selector=_parent_selector(res)))

    for res, items in zip(resources, client.map(fetch, resources)):
        if isinstance(items, ApiError):
            listing.unlisted.append(unlisted_from(items, res, namespace if res.namespaced else None))
            continue
        if isinstance(items, Exception):
            raise items
        listing.sets += [parent_model.inspect(res, item, discovery) for item in items]
    listing.sets.sort(key=lambda s: s.sort_key)
    return listing


def get_set(client: KubeApi, discovery: Discovery, parent_spec: object,
            namespace: str | None) -> tuple[LiveParent | None, Resource, str, str]:
    """Find one set by its parent, given as in applyset_apply.

    :param client: the API client.
    :param discovery: the server's discovery.
    :param parent_spec: the parent as a string, a reference or a definition (``kubeyaml.scalars.resolve``).
    :param namespace: the namespace of a namespaced parent that names none.
    :returns: ``(set, resource, name, namespace)``; set is None when the parent does not exist.
    :raises InputError: for a reference that cannot name a parent.
    :raises ParentError: for a kind that may not be a parent.
    :raises ApplySetError: when the GET of the parent fails.
    """
    res, name, parent_namespace, _definition = parent_resolve.resolve(discovery, parent_spec, namespace)
    parent_resolve.check_kind_allowed(client, res)
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
    return parent_model.inspect(res, live, discovery), res, name, parent_namespace


# ----- finding members -------------------------------------------------------------------


@dataclass
class MemberListing:
    """Members by set id, and the (kind, namespace) LISTs that failed."""

    by_id: dict[str, list[LiveMember]] = field(default_factory=dict)  # expected id -> members, sorted
    unlisted: list[Unlisted] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def scope_of(set_info: LiveParent, discovery: Discovery) -> list[tuple[Resource, str | None]]:
    """Where the set's members may live, as prune sees them.

    Namespaced kinds are looked for in the recorded namespaces only: that is all a prune
    would look at. Kinds the server does not serve cannot be listed and are skipped.

    :param set_info: the set's parent.
    :param discovery: the server's discovery.
    :returns: ``(resource, namespace)`` pairs; namespace None for a cluster-scoped kind.
    """
    pairs: list[tuple[Resource, str | None]] = []
    for gk in sorted(set_info.group_kinds):
        res = discovery.for_group_kind(gk)
        if res is None:
            continue
        if res.namespaced:
            pairs += [(res, ns) for ns in sorted(set_info.namespaces)]
        else:
            pairs.append((res, None))
    return pairs


def find_members(client: KubeApi, discovery: Discovery, sets: list[LiveParent], *,
                 full_objects: bool = False) -> MemberListing:
    """The members of each set in its recorded scope, keyed by the set's expected id.

    A member is an object labelled ``part-of=<id>`` where the id is the one computed from
    the parent (what a prune would use); a forged id label on the parent does not change
    which objects belong to it. Sets that share a (kind, namespace) pair share its LIST.

    :param client: the API client.
    :param discovery: the server's discovery.
    :param sets: the sets' parents.
    :param full_objects: list whole objects instead of metadata only, and keep them.
    :returns: the members by expected id (each list sorted), and the LISTs that failed.
    :raises Exception: anything but an ``ApiError`` from a LIST propagates.
    """
    wanted: dict[tuple[Resource, str | None], set[str]] = {}
    for set_info in sets:
        for pair in scope_of(set_info, discovery):
            wanted.setdefault(pair, set()).add(set_info.expected_id)
    requests: list[tuple[Resource, str | None, list[str]]] = []
    for (res, ns), ids in sorted(wanted.items(), key=lambda kv: (kv[0][0].group, kv[0][0].kind, kv[0][1] or "")):
        ordered = sorted(ids)
        for start in range(0, len(ordered), IDS_PER_SELECTOR):
            requests.append((res, ns, ordered[start:start + IDS_PER_SELECTOR]))

    fallback = VersionFallback(client, discovery)

    def fetch(request: tuple[Resource, str | None, list[str]]) -> Fetched:
        res, ns, ids = request
        selector = (f"{spec.LABEL_PART_OF}={ids[0]}" if len(ids) == 1
                    else f"{spec.LABEL_PART_OF} in ({','.join(ids)})")
        return fallback.list(res, ns, label_selector=selector, metadata_only=not full_objects)

    listing = MemberListing(by_id={s.expected_id: [] for s in sets})
    for _request, used, items in answered(client, fetch, requests, listing.unlisted):
        for item in items:
            member = LiveMember.from_item(used, item, full=full_objects)
            if member.part_of in listing.by_id:
                listing.by_id[member.part_of].append(member)
    for members in listing.by_id.values():
        members.sort(key=lambda m: m.sort_key)
    listing.warnings += fallback.notes
    return listing


# ----- the applyset_info run ---------------------------------------------------------------


@dataclass
class InfoReport:
    """What applyset_info returns: the sets (dicts), the LISTs that failed, warnings."""

    applysets: list[dict[str, Any]] = field(default_factory=list)  # LiveParent.to_dict rows, sorted
    unlisted: list[Unlisted] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reduced: list[Unlisted] = field(default_factory=list)  # parent types the credentials may not list

    @property
    def complete(self) -> bool:
        """Every LIST succeeded, so no set or member can be missing."""
        return not self.unlisted and not self.reduced

    def to_dict(self) -> dict[str, Any]:
        """The result of applyset_info."""
        return {
            "applysets": self.applysets,
            "complete": self.complete,
            "unlisted": sorted((u.to_dict() for u in self.unlisted),
                               key=lambda u: (u["group_kind"], u["namespace"] or "")),
            "reduced_coverage": {"kinds": sorted(({"group_kind": str(u.group_kind), "reason": u.reason}
                                                  for u in self.reduced), key=lambda u: u["group_kind"])},
        }


def describe(client: KubeApi, *, parent_spec: object = None, namespace: str | None = None, members: bool = False,
             member_count: bool = False, full_objects: bool = False,
             readiness: Callable[[KubeObject], Readiness] | None = None) -> InfoReport:
    """List sets (no parent) or view one set (parent given), for ``applyset_info``.

    :param client: the API client.
    :param parent_spec: the one set to view, as in applyset_apply; None lists every set.
    :param namespace: the namespace to list sets in (None: all), or the default namespace
        of ``parent_spec``.
    :param members: add each set's member list.
    :param member_count: add just each set's member count.
    :param full_objects: add the whole objects to the member list (Secret data hidden).
    :param readiness: a function ``obj -> Readiness`` (``wait.readiness.verdict``) that adds ``ready``,
        ``reason`` and ``readiness_rule`` (the rule it judged by) to each member; it implies the member list.
    :returns: the ``InfoReport``.
    :raises InputError: for a parent reference that cannot name a parent.
    :raises ApplySetError: when the one parent asked for cannot be read.
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
        sets, report.warnings = listing.sets, listing.warnings
        _sort_refusals(listing.unlisted, namespace, report)
    list_members = members or full_objects or readiness is not None
    found = None
    if sets and (list_members or member_count):
        # Readiness is judged on status, which only whole objects carry.
        found = find_members(client, discovery, sets, full_objects=full_objects or readiness is not None)
        report.unlisted += found.unlisted
        report.warnings += found.warnings
    for set_info in sets:
        entry = set_info.to_dict()
        if found is not None:
            set_members = found.by_id[set_info.expected_id]
            entry["member_count"] = len(set_members)
            if list_members:
                entry["members"] = [_member_entry(m, full_objects, readiness) for m in set_members]
        report.applysets.append(entry)
    return report


def _sort_refusals(unlisted: list[Unlisted], namespace: str | None, report: InfoReport) -> None:
    """With a namespace, a parent type the credentials may not list (cluster-scoped custom resource
    parents' CRDs) only reduces the coverage; without one, refusals across all namespaces leave the
    listing incomplete, and the warning says how a tenant lists its own sets."""
    for entry in unlisted:
        (report.reduced if namespace and entry.refused and entry.namespace is None else report.unlisted).append(entry)
    if not namespace and any(u.refused and u.group_kind in spec.BUILTIN_PARENT_KINDS for u in unlisted):
        report.warnings.append("the credentials may not list Secrets or ConfigMaps across all namespaces, so sets "
                               "were not looked for everywhere; set namespace to list the sets of one namespace")


def _member_entry(member: LiveMember, full_objects: bool,
                  readiness: Callable[[KubeObject], Readiness] | None) -> dict[str, Any]:
    entry = member.to_dict(full_object=full_objects)
    if readiness is not None and member.full_object is not None:
        found = readiness(member.full_object)
        entry["ready"] = found.ready
        entry["reason"] = found.message
        entry["readiness_rule"] = found.rule
    return entry
