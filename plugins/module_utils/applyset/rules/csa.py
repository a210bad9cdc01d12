"""Move field ownership from client-side tools to our server-side apply manager.

Server-side apply only removes a field that the applying manager owned and no longer sets.
An object written before by client-side ``kubectl apply``, ``kubectl create`` or kubernetes.core
has its fields owned by those tools' Update managers, so removing a field from our manifest
would leave it in place for good. kubectl solves this for its own client-side apply with
client-go's ``csaupgrade`` (``kubectl apply --server-side``, ``migrateToSSAIfNecessary``); we
follow the same model and name the managers we migrate:

- **Client-side apply** (the Update managers that own the
  ``kubectl.kubernetes.io/last-applied-configuration`` annotation: ``kubectl apply`` and
  kubernetes.core's ``apply: true``): all their fields become ours, as kubectl does it, and
  the object is applied once more, so that what the manifest no longer sets is removed.
  The annotation goes too: only kubectl's own ``kubectl`` manager gets it kept up to date by
  the server, so left behind it would go stale, and a later client-side ``kubectl apply``
  would compute its deletions from that stale copy.
- **Imperative commands** (``kubectl create``, ``edit``, ``patch``, ``replace``, ``label``,
  ``annotate``, ``set``, and kubernetes.core's other modes): only the fields that our
  manifest sets too become ours. Those tools record no intent, so a field only they set may
  be a person's deliberate change (a label, an annotation) and is left alone; a field our
  manifest sets is ours from now on, so removing it from the manifest later really removes it.

Controllers and other appliers are never touched: their fields are theirs.

A rollback (rollback.py) moves ownership once more, before its apply: the other field managers
that releases of the same set used (``merge_releases``). Their entries, Apply or Update, join
our Apply entry whole, so that our apply neither conflicts with what a later release set under
another manager nor leaves behind a field only that release set.

Pure functions over the ``managedFields`` list (FieldsV1 sets handled as sets of paths).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from ..object_meta import FieldsV1, KubeObject, ManagedFieldsEntry

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
_LAST_APPLIED_PATH = ("f:metadata", "f:annotations", f"f:{LAST_APPLIED_ANNOTATION}")

# Update managers of imperative tools whose fields we take where our manifest sets them too.
# "OpenAPI-Generator" is what the API server records for the Python kubernetes client
# (kubernetes.core's k8s module) when it sends no field manager of its own.
IMPERATIVE_MANAGERS = frozenset({
    "kubectl-create", "kubectl-edit", "kubectl-patch", "kubectl-replace", "kubectl-label",
    "kubectl-annotate", "kubectl-set", "kubectl-client-side-apply", "OpenAPI-Generator",
})

FieldPath = tuple[str, ...]
"""A path in a FieldsV1 trie, its keys from the top: ``("f:spec", "f:replicas")``."""


# metadata.managedFields, as ObjectMeta holds it.
ManagedFields = Sequence[ManagedFieldsEntry]


def field_paths(fields_v1: FieldsV1 | None, prefix: FieldPath = ()) -> set[FieldPath]:
    """The set of field paths the FieldsV1 trie ``fields_v1`` holds, each under ``prefix``.

    ``{"f:data": {"f:a": {}}}`` gives ``{("f:data", "f:a")}``; a node marked ``"."`` is a path of
    its own. None gives the empty set.
    """
    paths: set[FieldPath] = set()
    for key, child in (fields_v1 or {}).items():
        if key == ".":
            continue
        path = prefix + (key,)
        if not child or "." in child:
            paths.add(path)
        paths |= field_paths(child, path)
    return paths


def fields_v1(paths: Iterable[FieldPath]) -> FieldsV1:
    """The FieldsV1 trie of the field ``paths`` (tuples of ``f:``/``k:`` keys), the inverse of
    ``field_paths``."""
    root: FieldsV1 = {}
    members = set(paths)
    for path in sorted(members):
        node = root
        for key in path:
            node = node.setdefault(key, {})
    _mark_members(root, (), members)
    return root


def _mark_members(node: FieldsV1, prefix: FieldPath, members: set[FieldPath]) -> None:
    for key, child in list(node.items()):
        path = prefix + (key,)
        _mark_members(child, path, members)
        if child and path in members:
            child["."] = {}


@dataclass
class Migration:
    """What ``plan`` moves: the new ``managed_fields`` list to write, the client-side apply managers
    whose fields all became ours (``whole``), and the imperative managers whose fields that the
    manifest sets too became ours (``shared``)."""

    managed_fields: list[ManagedFieldsEntry]  # the new managedFields
    whole: list[str] = field(default_factory=list)  # client-side apply managers whose fields all became ours
    shared: list[str] = field(default_factory=list)  # imperative managers whose shared fields became ours
    releases: list[str] = field(default_factory=list)  # other managers of this set's releases, all fields ours
    releases_of: str = "earlier releases of this set"  # whose managers ``releases`` are, for ``describe``

    @property
    def needs_reapply(self) -> bool:
        """Fields of the client-side apply that the manifest no longer sets are only removed by
        applying again, now that we own them."""
        return bool(self.whole)

    def describe(self) -> str:
        """Which fields of which managers became ours, in words for the module's report."""
        parts = []
        if self.whole:
            parts.append(f"all fields of {', '.join(sorted(set(self.whole)))} (client-side apply)")
        if self.shared:
            parts.append(f"the fields the manifest sets from {', '.join(sorted(set(self.shared)))}")
        if self.releases:
            parts.append(f"all fields of {', '.join(sorted(set(self.releases)))} ({self.releases_of})")
        return " and ".join(parts)


