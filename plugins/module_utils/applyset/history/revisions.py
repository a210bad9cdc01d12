"""The release history of a set: one revision per run that changed it, kept in Secrets.

A revision records what a run applied: every member body as sent (Secret values included, which
is why it lives in Secrets), each with its digest, the hint, the options that shape the apply and
where the run came from (``provenance``). It is stored gzip-compressed in Secrets of the parent's
namespace (for a cluster-scoped parent, ``Settings.namespace``), split over several when larger
than ``CHUNK_BYTES``, each owned by the parent (the garbage collector removes them with it).

History Secrets are never members: they carry none of the ApplySet labels, so neither our prune
nor kubectl's counts or deletes them. They carry labels of our own (``LABEL_HISTORY_OF``: the
set's id, ``LABEL_REVISION``: the number) and, on the first chunk, a summary annotation that
``list_revisions`` reads from a metadata-only LIST: listing never reads a Secret value.

The parent's ``applyset.kubernetes.ansible/revision`` annotation names the current revision; it
is written by the release (the same guarded write that ends the claim), after the revision's
Secrets, so a run stopped in between leaves an unreferenced revision that the next run, which
takes the same number, overwrites.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from ..object_meta import KubeObject, ObjectMeta, labels_of, metadata_of, name_of
from ..kube.api import KubeApi
from ..kube.discovery import Discovery, Resource
from .. import spec
from ..errors import ApiError, ApplySetError
from ..parent.model import LiveParent, Parent, set_name

if TYPE_CHECKING:  # the run's options and plan, above this layer: named for the annotations only
    from ..rules.plan import DesiredObject
    from ..run.options import Options

# A whole revision (``payload``; JSON, Secret values included) and its summary annotation (JSON
# without any value): read back from Secrets anyone may have changed, so checked key by key
# (``CONTENT_KEYS``, ``SUMMARY_KEYS``) rather than trusted to a TypedDict.
RevisionContent = dict[str, Any]
RevisionSummary = dict[str, Any]


class MemberEntry(TypedDict):
    """A member as a revision keeps it (``member_entry``)."""

    source: str
    digest: str
    body: KubeObject


class NamedSet(Protocol):
    """What ``secret_name`` reads of a parent: its set ``id`` and ``name``."""

    @property
    def id(self) -> str:
        ...

    @property
    def name(self) -> str:
        ...


LABEL_HISTORY_OF = spec.OWN_PREFIX + "history-of"  # the set's id
LABEL_REVISION = spec.OWN_PREFIX + "revision"  # the revision's number
LABEL_CHUNK = spec.OWN_PREFIX + "chunk"  # 0 for the first Secret of a revision
ANNOTATION_SUMMARY = spec.OWN_PREFIX + "revision-summary"  # JSON, no Secret value
SECRET_TYPE = spec.OWN_PREFIX + "revision.v1"
FIELD_MANAGER = spec.TOOL_NAME + "-history"
DATA_KEY = "revision"
CHUNK_BYTES = 768 * 1024  # under the 1 MiB limit of a Secret's data
FORMAT = 1
DEFAULT_MAX = 10

DEPLOYED, FAILED, SUPERSEDED, ROLLED_BACK = "deployed", "failed", "superseded", "rolled back"
# The options that shaped what the run's apply made of the bodies, kept for the record. A rollback
# applies with its own task's options (rollback.py); of these it uses only the field managers.
SHAPING_OPTIONS = ("field_manager", "force_conflicts", "field_validation", "reapply", "recreate_on_immutable",
                   "prune", "takeover", "adopt", "create_namespace")


@dataclass(frozen=True)
class Settings:
    """How a run keeps history: ``max`` revisions (0: none), the ``namespace`` for a cluster-scoped
    parent's history, the run's ``provenance``, the revision to roll back to (``rollback_to``: a
    number or ``"previous"``), and ``on_failure`` (``"rollback"`` or None) with its timeout."""

    max: int = DEFAULT_MAX
    namespace: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)  # JSON: gather's, and what a take-over adds
    rollback_to: int | str | None = None
    on_failure: str | None = None
    rollback_timeout: float = 300.0

    def problems(self) -> list[tuple[str, str]]:
        """``(option, why)`` for each bad setting."""
        found = []
        if self.max < 0:
            found.append(("history_max", "must be 0 or more"))
        if self.on_failure not in (None, "fail", "rollback"):
            found.append(("on_failure", "must be fail or rollback"))
        if self.rollback_timeout < 0:
            found.append(("rollback_timeout", "must be 0 seconds or more"))
        target = self.rollback_to
        if target is not None and target != "previous" and not (isinstance(target, int) and target > 0):
            found.append(("rollback_to", "must be a revision number (1 or more) or previous"))
        return found


DAMAGED = "damaged"


@dataclass(frozen=True)
class Revision:
    """One revision as listed: its ``number``, the ``summary`` annotation (time, result, members,
    rollback_of, provenance, chunks, digest), the first Secret's name and owner uids, and
    ``damage``: why its metadata cannot be read (its summary, a chunk Secret missing), or None."""

    number: int
    summary: RevisionSummary
    secret: str
    owners: tuple[str | None, ...] = ()
    damage: str | None = None

    @property
    def stored_result(self) -> str:
        """``deployed`` or ``failed`` as the run that wrote it found, ``damaged`` when unreadable."""
        return DAMAGED if self.damage else self.summary.get("result", DEPLOYED)

    def to_dict(self, result: str) -> dict[str, Any]:
        """What applyset_info shows: never a Secret value."""
        keys = ("time", "members", "rollback_of", "provenance", "bytes")
        return {"revision": self.number, "result": result, "secret": self.secret, "damage": self.damage,
                **{key: self.summary.get(key) for key in keys}}


class DamagedRevision(ApplySetError):
    """A revision of the set's history that cannot be read: its ``number``, ``secrets`` (each Secret
    involved, ``namespace/name``) and ``reason`` (what is wrong with them)."""

    def __init__(self, set_label: str, number: int, secrets: list[str], reason: str) -> None:
        self.number, self.secrets, self.reason = number, tuple(secrets), reason
        which = "the Secret" if len(self.secrets) == 1 else "those Secrets"
        super().__init__(
            f"revision {number} of {set_label} cannot be read: {reason} (Secret {', '.join(self.secrets)})",
            obj=f"revision {number} of {set_label}",
            fix=f"delete {which} or run applyset_verify with fix: true, which deletes what cannot be read; roll back "
                "to another revision (applyset_info with revisions: true lists them)")


class _Damage(Exception):
    """What is wrong with a revision's Secrets (the reason of a ``DamagedRevision``)."""


