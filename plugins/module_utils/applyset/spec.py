"""ApplySet keys, ID computation and hint-annotation formats (KEP-3659), as kubectl writes them.

Everything here is a pure function or constant. kubectl's behaviour, not the KEP text, is what
users' clusters hold, so formats follow kubectl byte for byte: ``k8s.io/kubectl``
``pkg/cmd/apply/applyset.go`` (``ApplySet.ID``, ``V1ApplySetIdFormat``, the parent's labels and
annotations); the known-answer vectors in ``tests/unit/test_spec.py`` come from kubectl's own tests.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Optional, Protocol, cast

from .errors import InputError
from .object_meta import ObjectMeta

PREFIX = "applyset.kubernetes.io/"

# On the parent.
LABEL_ID = PREFIX + "id"
ANNOTATION_TOOLING = PREFIX + "tooling"
ANNOTATION_GROUP_KINDS = PREFIX + "contains-group-kinds"
# Written by kubectl 1.27 and 1.28 only; still read when contains-group-kinds is absent.
ANNOTATION_GROUP_RESOURCES = PREFIX + "contains-group-resources"
ANNOTATION_ADDITIONAL_NAMESPACES = PREFIX + "additional-namespaces"

# On members.
LABEL_PART_OF = PREFIX + "part-of"

# On a CRD whose custom resources may act as parents (only the key's presence counts).
LABEL_PARENT_TYPE = PREFIX + "is-parent-type"

# Keys of our own. applyset.kubernetes.io/ belongs to the specification, so what only
# this collection means lives under a prefix named after the collection.
OWN_PREFIX = "applyset.kubernetes.ansible/"
# Our own prune protection, honoured like the other tools' annotations below.
ANNOTATION_KEEP = OWN_PREFIX + "prune"
# On the parent while a run changes the set: who runs and until when the claim holds.
# The key on the wire stays ".../lock" although the code calls it the claim: runs of older
# versions read this key to keep out of each other's way, and a renamed key would let an
# old and a new run change one set at the same time.
ANNOTATION_CLAIM = OWN_PREFIX + "lock"
# On members: the digest of the server-side apply request that last wrote the object (its body
# and the options that change the outcome), sent in that same request. A run skips a member
# only when the digest of the body it would send is this one (rules/nochange.py).
ANNOTATION_APPLIED_DIGEST = OWN_PREFIX + "applied-digest"
# On the parent: the number of the set's current revision (history/revisions.py), written with the release.
ANNOTATION_REVISION = OWN_PREFIX + "revision"
# ... and the digest of what that revision applied: a run whose desired set differs records one.
ANNOTATION_REVISION_DIGEST = OWN_PREFIX + "revision-digest"
# What the collection writes for its own bookkeeping, never the user: left out of diffs, which show
# what the user changes (as kubectl diff does). The part-of label stays: it says what is in the set.
BOOKKEEPING_ANNOTATIONS = frozenset({ANNOTATION_CLAIM, ANNOTATION_APPLIED_DIGEST, ANNOTATION_REVISION,
                                     ANNOTATION_REVISION_DIGEST})

TOOL_NAME = "applyset.kubernetes"
# Kept in step with galaxy.yml by a unit test; nothing is read at runtime.
COLLECTION_VERSION = "0.1.0"
# kubectl names its parent field manager "<tool>-applyset".
PARENT_FIELD_MANAGER = TOOL_NAME + "-applyset"

_ID_FORMAT = "applyset-{}-v1"


def tooling_value(version: str = COLLECTION_VERSION) -> str:
    """Return our value for the tooling annotation, e.g. ``applyset.kubernetes/0.1.0``."""
    return f"{TOOL_NAME}/{version}"


def tooling_name(value: str) -> str:
    """Return the tool name of a tooling annotation value: all before the last '/'.

    ``kubectl/v1.30.1`` -> ``kubectl``; ``example.com/tool/why/v1`` -> ``example.com/tool/why``;
    a value without '/' (``helm``) is the name itself. The version is never compared.
    """
    name, slash, _version = value.rpartition("/")
    return name if slash else value


def compute_id(name: str, namespace: str | None, kind: str, group: str | None) -> str:
    """Return the ApplySet ID of a parent, as kubectl computes it.

    ``namespace`` is "" for a cluster-scoped parent and ``group`` is "" for the core group.
    The result is ``applyset-`` + unpadded base64url(sha256("name.namespace.Kind.group")) + ``-v1``.
    """
    unencoded = ".".join((name, namespace or "", kind, group or ""))
    digest = hashlib.sha256(unencoded.encode("utf-8")).digest()
    encoded = base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")
    return _ID_FORMAT.format(encoded)


class GroupKind(NamedTuple):
    """An API group and a Kind; the group is "" for the core group."""

    group: str
    kind: str

    def __str__(self) -> str:
        # Same text as Go's schema.GroupKind.String(), used in contains-group-kinds.
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @classmethod
    def parse(cls, text: str) -> GroupKind:
        """Parse ``Kind`` or ``Kind.group``; the kind ends at the first '.'."""
        kind, _dot, group = text.partition(".")
        return cls(group, kind)


# Kinds the collection treats specially, named once.
SECRET_KIND = GroupKind("", "Secret")
CONFIGMAP_KIND = GroupKind("", "ConfigMap")
NAMESPACE_KIND = GroupKind("", "Namespace")
SERVICE_KIND = GroupKind("", "Service")
ENDPOINTS_KIND = GroupKind("", "Endpoints")
JOB_KIND = GroupKind("batch", "Job")
CRD_KIND = GroupKind("apiextensions.k8s.io", "CustomResourceDefinition")


class HasGroupKind(Protocol):
    """Anything with an API ``group`` and a ``kind``: a GroupKind, a discovery Resource."""

    @property
    def group(self) -> str:
        ...

    @property
    def kind(self) -> str:
        ...


class ObjectId(NamedTuple):
    """Which object: group, kind, namespace ("" when cluster-scoped) and name.

    The one identity of an object in the core. The version is not part of it: the same object
    read through two versions is one object. Being a tuple, it sorts and hashes as
    ``(group, kind, namespace, name)``.
    """

    group: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, group_kind: HasGroupKind, namespace: str | None, name: str) -> ObjectId:
        """Build it from anything with ``group`` and ``kind`` (a GroupKind or a Resource).

        ``namespace`` may be None or "" for a cluster-scoped object.
        """
        return cls(group_kind.group or "", group_kind.kind, namespace or "", name)

    @classmethod
    def from_metadata(cls, group_kind: HasGroupKind, metadata: ObjectMeta | Mapping[str, Any]) -> ObjectId:
        """Build it from a kind and an object's ``metadata`` (namespace and name): an ObjectMeta, or a
        metadata ``dict`` its caller has not typed yet."""
        return cls.of(group_kind, metadata.get("namespace"), metadata["name"])

    @property
    def group_kind(self) -> GroupKind:
        """The object's GroupKind."""
        return GroupKind(self.group, self.kind)

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.group_kind} {where}"