def _is_update(entry: ManagedFieldsEntry) -> bool:
    return entry.get("operation") == "Update" and not entry.get("subresource")


def _owns_last_applied(entry: ManagedFieldsEntry) -> bool:
    node: object = entry.get("fieldsV1") or {}
    for key in _LAST_APPLIED_PATH:
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return False
    return True


def _may_migrate(entry: ManagedFieldsEntry, ssa_manager: str) -> bool:
    return (_is_update(entry) and entry.get("manager") != ssa_manager
            and (entry.get("manager") in IMPERATIVE_MANAGERS or _owns_last_applied(entry)))


def may_take_over(managed_fields: ManagedFields | None, ssa_manager: str) -> bool:
    """Whether an apply by ``ssa_manager`` may be followed by a takeover (``plan``), judged before
    the apply: some client-side tool's entry owns fields, whether or not ours exists yet."""
    return any(_may_migrate(e, ssa_manager) for e in (managed_fields or ()))


def plan(managed_fields: ManagedFields | None, ssa_manager: str) -> Migration | None:
    """Plan taking fields over from client-side tools (see the module's docstring).

    Args:
        managed_fields: the object's ``metadata.managedFields`` after our apply (not modified).
        ssa_manager: our field manager; its ``Apply`` entry receives the fields.

    Returns:
        The ``Migration``, or None when there is nothing to move (or no ``Apply`` entry of ours).
    """
    # Runs after every apply: most objects have no entry to move, and need no copy or parsing.
    if not any(_may_migrate(e, ssa_manager) for e in (managed_fields or ())):
        return None
    entries = copy.deepcopy(list((managed_fields or ())))
    ours = next((e for e in entries if e.get("manager") == ssa_manager and e.get("operation") == "Apply"
                 and not e.get("subresource")), None)
    if ours is None:
        return None
    ours_before = field_paths(ours.get("fieldsV1"))
    owned = set(ours_before)
    migration = Migration(managed_fields=[])
    # "" for an entry without a manager (the server always names one): it is told apart as None was
    csa_names = {e.get("manager", "") for e in entries if _is_update(e) and e.get("manager") != ssa_manager
                 and _owns_last_applied(e)}
    kept: list[ManagedFieldsEntry] = []
    for entry in entries:
        name = entry.get("manager", "")
        if entry is ours or not _is_update(entry):
            kept.append(entry)
            continue
        if name in csa_names:
            # csaupgrade: the entry of our API version joins ours; the manager's others go.
            if entry.get("apiVersion") == ours.get("apiVersion"):
                owned |= field_paths(entry.get("fieldsV1"))
            migration.whole.append(name)
            continue
        if name in IMPERATIVE_MANAGERS and entry.get("apiVersion") == ours.get("apiVersion"):
            theirs = field_paths(entry.get("fieldsV1"))
            shared = theirs & ours_before
            if shared:
                migration.shared.append(name)
                if theirs == shared:
                    continue  # nothing of theirs is left
                entry["fieldsV1"] = fields_v1(theirs - shared)
        kept.append(entry)
    if not migration.whole and not migration.shared:
        return None
    ours["fieldsV1"] = fields_v1(owned)
    migration.managed_fields = kept
    return migration