def set_label(parent: Parent | LiveParent) -> str:
    """How messages name the set of a ``Parent``, a ``LiveParent`` or verify's set
    (``parent_model.set_name``: ``ApplySet Secret shop/web``)."""
    return set_name(parent.resource, parent.namespace, parent.name)


def home(parent: Parent, settings: Settings | None) -> str | None:
    """The namespace of ``parent``'s history, or None when none is kept (``history_max: 0``, or a
    cluster-scoped parent without ``history_namespace``)."""
    if settings is None or settings.max == 0:
        return None
    return parent.namespace or settings.namespace or None


def forgets(parent: Parent, settings: Settings | None) -> bool:
    """Whether a run with ``settings`` drops ``parent``'s revision pointer when it writes the set: it
    keeps no history (``history_max: 0``, or no settings) while the parent names a revision, which
    would then no longer be what was last deployed."""
    return (settings is None or settings.max == 0) and parent.revision is not None


def secret_name(parent: NamedSet, number: int, chunk: int = 0, digest: str = "") -> str:
    """``applyset.NAME.HASH.vN``; further chunks add the payload digest's start and their index."""
    tag = hashlib.sha256(parent.id.encode()).hexdigest()[:8]
    base = f"applyset.{parent.name[:200]}.{tag}.v{number}"
    return base if chunk == 0 else f"{base}.{digest[:8]}.{chunk}"


def member_entry(member: DesiredObject) -> MemberEntry:
    """A member as the revision keeps it: the body as sent, its digest and where it came from.

    The digest is of the body as sent, or, for a member an ``ignore_fields`` rule matched, of the
    manifest with the ignored values hidden (``field_policy.digest_source``): a field its owner
    changed is no new revision, as it is no write."""
    source = getattr(member, "digest_source", None)
    text = json.dumps(member.body if source is None else source, sort_keys=True, separators=(",", ":"))
    return {"source": member.manifest.source, "digest": "sha256:" + hashlib.sha256(text.encode()).hexdigest(),
            "body": member.body}


