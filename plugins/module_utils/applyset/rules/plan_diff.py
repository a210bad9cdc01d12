"""An approved plan against the plan a run computes now: ``parse_approved`` reads what the user
gave as ``approved_plan``, ``differences`` names each difference with why, when it can tell.

``approved_plan`` is the id alone (``plan-v1:...``), the plan list of a check-mode result, or a
dict with ``plan`` (and ``plan_id``): the check-mode result itself, or what ``playbooks/preview.yml``
publishes per set. Only a plan lets a refusal name each object; with the id alone a refusal
says the plan differs and shows the current one.

Pure: values in, a value out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from collections.abc import Mapping
from typing import Any

from . import plan_id as plans
from ..errors import InputError
from .plan_id import PlanEntry

_FIX = ("give approved_plan the plan_id of a check-mode run, its plan list, or the check-mode result "
        "(a dict with plan and plan_id)")


_ID = re.compile(r"(plan-v[0-9]+):([0-9a-f]+)")


@dataclass(frozen=True)
class Approved:
    """What was approved: its ``plan_id``, and its ``plan`` when given (None with the id alone) or
    its ``digests``; ``left_out`` entries of that plan when its result left them out (``result_detail``)."""

    plan_id: str
    plan: list[PlanEntry] | None = None
    left_out: int = 0
    digests: str | None = None  # plan_digests.tokens: what a fleet's preview publishes instead of the plan


def parse_approved(value: object) -> Approved:
    """``approved_plan`` as an ``Approved``.

    Raises:
        InputError: a value of none of the three shapes, a plan whose entries are not plan entries,
            or a dict whose ``plan_id`` is not the id of its ``plan`` (edited after the preview).
    """
    if isinstance(value, str):
        problem = malformed(value)
        if problem:
            raise InputError(f"approved_plan {value!r} is not a plan id: {problem}", obj="approved_plan", fix=_FIX)
        return Approved(value)
    if isinstance(value, dict) and "plan" not in value and isinstance(value.get("digests"), str):
        return _with_digests(value)
    if isinstance(value, dict) and "plan" not in value and isinstance(value.get("plan_id"), str):
        return parse_approved(value["plan_id"])
    plan = value.get("plan") if isinstance(value, dict) else value
    if not isinstance(plan, list) or not all(isinstance(e, dict) and "object" in e and "action" in e for e in plan):
        raise InputError("approved_plan is neither a plan id nor a plan", obj="approved_plan", fix=_FIX)
    left_out = _left_out(value)
    if left_out and isinstance(value, dict):  # a result cut to its budget: its id binds, its entries name what they can
        return Approved(parse_approved(value["plan_id"]).plan_id, list(plan), left_out)
    computed = plans.digest(plan)
    given = value.get("plan_id") if isinstance(value, dict) else None
    if given is not None and given != computed:
        raise InputError(f"approved_plan's plan_id {given} is not the id of its plan ({computed}): the plan was "
                         "changed after the preview", obj="approved_plan",
                         fix="give the plan exactly as the check-mode run returned it")
    return Approved(computed, list(plan))


def _with_digests(value: Mapping[str, Any]) -> Approved:
    """A plan id with its entries' digests (``plan_digests.published``): the id binds, the digests name."""
    try:
        plans.parse_digests(value["digests"])
    except ValueError as err:
        raise InputError(f"approved_plan's digests are not plan digests: {err}", obj="approved_plan",
                         fix="give the digests exactly as the preview published them") from None
    if not isinstance(value.get("plan_id"), str):
        raise InputError("approved_plan has digests but no plan_id to bind the run to", obj="approved_plan",
                         fix="give the plan_id with its digests, as the preview published them")
    return Approved(parse_approved(value["plan_id"]).plan_id, digests=value["digests"], left_out=_left_out(value))


