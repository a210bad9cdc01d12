"""The one parent model: what a live ApplySet parent says, and the parent a run holds.

The parent records the set: its ``id`` label, the ``tooling`` annotation and the hints
(``contains-group-kinds``, ``additional-namespaces``) that tell a later run where members may
live. What a live parent object says is parsed in one place, ``inspect``, into a ``LiveParent``
that judges nothing; ``applyset_info`` and ``applyset_verify`` report it as it is. ``Parent`` is
the engine's model of the parent during a run (``parent.read.read`` builds it, ``write``
updates it as it writes). ``claim_holds`` says whether a run's claim on the set is in force.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..object_meta import KubeObject, ObjectMeta, metadata_of
from . import plan_key as plan_keys
from .. import spec
from ..kube.discovery import Discovery, Resource
from ..spec import GroupKind


# A run's claim on a set, as the claim annotation holds it (JSON): ``{"run": RUN_ID, "expires": UNIX_TIME}``.
# A dict and not a TypedDict: it is read from an annotation anyone may have written, key by key.
ClaimRecord = dict[str, Any]


class ObjectReference(TypedDict):
    """An object as results name it (the parent, a member): ``apiVersion``, ``kind``, ``namespace``
    (None when cluster-scoped) and ``name``."""

    apiVersion: str
    kind: str
    namespace: str | None
    name: str


# ----- what a live parent says -------------------------------------------------------------


def set_name(resource: Resource, namespace: str | None, name: str) -> str:
    """How every message names a set: ``ApplySet`` and its parent as messages name objects,
    ``Kind namespace/name`` (``ApplySet Secret shop/web``; ``Kind name`` when cluster-scoped).
    kubectl's ``secrets./web`` names no namespace: two sets of one name would read the same."""
    return f"ApplySet {spec.ObjectId.of(resource, namespace or None, name)}"


def claim_holds(claim: ClaimRecord | None, now: float, *, other_than: str | None = None) -> bool:
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
    annotations: dict[str, str]  # the parent's applyset.kubernetes.io/ annotations, verbatim
    group_kinds: frozenset[GroupKind]  # recorded GroupKinds from both hint annotations, served or not
    legacy_group_kinds: frozenset[GroupKind]  # the part of group_kinds that contains-group-resources names
    unmapped_resources: frozenset[spec.GroupResource]  # legacy entries that discovery cannot map to a kind
    additional_namespaces: frozenset[str]
    claim: ClaimRecord | None = None  # applyset_apply's {"run", "expires"} while a run changes the set
    last_written: str | None = None  # newest managedFields time: when any tool last changed the parent
    revision: int | None = None  # the current revision (history/revisions.py), None when no history was recorded
    revision_digest: str | None = None  # the digest of what the current revision applied
    plan_key: bytes | None = field(default=None, repr=False, compare=False)  # plan_key.py; never shown

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
    def legacy_only_group_kinds(self) -> frozenset[GroupKind]:
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
    def namespaces(self) -> frozenset[str]:
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
    def set_ref(self) -> str:
        """The set as messages name it: ``ApplySet Secret shop/web`` (``set_name``)."""
        return set_name(self.resource, self.namespace, self.name)

    @property
    def display(self) -> str:
        """``Secret shop/web`` or ``ApplySet.example.com platform``."""
        return str(self.object_id)

    @property
    def sort_key(self) -> tuple[str, str, str, str]:
        """Parents sort by namespace first, then kind and name (the order of info's output)."""
        return (self.namespace, self.resource.group, self.resource.kind, self.name)

    def parent_ref(self) -> ObjectReference:
        """apiVersion, kind, namespace (None when cluster-scoped) and name of the parent."""
        return {"apiVersion": self.resource.api_version, "kind": self.resource.kind,
                "namespace": self.namespace or None, "name": self.name}

    def to_dict(self) -> dict[str, Any]:
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
            "revision": self.revision,
        }


