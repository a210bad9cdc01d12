"""Fields and members a run leaves to others: ``ignore_fields`` rules and the per-object apply
policies (create-only, ignore).

``ignore_fields`` rules (``Rule``) name a kind (and group), optionally a name and a namespace,
and JSON pointers. Each pointer of a matching member is resolved by server-side apply
ownership, as Flux's ``spec.ignore`` does, against the live object the run listed:

- another field manager owns the field: it is left out of the apply body (we stop owning it,
  the value stays as the other manager set it);
- this collection is its only owner: the live value is sent, so the field is neither changed
  nor deleted (server-side apply deletes a field its only owner stops sending);
- nobody owns it, or it is not there: it is left out;
- the object does not exist yet: the manifest's value is sent (it is created with it).

The body is changed before the unchanged members are found and carries a new digest
(``nochange.with_digest``), so a re-run that changes nothing writes nothing.

An object's own annotation chooses how it is applied at all: ``applyset.kubernetes.ansible/apply``
``create-only`` (Flux: ``kustomize.toolkit.fluxcd.io/ssa: IfNotPresent``): created when absent,
never updated; ``ignore`` (Flux: ``Ignore``): never written. Both stay members: their kinds are in
the hint, and the ones that exist with this set's label are pruned when they leave the set.
Pure: no requests, no Ansible.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ..object_meta import KubeObject, annotations_of
from . import nochange
from ..object_meta import ManagedFieldsEntry, managed_fields_of
from .. import spec
from ..errors import InputError
from .plan import DesiredObject

if TYPE_CHECKING:  # what the list-live step hands on, named for the annotations only: the steps are above the rules
    from ..run.records import LiveState

ANNOTATION_APPLY = "applyset.kubernetes.ansible/apply"
FLUX_SSA = "kustomize.toolkit.fluxcd.io/ssa"
CREATE_ONLY, IGNORE = "create-only", "ignore"
_POLICIES = {(ANNOTATION_APPLY, "create-only"): CREATE_ONLY, (ANNOTATION_APPLY, "ignore"): IGNORE,
             (FLUX_SSA, "IfNotPresent"): CREATE_ONLY, (FLUX_SSA, "Ignore"): IGNORE}
_ABSENT = object()

Segments = tuple[str, ...]
"""A JSON pointer split into its unescaped segments: ``/spec/replicas`` is ``("spec", "replicas")``."""


class PointerOutcome(TypedDict):
    """What one pointer of a rule did to a member, as the result's ``ignored_fields`` shows it."""

    pointer: str
    action: str  # "kept live value", "left to others" or "left out"
    owners: list[str]


@dataclass(frozen=True)
class Rule:
    """One ``ignore_fields`` rule: the members it matches and its JSON pointers (split)."""

    kind: str
    group: str | None
    name: str | None
    namespace: str | None
    pointers: tuple[tuple[str, Segments], ...]  # (text, segments)

    def matches(self, member: DesiredObject) -> bool:
        res = member.resource
        return (res.kind == self.kind and (self.group is None or res.group == self.group)
                and (self.name is None or member.name == self.name)
                and (self.namespace is None or (member.namespace or "") == self.namespace))


@dataclass(frozen=True)
class Policies:
    """What the policies decided: ``skipped`` ``{ObjectId: uid or None}`` (never sent), ``reasons``
    ``{ObjectId: reason}``, ``fields`` ``{ObjectId: [what each pointer did]}``, and for each member a
    rule matched, ``manifests`` ``{ObjectId: its body before the rules}`` (drift.py reads who holds
    the fields left to others there) and ``pointers`` ``{ObjectId: (segments, ...)}``."""

    skipped: dict[spec.ObjectId, str | None] = field(default_factory=dict)
    reasons: dict[spec.ObjectId, str] = field(default_factory=dict)
    fields: dict[spec.ObjectId, list[PointerOutcome]] = field(default_factory=dict)
    manifests: dict[spec.ObjectId, KubeObject] = field(default_factory=dict)
    pointers: dict[spec.ObjectId, tuple[Segments, ...]] = field(default_factory=dict)


def parse_rules(raw: Iterable[object] | None) -> tuple[Rule, ...]:
    """The ``ignore_fields`` option as ``Rule`` values; refuses a bad rule, naming it, before any
    request: a rule without kind or pointers, a malformed RFC 6901 pointer, and a pointer to a
    field the set itself needs (``_refused``)."""
    rules = []
    for index, item in enumerate(raw or ()):
        where = f"ignore_fields[{index}]"
        if not isinstance(item, dict) or not item.get("kind") or not item.get("json_pointers"):
            raise InputError(f"{where} needs kind and json_pointers", obj="options",
                             fix="give each rule a kind and a list of JSON pointers such as /spec/replicas")
        pointers = tuple((text, _parse_pointer(where, text)) for text in item["json_pointers"])
        rules.append(Rule(item["kind"], item.get("group"), item.get("name"), item.get("namespace"), pointers))
    return tuple(rules)