def _left_out(value: object) -> int:
    """How many plan entries the check-mode result ``value`` left out (its ``omitted``), 0 for a
    whole plan. Raises InputError for a cut plan without its ``plan_id``: the id is what binds it."""
    if not isinstance(value, dict):
        return 0
    omitted = value.get("omitted")
    count = omitted.get("plan") if isinstance(omitted, dict) else None
    if not isinstance(count, int) or count <= 0:
        return 0
    if not isinstance(value.get("plan_id"), str):
        raise InputError("approved_plan's plan left entries out (omitted) and has no plan_id to bind the run to",
                         obj="approved_plan", fix="give the check-mode result with its plan_id")
    return count


def malformed(plan_id: str) -> str | None:
    """What is wrong with ``plan_id`` as a plan id, or None when it is one: ``plan-vN:`` and hex
    digits, 24 of them for this version's ids (an id cut short or retyped is never compared)."""
    match = _ID.fullmatch(plan_id)
    if match is None:
        return f"a plan id is {plans.PLAN_VERSION}: and {plans.ID_HEX_DIGITS} hex digits"
    if match.group(1) == plans.PLAN_VERSION and len(match.group(2)) != plans.ID_HEX_DIGITS:
        return (f"a {plans.PLAN_VERSION} id has {plans.ID_HEX_DIGITS} hex digits, this one {len(match.group(2))} "
                "(cut short or retyped?)")
    return None


def other_set(approved: list[PlanEntry], set_entry: PlanEntry) -> PlanEntry | None:
    """The set entry of an ``approved`` plan made for another set or another kind of run than the
    one of ``set_entry`` (the current plan's), or None when it is this set's."""
    theirs = next((e for e in approved if e.get("action") in plans.SET_ACTIONS), None)
    fields = ("object", "id", "action")
    if theirs is None or all(theirs.get(f) == set_entry.get(f) for f in fields):
        return None
    return theirs


def differences(approved: list[PlanEntry], current: list[PlanEntry], left_out: int = 0) -> list[str]:
    """Each difference between the ``approved`` plan and the ``current`` one, as a line
    ``Object: approved A, now B: why`` (in the order of the objects). With ``left_out`` (entries
    the approved plan's result left out) only the objects the approved entries name are compared,
    and a last line says so."""
    before = {plans.entry_key(e): e for e in approved}
    now = {plans.entry_key(e): e for e in current}
    lines = []
    for key in sorted(set(before) | (set() if left_out else set(now))):
        was, is_now = before.get(key), now.get(key)
        if was != is_now:
            lines.append(_line(key[0], was, is_now))
    if left_out:
        lines.append(f"(the approved plan's result left {left_out} entries out, see result_detail: "
                     "a difference among them is not named)")
    return lines


def describe(now: PlanEntry, approved_action: str | None, same_action: bool = False) -> str:
    """The line of a current plan entry ``now`` whose approved entry is known only by its action
    (published digests): None when the approved plan has no entry for its object; with
    ``same_action``, the rest of the entry (its body, UID, start, values or order) differs."""
    obj, current = now["object"], _say(now)
    if approved_action is None:
        why = _appeared(now)
    elif same_action:
        current += " (another body, UID, start, values or order)"
        why = "it was changed in the manifests or on the cluster since"
    else:
        why = _action_changed(approved_action, now["action"])
    return f"{obj}: approved {approved_action or 'nothing'}, now {current}" + (f": {why}" if why else "")


def _line(obj: str, was: PlanEntry | None, now: PlanEntry | None) -> str:
    approved = _say(was)
    current = _say(now)
    if approved == current:  # the same action, another detail (the body, the UID, the order)
        approved, current = f"{approved} ({_detail(was, now)})", f"{current} ({_detail(now, was)})"
    why = _why(was, now)
    return f"{obj}: approved {approved}, now {current}" + (f": {why}" if why else "")


def _say(item: PlanEntry | None) -> str:
    if item is None:
        return "nothing"
    return item["action"] + (f" {item['phase']}" if item.get("phase") else "")


def _detail(item: PlanEntry | None, other: PlanEntry | None) -> str:
    """The fields of ``item`` that differ from ``other``'s, as ``name=value``."""
    item, other = item or {}, other or {}
    names = sorted(n for n in set(item) | set(other) if n not in ("object", "action") and item.get(n) != other.get(n))
    return ", ".join(f"{n}={item.get(n, '-')}" for n in names)