def inspect(res: Resource, obj: KubeObject, discovery: Discovery) -> LiveParent:
    """Parse a live parent object's id label, tooling, hints and claim; never raises on their content.

    :param res: the parent's resource (its kind, as discovery serves it).
    :param obj: the parent object as a GET or LIST returned it (its ``metadata``, and a Secret's
        plan key when listed whole).
    :param discovery: maps the legacy ``resource.group`` entries to kinds; entries it does
        not serve are kept apart in ``unmapped_resources``.
    :returns: the ``LiveParent``.
    """
    meta = metadata_of(obj)
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    kinds = spec.parse_group_kinds(annotations.get(spec.ANNOTATION_GROUP_KINDS))
    legacy_kinds: set[GroupKind] = set()
    unmapped: set[spec.GroupResource] = set()
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
        revision=parse_revision(annotations.get(spec.ANNOTATION_REVISION)),
        revision_digest=annotations.get(spec.ANNOTATION_REVISION_DIGEST),
        plan_key=plan_keys.read(res, obj),
    )


def parse_revision(text: str | None) -> int | None:
    """The revision annotation's number; anything unreadable is no revision."""
    try:
        number = int(text) if text else None
    except ValueError:
        return None
    return number if number is not None and number > 0 else None


def _parse_claim(text: str | None) -> ClaimRecord | None:
    """The claim annotation's JSON object; anything unreadable is no claim."""
    try:
        claim = json.loads(text) if text else None
    except ValueError:
        return None
    return claim if isinstance(claim, dict) else None


def _last_written(meta: ObjectMeta) -> str | None:
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
    group_kinds: set[GroupKind] = field(default_factory=set)  # recorded hint, served kinds only
    # Recorded kinds not served right now that may still hold objects: they stay in the hint,
    # but their members cannot be listed (kind -> why they may hold objects).
    unlistable_group_kinds: dict[GroupKind, str] = field(default_factory=dict)
    # Recorded kinds that provably cannot hold objects any more: they leave the hint.
    dropped_group_kinds: set[GroupKind] = field(default_factory=set)
    namespaces: set[str] = field(default_factory=set)  # recorded scope, incl. the parent's own namespace
    definition: KubeObject | None = None  # body for creating a custom-resource parent
    legacy_annotation: bool = False  # contains-group-resources present, alone or beside contains-group-kinds
    claim: ClaimRecord | None = None  # {"run", "expires"} while some run changes the set
    member_record: frozenset[str] | None = None  # members.py: the member digests the parent records
    record_members: frozenset[str] | None = None  # members.py: the digests the next parent write records
    revision: int | None = None  # the current revision (history/revisions.py); the release writes the new one
    revision_digest: str | None = None  # the digest of what the current revision applied
    plan_key: bytes | None = field(default=None, repr=False, compare=False)  # plan_key.py; never shown

    @classmethod
    def from_live(cls, live: LiveParent, *, definition: KubeObject | None = None) -> Parent:
        """The engine's model of an existing parent, before its recorded kinds are sorted.

        :param live: what the parent object says (``inspect``).
        :param definition: the custom-resource parent's definition, when the user gave one.
        :returns: a ``Parent`` whose ``id`` is the expected id (never the live label) and whose
            ``group_kinds`` hold every recorded kind; ``read`` then moves unserved ones out.
        """
        return cls(resource=live.resource, name=live.name, namespace=live.namespace, id=live.expected_id,
                   exists=True, uid=live.uid, resource_version=live.resource_version, tooling=live.tooling,
                   group_kinds=set(live.group_kinds), namespaces=set(live.namespaces), definition=definition,
                   legacy_annotation=live.legacy_annotation, claim=live.claim, revision=live.revision,
                   revision_digest=live.revision_digest, plan_key=live.plan_key)

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
    def set_ref(self) -> str:
        """The set as messages name it: ``ApplySet Secret shop/web`` (``set_name``)."""
        return set_name(self.resource, self.namespace, self.name)

    @property
    def recorded_group_kinds(self) -> set[GroupKind]:
        """Every kind the hint keeps: served ones and those that may still hold objects."""
        return self.group_kinds | set(self.unlistable_group_kinds)

    def describe(self) -> dict[str, Any]:
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