def set_digest(members: list[MemberEntry]) -> str:
    """The digest of a desired set (its ``member_entry`` list): what the parent's
    ``revision-digest`` annotation records for the current revision."""
    text = json.dumps([m["digest"] for m in members], separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def payload(number: int, result: str, *, opts: Options, parent: Parent, members: list[DesiredObject],
            hint: tuple[Any, Any], rollback_of: int | None) -> RevisionContent:
    """The whole revision numbered ``number`` of a run with ``opts`` (``options.Options``, its
    ``history`` settings included) that applies ``members`` (``plan.DesiredObject``) to the set of
    ``parent`` (``parent_model.Parent``), whose final ``hint`` is ``(group_kinds, namespaces)``;
    ``rollback_of`` the revision it applies again, if any."""
    provenance = dict(opts.history.provenance) if opts.history is not None else {}
    options: dict[str, Any] = {}
    for name in SHAPING_OPTIONS:
        value = getattr(opts, name)
        options[name] = sorted(value) if isinstance(value, (set, frozenset)) else value
    kinds, namespaces = hint
    return {
        "format": FORMAT, "set": parent.id, "revision": number,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "result": result,
        "rollback_of": rollback_of, "parent": parent.describe()["parent"],
        "hint": {"group_kinds": sorted(map(str, kinds)), "namespaces": sorted(namespaces)},
        "options": options, "provenance": provenance,
        "members": [member_entry(m) for m in members],
    }


def encode(content: RevisionContent) -> list[bytes]:
    """The revision as gzip-compressed JSON, cut into chunks of at most ``CHUNK_BYTES``."""
    raw = gzip.compress(json.dumps(content, sort_keys=True, separators=(",", ":")).encode(), mtime=0)
    return [raw[i:i + CHUNK_BYTES] for i in range(0, len(raw), CHUNK_BYTES)] or [b""]


def decode(chunks: list[bytes]) -> RevisionContent:
    """The revision from its chunks, in order."""
    return json.loads(gzip.decompress(b"".join(chunks)))


def _summary(content: RevisionContent, chunks: list[bytes]) -> RevisionSummary:
    raw = b"".join(chunks)
    # The field manager is in the summary so that a rollback learns every manager the set's
    # releases used from one metadata-only LIST (field_managers).
    return {"time": content["time"], "result": content["result"], "members": len(content["members"]),
            "rollback_of": content["rollback_of"], "provenance": content["provenance"], "chunks": len(chunks),
            "bytes": len(raw), "digest": "sha256:" + hashlib.sha256(raw).hexdigest(),
            "field_manager": (content.get("options") or {}).get("field_manager")}


def _secret(parent: Parent, namespace: str, name: str, number: int, chunk: int, data: bytes,
            summary: RevisionSummary | None = None) -> KubeObject:
    meta: dict[str, Any] = {
        "name": name, "namespace": namespace,
        "labels": {LABEL_HISTORY_OF: parent.id, LABEL_REVISION: str(number), LABEL_CHUNK: str(chunk)},
        "ownerReferences": [{"apiVersion": parent.resource.api_version, "kind": parent.resource.kind,
                             "name": parent.name, "uid": parent.uid}]}
    if summary is not None:
        meta["annotations"] = {ANNOTATION_SUMMARY: json.dumps(summary, sort_keys=True, separators=(",", ":"))}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": SECRET_TYPE,
            "data": {DATA_KEY: base64.b64encode(data).decode()}}


class NumberTaken(ApplySetError):
    """Another Secret already holds this revision number (a run without the claim must not overwrite it)."""


def secrets_resource(discovery: Discovery) -> Resource:
    """The resource the revisions are kept as (Secrets, which every API server serves).

    Raises:
        ApplySetError: when the server serves no Secrets (never on a conformant one).
    """
    found = discovery.for_group_kind(spec.SECRET_KIND)
    if found is None:
        raise ApplySetError("the API server serves no Secrets, so the set's history cannot be kept",
                            fix="set history_max to 0 to keep no history")
    return found