def _release_entry(entry: ManagedFieldsEntry, ssa_manager: str, managers: Collection[str], api_version: str | None) -> bool:
    """Whether ``entry`` is the object's own entry (no subresource) of another field manager that
    releases of this set used, in ``api_version`` (paths of another version cannot be merged)."""
    return (entry.get("manager") in managers and entry.get("manager") != ssa_manager
            and entry.get("operation") in ("Apply", "Update") and not entry.get("subresource")
            and entry.get("apiVersion") == api_version)


def _is_our_apply(entry: ManagedFieldsEntry, ssa_manager: str) -> bool:
    return entry.get("manager") == ssa_manager and entry.get("operation") == "Apply" and not entry.get("subresource")


def release_fields_beyond_ours(managed_fields: ManagedFields | None, ssa_manager: str, managers: Collection[str],
                               api_version: str | None) -> bool:
    """Whether other field managers of this set's releases own a field that ``ssa_manager``'s Apply
    entry does not: then the object holds something an apply of ours would not remove."""
    entries = [e for e in (managed_fields or ()) if isinstance(e, dict)]
    theirs = [e for e in entries if _release_entry(e, ssa_manager, managers, api_version)]
    if not theirs:
        return False
    ours = next((field_paths(e.get("fieldsV1")) for e in entries if _is_our_apply(e, ssa_manager)), set())
    return any(field_paths(e.get("fieldsV1")) - ours for e in theirs)


def merge_releases(managed_fields: ManagedFields | None, ssa_manager: str, managers: Collection[str],
                   api_version: str | None) -> Migration | None:
    """Plan a rollback's takeover: every entry of the other field managers that releases of this
    set used (``managers``), in ``api_version``, joins ``ssa_manager``'s Apply entry (made from the
    first of them when there is none yet), as client-go's csaupgrade merges kubectl's entry.

    Args:
        managed_fields: the object's ``metadata.managedFields`` before the rollback's apply.
        ssa_manager: the rollback's field manager.
        managers: every field manager the set's kept revisions recorded (ours may be among them).
        api_version: the apiVersion the rollback applies the object in.

    Returns:
        The ``Migration`` (``releases`` names the managers merged), or None when no entry is theirs.
    """
    entries = copy.deepcopy([e for e in (managed_fields or ()) if isinstance(e, dict)])
    theirs = [e for e in entries if _release_entry(e, ssa_manager, managers, api_version)]
    if not theirs:
        return None
    ours = next((e for e in entries if _is_our_apply(e, ssa_manager)), None)
    if ours is None:
        ours = {**theirs[0], "manager": ssa_manager, "operation": "Apply"}
        entries.append(ours)
    owned = field_paths(ours.get("fieldsV1"))
    for entry in theirs:
        owned |= field_paths(entry.get("fieldsV1"))
    ours["fieldsV1"] = fields_v1(owned)
    ours["fieldsType"] = "FieldsV1"
    kept = [e for e in entries if not any(e is t for t in theirs)]
    return Migration(managed_fields=kept, releases=sorted({e["manager"] for e in theirs}))