class GroupResource(NamedTuple):
    """An API group and a plural resource name, as in the legacy annotation."""

    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


BUILTIN_PARENT_KINDS = frozenset({SECRET_KIND, CONFIGMAP_KIND})


def _split_list(text: str | None) -> list[str]:
    """Split a comma-separated annotation value, dropping blanks; None and "" give []."""
    if not text:
        return []
    return [entry for entry in (part.strip() for part in text.split(",")) if entry]


def format_group_kinds(group_kinds: Iterable[GroupKind]) -> str:
    """Return the contains-group-kinds value: distinct ``Kind.group`` entries, byte-wise sorted."""
    return ",".join(sorted({str(group_kind) for group_kind in group_kinds}))


def parse_group_kinds(text: str | None) -> set[GroupKind]:
    """Parse a contains-group-kinds value into a set of GroupKind ("" or None -> empty set)."""
    return {GroupKind.parse(entry) for entry in _split_list(text)}


def parse_group_resources(text: str | None) -> set[GroupResource]:
    """Parse the legacy contains-group-resources value (``resource.group`` entries)."""
    result: set[GroupResource] = set()
    for entry in _split_list(text):
        resource, _dot, group = entry.partition(".")
        result.add(GroupResource(group, resource))
    return result


def format_namespaces(namespaces: Iterable[str | None], parent_namespace: str | None) -> str:
    """Return the additional-namespaces value: sorted, without the parent's own namespace.

    Empty and None entries (cluster-scoped members) are dropped too.
    """
    skipped = {parent_namespace or "", "", None}
    return ",".join(sorted(cast("set[str]", set(namespaces) - skipped)))