def write(client: KubeApi, secrets_res: Resource, parent: Parent, namespace: str, content: RevisionContent, *,
          exclusive: bool) -> RevisionSummary:
    """Store ``content`` (``payload``) as revision ``content["revision"]`` of ``parent``.

    The later chunks go first (their names carry the payload digest, so they never overwrite another
    revision's), the first chunk, which names them, last. With ``exclusive`` (a run without the
    claim), the first chunk is created, never overwritten; with the claim it is applied, so an
    unreferenced revision left by a stopped run is replaced.

    Returns:
        The summary written.

    Raises:
        NumberTaken: ``exclusive`` and the number exists already.
        ApiError: a write failed.
    """
    number, chunks = content["revision"], encode(content)
    summary = _summary(content, chunks)
    for index, data in enumerate(chunks[1:], 1):
        body = _secret(parent, namespace, secret_name(parent, number, index, summary["digest"][7:]), number,
                       index, data)
        client.apply(secrets_res, body, field_manager=FIELD_MANAGER, force=True)
    first = _secret(parent, namespace, secret_name(parent, number), number, 0, chunks[0], summary)
    if not exclusive:
        client.apply(secrets_res, first, field_manager=FIELD_MANAGER, force=True)
        return summary
    try:
        client.create(secrets_res, first, field_manager=FIELD_MANAGER)
    except ApiError as err:
        if err.status == 409:
            raise NumberTaken(f"revision {number} exists already", obj=f"Secret {namespace}/{first['metadata']['name']}",
                              fix="the run takes the claim and records it again") from None
        raise
    return summary


def list_secrets(client: KubeApi, secrets_res: Resource, namespace: str, set_id: str, *,
                 values: bool = False) -> list[KubeObject]:
    """Every history Secret of the set ``set_id`` in ``namespace``: metadata only, unless ``values``
    (applyset_verify reads every revision)."""
    return list(client.list(secrets_res, namespace, label_selector=f"{LABEL_HISTORY_OF}={set_id}",
                            metadata_only=not values))


# The summary keys a revision is read with, and their types (``_summary`` writes them all).
SUMMARY_KEYS = {"time": str, "result": str, "members": int, "chunks": int, "digest": str}


def summary_of(meta: ObjectMeta) -> RevisionSummary:
    """The summary annotation of a revision's first Secret (its ``metadata``), checked.

    Raises:
        _Damage: it is missing, not JSON, or lacks a key ``SUMMARY_KEYS`` names (or has another type).
    """
    where = f"its summary annotation {ANNOTATION_SUMMARY}"
    text = (meta.get("annotations") or {}).get(ANNOTATION_SUMMARY)
    if text is None:
        raise _Damage(f"{where} is missing")
    try:
        summary = json.loads(text)
    except ValueError:
        raise _Damage(f"{where} is not JSON") from None
    if not isinstance(summary, dict):
        raise _Damage(f"{where} is not a JSON object")
    for key, kind in SUMMARY_KEYS.items():
        if not isinstance(summary.get(key), kind) or isinstance(summary.get(key), bool):
            raise _Damage(f"{where} has no {key} of type {kind.__name__}")
    if summary["chunks"] < 1 or not summary["digest"].startswith("sha256:"):
        raise _Damage(f"{where} has a bad chunk count or digest")
    return summary


def chunk_names(first_name: str, summary: RevisionSummary) -> list[str]:
    """The names of a revision's further chunks (``secret_name``), from its first Secret's name."""
    return [f"{first_name}.{summary['digest'][7:15]}.{index}" for index in range(1, summary["chunks"])]


def revisions(items: list[KubeObject]) -> list[Revision]:
    """The revisions among history Secrets' metadata (their first chunks), oldest first; one whose
    summary cannot be read, or whose further chunks are not among ``items``, is listed damaged."""
    names = {name_of(item) for item in items}
    found = []
    for item in items:
        meta = metadata_of(item)
        labels = meta.get("labels") or {}
        if labels.get(LABEL_CHUNK, "0") != "0":
            continue
        try:
            number = int(labels.get(LABEL_REVISION, ""))
        except ValueError:
            continue  # no revision of ours: nothing to list it under
        summary: RevisionSummary = {}
        damage: str | None = None
        try:
            summary = summary_of(meta)
            missing = [name for name in chunk_names(meta.get("name", ""), summary) if name not in names]
            damage = f"its chunk Secret {missing[0]} is missing" if missing else None
        except _Damage as err:
            damage = str(err)
        owners = tuple(ref.get("uid") for ref in meta.get("ownerReferences") or ())
        found.append(Revision(number, summary, meta.get("name", ""), owners, damage))
    return sorted(found, key=lambda r: r.number)