# ``~`` starts an escape in a JSON pointer; only ``~0`` (a ``~``) and ``~1`` (a ``/``) exist (RFC 6901).
_BAD_ESCAPE = re.compile(r"~(?![01])")
_POINTER_FIX = "write pointers as /spec/replicas (RFC 6901: ~1 for /, ~0 for ~)"


def _parse_pointer(where: str, text: object) -> Segments:
    """The segments of one pointer of a rule; refuses a malformed one and one that cannot work."""
    if not isinstance(text, str) or not text.startswith("/") or text == "/":
        raise InputError(f"{where}: {text!r} is not a JSON pointer to a field", obj="options", fix=_POINTER_FIX)
    bad = _BAD_ESCAPE.search(text)
    if bad:
        raise InputError(f"{where}: {text!r} is not a valid JSON pointer: {text[bad.start():bad.start() + 2]!r} "
                         "is no escape (only ~0 and ~1 are)", obj="options", fix=_POINTER_FIX)
    segments = tuple(s.replace("~1", "/").replace("~0", "~") for s in text[1:].split("/"))
    why = _refused(segments)
    if why:
        raise InputError(f"{where}: {text} cannot be left to others: {why}", obj="options",
                         fix=f"remove {text} from json_pointers; name fields under spec (or data), such as "
                             "/spec/replicas or /metadata/labels/<key> for one label")
    return segments


# Fields that name the object or tie it to the set: leaving one out (or sending the live value)
# would apply another object, or take the member out of its set.
_IDENTITY = {("kind",): "it names the object's kind", ("apiVersion",): "it names the object's API version",
             ("metadata",): "it holds the object's name and the set's label",
             ("metadata", "name"): "it names the object", ("metadata", "namespace"): "it names the object",
             ("metadata", "uid"): "the server sets it", ("metadata", "resourceVersion"): "the server sets it",
             ("metadata", "managedFields"): "the server keeps it",
             ("metadata", "labels"): f"it holds the set's label {spec.LABEL_PART_OF}",
             ("metadata", "annotations"): f"it holds the annotation {spec.ANNOTATION_APPLIED_DIGEST}",
             ("metadata", "labels", spec.LABEL_PART_OF): "it makes the object a member of the set",
             ("metadata", "annotations", spec.ANNOTATION_APPLIED_DIGEST): "it records what this collection applied"}


def _refused(segments: Segments) -> str | None:
    """Why a pointer cannot be left to others (it is, or is under, an identity field), or None."""
    for length in range(len(segments), 0, -1):
        why = _IDENTITY.get(segments[:length])
        # under metadata, labels or annotations other fields can work; under a scalar nothing can
        if why and (length == len(segments) or segments[:length] not in _CONTAINERS):
            return why
    return None


_CONTAINERS = frozenset({("metadata",), ("metadata", "labels"), ("metadata", "annotations")})


def apply_policy(body: KubeObject) -> str | None:
    """``create-only``, ``ignore`` or None, from the object's own annotations."""
    annotations = annotations_of(body)
    return next((policy for (key, value), policy in _POLICIES.items() if annotations.get(key) == value), None)


def resolve(rules: tuple[Rule, ...], members: Iterable[DesiredObject], live: LiveState, manager: str) -> Policies:
    """The apply policies and ``ignore_fields`` ``rules`` (``parse_rules``) of every one of
    ``members`` (``plan.DesiredObject``), against the ``live`` objects listed (``run.records.LiveState``)
    for the field manager ``manager``. A member a rule matches gets its body resolved (and its
    digest) here, before the unchanged members are found."""
    result = Policies()
    for member in members:
        found = live.get(member.key)
        live_obj = found.obj if found is not None else None
        policy = apply_policy(member.body)
        if policy is not None and (live_obj is not None or policy == IGNORE):
            result.skipped[member.key] = found.uid if found is not None else None
            result.reasons[member.key] = _skip_reason(policy, live_obj is not None)
            continue
        matching = [r for r in rules if r.matches(member)]
        if matching:
            _apply_rules(member, live_obj, matching, manager, result)
    return result


def _apply_rules(member: DesiredObject, live: KubeObject | None, matching: list[Rule], manager: str,
                 result: Policies) -> None:
    """The rules that match ``member``: its body resolved against ``live`` (when it exists), with
    the digest of the manifest's body whose ignored values are hidden (``digest_source``).

    The digest does not follow what the rules decided on this run: a field that passed to
    another manager (left out of the body) or that this collection alone still owns (its live
    value sent) changes nothing an apply would make, so it must not make the next run write.
    """
    manifest = member.body
    pointers = tuple(segments for rule in matching for _text, segments in rule.pointers)
    result.manifests[member.key], result.pointers[member.key] = manifest, pointers
    body = manifest
    if live is not None:
        done: list[PointerOutcome] = []
        for rule in matching:
            body = _resolve_rule(body, live, rule, manager, done)
        result.fields[member.key] = done
    member.digest_source = digest_source(manifest, pointers)
    member.body = nochange.with_digest(body, digest_of=member.digest_source)