def parse_namespaces(text: str | None) -> set[str]:
    """Parse an additional-namespaces value into a set ("" or None -> empty set)."""
    return set(_split_list(text))


@dataclasses.dataclass(frozen=True, kw_only=True)
class ParentRef:
    """Where the ApplySet parent lives.

    ``version``, ``kind`` and ``resource`` may be None until resolved through discovery;
    ``namespace`` is "" for a cluster-scoped parent.
    """

    group: str
    name: str
    version: Optional[str] = None
    kind: Optional[str] = None
    resource: Optional[str] = None
    namespace: str = ""

    @property
    def group_kind(self) -> GroupKind:
        """The parent's GroupKind (the kind must be resolved)."""
        return GroupKind(self.group, cast(str, self.kind))  # resolved before anyone asks

    @property
    def api_version(self) -> str | None:
        """``group/version``, or just ``version`` for the core group; None until resolved."""
        if self.version is None:
            return None
        return f"{self.group}/{self.version}" if self.group else self.version

    def applyset_id(self) -> str:
        """The ApplySet ID of this parent (the kind must be resolved)."""
        if not self.kind:
            raise ValueError("the parent's kind must be resolved before computing its ID")
        return compute_id(self.name, self.namespace, self.kind, self.group)

    def __str__(self) -> str:
        if self.kind:
            kind = str(self.group_kind)
        else:
            kind = f"{self.resource}.{self.group}" if self.group else str(self.resource)
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{kind} {where}"


DEFAULT_PARENT_RESOURCE = "secrets"


def parse_parent_ref(text: str) -> tuple[str, str, str]:
    """Parse a kubectl-style parent reference ``[RESOURCE][.GROUP]/NAME``.

    Returns ``(resource, group, name)``. Without '/' the text is the name of a Secret. The
    part before the first '/' splits at its first '.' into resource and group; a version is
    not part of the syntax, so ``deployments.v1.apps/x`` means group ``v1.apps`` (as in kubectl).
    """
    type_part, slash, name = text.partition("/")
    if slash:
        resource, _dot, group = type_part.partition(".")
    else:
        resource, group, name = DEFAULT_PARENT_RESOURCE, "", text
    fix = ('give the parent as NAME (a Secret), RESOURCE/NAME or RESOURCE.GROUP/NAME, '
           'e.g. "configmaps/my-set" or "applysets.example.com/my-set"')
    problem = None
    if not name:
        problem = "name cannot be blank"
    elif not resource:
        problem = "resource cannot be blank"
    elif "/" in name:
        # kubectl passes this on and fails later; no object name can contain '/'.
        problem = f'name "{name}" contains "/"'
    if problem:
        raise InputError(f'invalid parent reference "{text}": {problem}', obj="parent", fix=fix)
    return resource, group, name


# Annotations by which other tools (and we) protect an object from pruning. Values are compared
# case-insensitively after trimming spaces.
KEEP_ANNOTATIONS = {
    ANNOTATION_KEEP: "disabled",
    "helm.sh/resource-policy": "keep",
    "cli-utils.sigs.k8s.io/on-remove": "keep",
    "client.lifecycle.config.k8s.io/deletion": "detach",
    "argocd.argoproj.io/sync-options": "Prune=false",
    "kapp.k14s.io/delete-strategy": "orphan",
    "kustomize.toolkit.fluxcd.io/prune": "disabled",
}
# Annotations whose value is a comma-separated list; protection means the list holds the value.
LIST_VALUED_KEEP_ANNOTATIONS = frozenset({"argocd.argoproj.io/sync-options"})


def keep_reason(annotations: Mapping[str, object] | None) -> str | None:
    """Say why an object must not be pruned, e.g. ``annotation helm.sh/resource-policy=keep``.

    Returns None when no prune-protection annotation is set.
    """
    if not annotations:
        return None
    for key, keep_value in KEEP_ANNOTATIONS.items():
        value = annotations.get(key)
        if not isinstance(value, str):
            continue
        wanted = keep_value.lower()
        if key in LIST_VALUED_KEEP_ANNOTATIONS:
            protected = wanted in (entry.lower() for entry in _split_list(value))
        else:
            protected = value.strip().lower() == wanted
        if protected:
            return f"annotation {key}={value}"
    return None