def results(listed: list[Revision], current: int | None) -> dict[int, str]:
    """``{number: result}``: the current revision deployed (or failed), a failed one failed, one that
    cannot be read damaged, one that a rollback undid (the revision just before a rollback) rolled back, others superseded."""
    undone = {r.number - 1 for r in listed if r.summary.get("rollback_of")}
    shown: dict[int, str] = {}
    for rev in listed:
        if rev.stored_result in (FAILED, DAMAGED):
            shown[rev.number] = rev.stored_result
        elif rev.number == current:
            shown[rev.number] = DEPLOYED
        else:
            shown[rev.number] = ROLLED_BACK if rev.number in undone else SUPERSEDED
    return shown


def last_good(listed: list[Revision], below: int | None) -> Revision | None:
    """The newest revision recorded as deployed, with a number below ``below`` (None: any). A
    damaged one may have been deployed: it is chosen too, and reading it says what is wrong."""
    good = [r for r in listed if r.stored_result in (DEPLOYED, DAMAGED) and (below is None or r.number < below)]
    return good[-1] if good else None


def read(client: KubeApi, secrets_res: Resource, parent: Parent, namespace: str, number: int) -> RevisionContent:
    """The whole revision ``number`` of ``parent`` (Secret values included: never show it).

    Raises:
        ApplySetError: it does not exist or belongs to another set.
        DamagedRevision: it cannot be read (``decode_revision``).
    """
    where = f"revision {number} of {parent.set_ref}"
    first = client.get(secrets_res, secret_name(parent, number), namespace)
    if first is None or (first["metadata"].get("labels") or {}).get(LABEL_HISTORY_OF) != parent.id:
        raise ApplySetError(f"{where} is not kept (no Secret {namespace}/{secret_name(parent, number)} of this set)",
                            obj=where, fix="list the kept revisions with applyset_info (revisions: true)")
    return decode_revision(set_label(parent), parent.id, number, first,
                           lambda name: client.get(secrets_res, name, namespace))


def decode_revision(label: str, set_id: str, number: int, first: KubeObject,
                    get_secret: Callable[[str], KubeObject | None]) -> RevisionContent:
    """Revision ``number`` of the set ``set_id`` (``label``: ``set_label``) from its first Secret
    ``first`` and its further chunks (``get_secret(name)``: the Secret, or None), checked: the one
    way a revision is read, so that every damage is told the same way.

    Raises:
        DamagedRevision: naming each Secret involved and what is wrong (summary annotation, a chunk
            missing or without its value, the digest, gzip, JSON, the content's keys and types).
    """
    meta = metadata_of(first)
    namespace = meta.get("namespace", "")
    involved = [f"{namespace}/{meta.get('name', '')}"]
    try:
        summary = summary_of(meta)
        chunks = [_chunk_value(first, 0)]
        for index, name in enumerate(chunk_names(meta.get("name", ""), summary), 1):
            involved.append(f"{namespace}/{name}")
            chunks.append(_chunk_value(get_secret(name), index))
        content = _content(chunks, summary["digest"])
        if content["set"] != set_id:
            raise _Damage(f"it records another set ({content['set']})")
    except _Damage as damage:
        raise DamagedRevision(label, number, involved, str(damage)) from None
    return content


def field_managers(listed: list[Revision], read_revision: Callable[[int], RevisionContent]) -> frozenset[str]:
    """Every field manager the kept revisions ``listed`` recorded: from their summaries, and for a
    revision written before summaries named it, from its content (``read_revision(number)``)."""
    found: set[str] = set()
    for rev in listed:
        manager = rev.summary.get("field_manager")
        if manager is None:
            try:
                manager = (read_revision(rev.number).get("options") or {}).get("field_manager")
            except ApplySetError:
                continue  # damaged or gone since the LIST: applyset_verify reports it
        if isinstance(manager, str) and manager:
            found.add(manager)
    return frozenset(found)