HIDDEN = "(ignored)"


def digest_source(body: KubeObject, pointers: tuple[Segments, ...]) -> KubeObject:
    """``body`` with the value of each ignored field it sets replaced by one placeholder: whether
    the manifest sets the field is in the digest (leaving it out of the manifest is a change an
    apply makes), what it sets it to is not (the field is left to others)."""
    for segments in pointers:
        if _get(body, segments) is not _ABSENT:
            body = _set(body, segments, HIDDEN)
    return body


def unused_rules(rules: tuple[Rule, ...], members: Sequence[DesiredObject]) -> list[str]:
    """Warnings for the rules that do nothing: one that matches no member (naming the nearest kind
    of the set when the kind is close to one), and a pointer that no member it matches sets."""
    warnings = []
    for index, rule in enumerate(rules):
        matched = [m for m in members if rule.matches(m)]
        where = f"ignore_fields[{index}] (kind {rule.kind})"
        if not matched:
            kinds = sorted({m.resource.kind for m in members})
            near = difflib.get_close_matches(rule.kind, kinds, n=1)
            hint = f"; did you mean kind {near[0]}?" if near and near[0] != rule.kind else ""
            warnings.append(f"{where} matches no member of this set (kind, group, name and namespace){hint}")
            continue
        warnings += [f"{where}: {text} matches no field of the {len(matched)} member(s) it applies to; "
                     "check the pointer against the manifests" for text, segments in rule.pointers
                     if all(_get(m.body, segments) is _ABSENT for m in matched)]
    return warnings


def _skip_reason(policy: str, exists: bool) -> str:
    if policy == CREATE_ONLY:
        return "create-only: it exists, so it is not updated"
    return "ignore: never written" + ("" if exists else " (not on the cluster, not created)")


def _resolve_rule(body: KubeObject, live: KubeObject, rule: Rule, manager: str,
                  done: list[PointerOutcome]) -> KubeObject:
    entries = managed_fields_of(live)
    for text, segments in rule.pointers:
        if _get(body, segments) is _ABSENT:
            continue  # the manifest does not set it: nothing to leave
        value = _get(live, segments)
        owners = [e.get("manager", "") for e in entries if e.get("subresource") != "status" and _owns(e, live, segments)]
        others = sorted({o for o in owners if o != manager})
        if value is not _ABSENT and not others and manager in owners:
            body = _set(body, segments, value)
            done.append({"pointer": text, "action": "kept live value", "owners": [manager]})
        else:
            body = _remove(body, segments)
            done.append({"pointer": text, "action": "left to others" if others else "left out",
                         "owners": others})
    return body


def _get(obj: object, segments: Segments) -> object:
    for seg in segments:
        if isinstance(obj, dict):
            obj = obj.get(seg, _ABSENT)
        elif isinstance(obj, list) and seg.isdigit() and int(seg) < len(obj):
            obj = obj[int(seg)]
        else:
            return _ABSENT
        if obj is _ABSENT:
            return _ABSENT
    return obj


def _copy_path(obj: KubeObject, segments: Segments) -> tuple[KubeObject, Any]:
    """A copy of ``obj`` with every container along ``segments`` copied; returns (copy, parent)."""
    root = obj.copy() if isinstance(obj, (dict, list)) else obj
    node: Any = root  # a map or a list of the body: JSON
    for seg in segments[:-1]:
        key = int(seg) if isinstance(node, list) else seg
        child = node[key]
        node[key] = child.copy()
        node = node[key]
    return root, node


def _set(obj: KubeObject, segments: Segments, value: object) -> KubeObject:
    root, node = _copy_path(obj, segments)
    node[int(segments[-1]) if isinstance(node, list) else segments[-1]] = value
    return root


def _remove(obj: KubeObject, segments: Segments) -> KubeObject:
    root, node = _copy_path(obj, segments)
    if isinstance(node, list):
        node.pop(int(segments[-1]))
    else:
        node.pop(segments[-1], None)
    return root


def _owns(entry: ManagedFieldsEntry, live: KubeObject, segments: Segments) -> bool:
    """Whether a managedFields entry owns the field at ``segments`` of ``live``."""
    tree: object = entry.get("fieldsV1") or {}
    node: object = live
    for seg in segments:
        if isinstance(node, dict):
            key, node = f"f:{seg}", node.get(seg)
        elif isinstance(node, list) and seg.isdigit() and int(seg) < len(node):
            node = node[int(seg)]
            key = nochange.list_element_key(tree, node, int(seg))
        else:
            return False
        if not isinstance(tree, dict) or key not in tree:
            return False
        tree = tree[key]
    return True