def patch(migration: Migration, resource_version: str | None) -> list[dict[str, object]]:
    """A JSON patch that writes the ``migration``'s managedFields, guarded by ``resource_version``
    (the object's, as read with the managedFields the migration was planned on).

    ``replace`` rather than ``test`` on the resourceVersion, as client-go does: a stale one
    then fails with 409 Conflict from storage instead of 422 from the patch.
    """
    return [
        {"op": "replace", "path": "/metadata/managedFields", "value": migration.managed_fields},
        {"op": "replace", "path": "/metadata/resourceVersion", "value": resource_version},
    ]


def release_removals(managed_fields: ManagedFields | None, ssa_manager: str, managers: Collection[str],
                     api_version: str | None) -> list[FieldPath]:
    """What a take-over's apply removes, read from a check-mode dry run's answer (Helm's entries
    still there): the fields only the release ``managers`` own, which ``ssa_manager`` does not
    apply and no other manager owns. A real run merges those entries into ours first
    (``merge_releases``), so its apply removes exactly these. Outermost paths only, sorted."""
    entries = [e for e in (managed_fields or ()) if isinstance(e, dict)]
    theirs: set[FieldPath] = set()
    kept: set[FieldPath] = set()
    for entry in entries:
        paths = field_paths(entry.get("fieldsV1"))
        if _release_entry(entry, ssa_manager, managers, api_version):
            theirs |= paths
        else:
            kept |= paths  # ours, controllers', other tools' (status included)
    removed = {path for path in theirs
               if not any(other[:len(path)] == path for other in kept)}
    return sorted(path for path in removed if not any(path[:n] in removed for n in range(1, len(path))))


def without_fields(obj: KubeObject, paths: Iterable[FieldPath]) -> KubeObject:
    """A copy of ``obj`` without the fields at ``paths`` (``f:``, ``k:`` and ``v:`` keys; a path that
    is not there is passed over), and without a map or list their removal left empty."""
    out = copy.deepcopy(obj)
    for path in paths:
        _remove(out, path)
    return out


_MISSING = object()


def _child(node: object, key: str) -> tuple[object, str | int | None]:
    """The child of ``node`` at the FieldsV1 ``key`` and its key or index there, or ``_MISSING``."""
    if isinstance(node, dict) and key.startswith("f:") and key[2:] in node:
        return node[key[2:]], key[2:]
    if isinstance(node, list) and key[:2] in ("k:", "v:"):
        wanted = json.loads(key[2:])
        for index, item in enumerate(node):
            if (item == wanted if key.startswith("v:") else
                    isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items())):
                return item, index
    return _MISSING, None


def _remove(node: object, path: FieldPath) -> bool:
    """Remove ``path`` under ``node``; whether ``node`` was left empty by it."""
    child, where = _child(node, path[0])
    if child is _MISSING or not isinstance(node, (dict, list)):
        return False
    if len(path) == 1 or _remove(child, path[1:]):
        del node[where]  # type: ignore[arg-type]  # a key of the dict or an index of the list, as _child found
    return not node


def value_at(obj: object, path: FieldPath) -> object:
    """The value at ``path`` in ``obj``, or a marker of its absence equal to nothing else."""
    node = obj
    for key in path:
        node, _where = _child(node, key)
        if node is _MISSING:
            break
    return node


def field_name(path: FieldPath) -> str:
    """``path`` as the API server names a field in its messages: ``.metadata.labels.app``,
    ``.spec.ports[port=80,protocol="TCP"]``."""
    out = ""
    for key in path:
        kind, value = key[:2], key[2:]
        if kind == "f:":
            out += f".{value}"
        elif kind == "k:":
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(value).items()) + "]"
        else:
            out += f"[{'=' if kind == 'v:' else ''}{value}]"
    return out
