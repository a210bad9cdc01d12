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

import json
from dataclasses import dataclass, field

from . import nochange
from .errors import InputError

ANNOTATION_APPLY = "applyset.kubernetes.ansible/apply"
FLUX_SSA = "kustomize.toolkit.fluxcd.io/ssa"
CREATE_ONLY, IGNORE = "create-only", "ignore"
_POLICIES = {(ANNOTATION_APPLY, "create-only"): CREATE_ONLY, (ANNOTATION_APPLY, "ignore"): IGNORE,
             (FLUX_SSA, "IfNotPresent"): CREATE_ONLY, (FLUX_SSA, "Ignore"): IGNORE}
_ABSENT = object()


@dataclass(frozen=True)
class Rule:
    """One ``ignore_fields`` rule: the members it matches and its JSON pointers (split)."""

    kind: str
    group: str | None
    name: str | None
    namespace: str | None
    pointers: tuple  # (text, (segment, ...))

    def matches(self, member) -> bool:
        res = member.resource
        return (res.kind == self.kind and (self.group is None or res.group == self.group)
                and (self.name is None or member.name == self.name)
                and (self.namespace is None or (member.namespace or "") == self.namespace))


@dataclass(frozen=True)
class Policies:
    """What the policies decided: ``skipped`` ``{ObjectId: uid or None}`` (never sent), ``reasons``
    ``{ObjectId: reason}`` and ``fields`` ``{ObjectId: [what each pointer did]}``."""

    skipped: dict = field(default_factory=dict)
    reasons: dict = field(default_factory=dict)
    fields: dict = field(default_factory=dict)


def parse_rules(raw) -> tuple:
    """The ``ignore_fields`` option as ``Rule`` values; refuses a bad rule, naming it."""
    rules = []
    for index, item in enumerate(raw or ()):
        where = f"ignore_fields[{index}]"
        if not isinstance(item, dict) or not item.get("kind") or not item.get("json_pointers"):
            raise InputError(f"{where} needs kind and json_pointers", obj="options",
                             fix="give each rule a kind and a list of JSON pointers such as /spec/replicas")
        pointers = []
        for text in item["json_pointers"]:
            if not isinstance(text, str) or not text.startswith("/") or text == "/":
                raise InputError(f"{where}: {text!r} is not a JSON pointer to a field", obj="options",
                                 fix="write pointers as /spec/replicas (RFC 6901: ~1 for /, ~0 for ~)")
            pointers.append((text, tuple(s.replace("~1", "/").replace("~0", "~") for s in text[1:].split("/"))))
        rules.append(Rule(item["kind"], item.get("group"), item.get("name"), item.get("namespace"), tuple(pointers)))
    return tuple(rules)


def apply_policy(body: dict) -> str | None:
    """``create-only``, ``ignore`` or None, from the object's own annotations."""
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    return next((policy for (key, value), policy in _POLICIES.items() if annotations.get(key) == value), None)


def resolve(ctx) -> Policies:
    """Decide step: the apply policies and ``ignore_fields`` of every member, against what was
    listed; member bodies changed by a rule get their new digest."""
    rules = parse_rules(getattr(ctx.opts, "ignore_fields", ()))
    result = Policies()
    for member in ctx.plan.members:
        found = ctx.live.get(member.key)
        live = found.obj if found is not None else None
        policy = apply_policy(member.body)
        if policy is not None and (live is not None or policy == IGNORE):
            result.skipped[member.key] = found.uid if found is not None else None
            result.reasons[member.key] = _skip_reason(policy, live is not None)
            continue
        matching = [r for r in rules if r.matches(member)]
        if matching and live is not None:
            done = []
            for rule in matching:
                member.body = _resolve_rule(member.body, live, rule, ctx.opts.field_manager, done)
            member.body = nochange.with_digest(member.body)
            result.fields[member.key] = done
    return result


def _skip_reason(policy: str, exists: bool) -> str:
    if policy == CREATE_ONLY:
        return "create-only: it exists, so it is not updated"
    return "ignore: never written" + ("" if exists else " (not on the cluster, not created)")


def _resolve_rule(body: dict, live: dict, rule: Rule, manager: str, done: list) -> dict:
    entries = (live.get("metadata") or {}).get("managedFields") or []
    for text, segments in rule.pointers:
        if _get(body, segments) is _ABSENT:
            continue  # the manifest does not set it: nothing to leave
        value = _get(live, segments)
        owners = [e.get("manager") for e in entries
                  if isinstance(e, dict) and e.get("subresource") != "status" and _owns(e, live, segments)]
        others = sorted({o for o in owners if o != manager})
        if value is not _ABSENT and not others and manager in owners:
            body = _set(body, segments, value)
            done.append({"pointer": text, "action": "kept live value", "owners": [manager]})
        else:
            body = _remove(body, segments)
            done.append({"pointer": text, "action": "left to others" if others else "left out",
                         "owners": others})
    return body


def _get(obj, segments):
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


def _copy_path(obj, segments):
    """A copy of ``obj`` with every container along ``segments`` copied; returns (copy, parent)."""
    root = obj.copy() if isinstance(obj, (dict, list)) else obj
    node = root
    for seg in segments[:-1]:
        key = int(seg) if isinstance(node, list) else seg
        child = node[key]
        node[key] = child.copy()
        node = node[key]
    return root, node


def _set(obj, segments, value):
    root, node = _copy_path(obj, segments)
    node[int(segments[-1]) if isinstance(node, list) else segments[-1]] = value
    return root


def _remove(obj, segments):
    root, node = _copy_path(obj, segments)
    if isinstance(node, list):
        node.pop(int(segments[-1]))
    else:
        node.pop(segments[-1], None)
    return root


def _owns(entry: dict, live: dict, segments) -> bool:
    """Whether a managedFields entry owns the field at ``segments`` of ``live``."""
    tree, node = entry.get("fieldsV1") or {}, live
    for seg in segments:
        if isinstance(node, dict):
            key, node = f"f:{seg}", node.get(seg)
        elif isinstance(node, list) and seg.isdigit() and int(seg) < len(node):
            node = node[int(seg)]
            key = _list_key(tree, node, int(seg))
        else:
            return False
        if not isinstance(tree, dict) or key not in tree:
            return False
        tree = tree[key]
    return True


def _list_key(tree, element, index: int) -> str:
    """The fieldsV1 key of a list element: ``k:{...}`` whose values it has, ``v:...`` or ``i:N``."""
    for key in tree if isinstance(tree, dict) else ():
        if key.startswith("k:") and isinstance(element, dict):
            try:
                wanted = json.loads(key[2:])
            except ValueError:
                continue
            if all(str(element.get(k)) == str(v) for k, v in wanted.items()):
                return key
        if key.startswith("v:") and key[2:] == json.dumps(element, separators=(",", ":")):
            return key
    return f"i:{index}"