def _why(was: PlanEntry | None, now: PlanEntry | None) -> str:
    """Why the entry changed, when the two entries tell."""
    if was is None:
        return _appeared(now or {})
    if now is None:
        return _gone(was)
    a, b = was["action"], now["action"]
    if a in plans.SET_ACTIONS:
        return "another set, or another kind of run, than the one approved"
    if a == b and was.get("uid") != now.get("uid"):
        return "it was recreated on the cluster with a new UID since"
    if was.get("body") and now.get("body") and was.get("body") != now.get("body"):
        return "it was changed in the manifests since"
    if was.get("values") != now.get("values"):
        return _values_changed(was, now)
    if a == b == plans.CONFIGURE and was.get("start") != now.get("start"):
        return "it was changed on the cluster since, in a field the plan sends"
    if (was.get("wave"), was.get("after")) != (now.get("wave"), now.get("after")):
        return "its order was changed in the manifests since"
    return _action_changed(a, b)


def _values_changed(was: PlanEntry, now: PlanEntry) -> str:
    if was.get("values") and now.get("values"):
        return "its values were changed in the manifests since"
    if now.get("values"):
        return "the set got its plan key since, so its values are bound now and were not when it was approved"
    return "the set's plan key is gone since (its parent was written without it), so its values cannot be bound"


def _action_changed(a: str, b: str) -> str:
    if b == plans.CREATE and a in (plans.CONFIGURE, plans.UNCHANGED, plans.SKIP):
        return "it was deleted on the cluster since"
    if a == plans.CREATE and b in (plans.CONFIGURE, plans.UNCHANGED):
        return "it was created on the cluster since"
    if a == plans.UNCHANGED and b == plans.CONFIGURE:
        return "it was changed on the cluster since, in a field the plan sends"
    if a == plans.CONFIGURE and b == plans.UNCHANGED:
        return "the cluster already holds what the plan sends (someone applied it since)"
    if a in plans.MEMBER_ACTIONS and b in (plans.PRUNE, plans.KEEP, plans.LEAVE):
        return "it was removed from the manifests since"
    if b in plans.MEMBER_ACTIONS and a in (plans.PRUNE, plans.KEEP, plans.LEAVE):
        return "it was added to the manifests since"
    if a == plans.CREATE_NAMESPACE or b == plans.CREATE_NAMESPACE:
        return "the namespace was created or deleted on the cluster since"
    return "its annotations or its owner changed on the cluster since" if {a, b} <= {plans.PRUNE, plans.KEEP, plans.LEAVE} else ""


_REMOVALS = (plans.PRUNE, plans.KEEP, plans.LEAVE, plans.DELETE, plans.UNLABEL)

# Why an entry is in the current plan and not in the approved one, by its action.
_APPEARED = {
    **dict.fromkeys((*plans.MEMBER_ACTIONS, plans.RUN_HOOK), "it is new in the manifests"),
    **dict.fromkeys(_REMOVALS, "it joined the set on the cluster since (an object labelled part of the set)"),
    plans.CREATE_NAMESPACE: "the namespace was deleted on the cluster since",
    plans.RETIRE_HELM_RELEASE: "Helm installed or upgraded the release since",
}

# Why an entry of the approved plan is not in the current one, by its action.
_GONE = {
    **dict.fromkeys(plans.MEMBER_ACTIONS, "it was removed from the manifests since (and is no member on the cluster)"),
    plans.CREATE: "it was removed from the manifests since",
    plans.RUN_HOOK: "it was removed from the manifests since, or no member changes any more",
    **dict.fromkeys(_REMOVALS, "it was deleted on the cluster since, or left the set"),
    plans.CREATE_NAMESPACE: "the namespace was created on the cluster since",
    plans.RETIRE_HELM_RELEASE: "Helm keeps no record of the release any more (uninstalled, or taken over)",
}


def _appeared(now: PlanEntry) -> str:
    return _APPEARED.get(str(now.get("action")), "")


def _gone(was: PlanEntry) -> str:
    return _GONE.get(str(was.get("action")), "")