def _chunk_value(secret: KubeObject | None, index: int) -> bytes:
    if secret is None:
        raise _Damage(f"its chunk {index} is missing")
    value = (secret.get("data") or {}).get(DATA_KEY)
    if not isinstance(value, str):
        raise _Damage(f"its chunk {index} has no data key {DATA_KEY}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _Damage(f"its chunk {index} is not base64") from None


# The content keys a rollback reads, and their types; each member needs a source and a body.
CONTENT_KEYS = {"set": str, "revision": int, "members": list, "options": dict}
BODY_KEYS = {"apiVersion": str, "kind": str, "metadata": dict}


def _content(chunks: list[bytes], digest: str) -> RevisionContent:
    raw = b"".join(chunks)
    if "sha256:" + hashlib.sha256(raw).hexdigest() != digest:
        raise _Damage("its chunks do not match the digest its summary records")
    try:
        content = json.loads(gzip.decompress(raw))
    except EOFError:
        raise _Damage("its gzip data is truncated") from None
    except (OSError, zlib.error):
        raise _Damage("its data is not gzip") from None
    except ValueError:
        raise _Damage("its data is not JSON") from None
    problem = _content_problem(content)
    if problem:
        raise _Damage(f"its content {problem}")
    return content


def _content_problem(content: object) -> str | None:
    """What a decoded revision lacks for a rollback (a key, a type), or None."""
    if not isinstance(content, dict):
        return "is not a JSON object"
    for key, kind in CONTENT_KEYS.items():
        if not isinstance(content.get(key), kind):
            return f"has no {key} of type {kind.__name__}"
    for index, member in enumerate(content["members"]):
        body = member.get("body") if isinstance(member, dict) else None
        if not isinstance(body, dict) or not isinstance(member.get("source"), str):
            return f"has a member {index} without a source and a body"
        if any(not isinstance(body.get(key), kind) for key, kind in BODY_KEYS.items()) or \
                not isinstance(body["metadata"].get("name"), str):
            return f"has a member {index} without apiVersion, kind and metadata.name"
    return None


def delete(client: KubeApi, secrets_res: Resource, namespace: str, items: list[KubeObject]) -> None:
    """Delete the history Secrets ``items`` (metadata as listed), each by uid; gone ones are fine."""
    for item in items:
        meta = item["metadata"]
        try:
            client.delete(secrets_res, meta["name"], namespace, uid=meta.get("uid"))
        except ApiError as err:
            if err.status not in (404, 409):
                raise


def beyond(items: list[KubeObject], newest: int, keep: int) -> list[KubeObject]:
    """The history Secrets of revisions that fall out of the ``keep`` newest up to ``newest``."""
    def number(item: KubeObject) -> int | None:
        try:
            return int(labels_of(item).get(LABEL_REVISION, ""))
        except ValueError:
            return None

    return [i for i in items if (n := number(i)) is not None and n <= newest - keep]


def mark_failed(client: KubeApi, secrets_res: Resource, parent: Parent, namespace: str, number: int) -> None:
    """Record revision ``number`` as failed (its release failed after it was written: its wait)."""
    name = secret_name(parent, number)
    live = client.get(secrets_res, name, namespace)
    if live is None:
        return
    try:
        summary = summary_of(live["metadata"])
    except _Damage:
        return  # its summary is damaged: left as it is, for applyset_verify to report
    if summary.get("result") == FAILED:
        return  # recorded failed already (the wait before the record failed): no second write
    summary["result"] = FAILED
    patch = {"metadata": {"resourceVersion": live["metadata"]["resourceVersion"], "annotations": {
        ANNOTATION_SUMMARY: json.dumps(summary, sort_keys=True, separators=(",", ":"))}}}
    client.merge_patch(secrets_res, name, namespace, patch, field_manager=FIELD_MANAGER)


def describe(client: KubeApi, secrets_res: Resource, applyset: dict[str, Any],
             namespace: str | None) -> list[dict[str, Any]]:
    """The revisions of one set as applyset_info shows them (``applyset``: its info dict), newest
    last, read from metadata only: never a Secret value. ``namespace``: where a cluster-scoped
    parent keeps its history."""
    home_ns = applyset["parent"]["namespace"] or namespace
    if not home_ns:
        return []
    listed = revisions(list_secrets(client, secrets_res, home_ns, applyset["expected_id"]))
    shown = results(listed, applyset.get("revision"))
    return [rev.to_dict(shown[rev.number]) for rev in listed]
