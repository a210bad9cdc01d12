"""A module result that always arrives: the detail the user asked for, in at most a number of bytes.

AWX keeps a job event's result only up to ``MAX_EVENT_RES_DATA`` (700,000 bytes of JSON, awx
``settings/defaults.py``) and drops the whole result beyond it, summary and failures included. A
result lists every member (``objects``), every plan entry (``plan``) and, in diff mode, every
change (``diff``): about 280 bytes a member, so a set of a few thousand members lost everything.

``fit`` keeps what a reader needs first and lists the rest while it fits:

1. always the keys that are not per object (``summary``, ``plan_id``, ``applyset``, ``requests``,
   ``error``, ``hooks``, ``order``...) and the warnings;
2. the members that failed, then the others that changed (or were skipped: a run that stopped says
   why per member), in their order;
3. the plan's entries that do something (all but ``unchanged``), then the diff's entries;
4. the unchanged members, then the plan's unchanged entries.

A list stops at the first entry that no longer fits, and so do the lists after it; what was left
out is counted in ``omitted`` (per list) and said in a warning that names ``result_detail: full``.
A result within the budget is returned as it is, its keys unchanged.

Pure: a result in, a result out; no Ansible imports.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

AWX_EVENT_LIMIT = 700_000  # awx settings MAX_EVENT_RES_DATA: a larger event result is dropped whole
DEFAULT_MAX_BYTES = 600_000  # below AWX's limit, with room for what Ansible adds (invocation, warnings' list)

AUTO, CHANGED, SUMMARY, FULL = "auto", "changed", "summary", "full"
DETAILS = (AUTO, CHANGED, SUMMARY, FULL)

_LISTS = ("objects", "plan", "diff")
# The module's result (Report.to_dict and what the module adds): JSON, whose lists are cut here.
ModuleResult = dict[str, Any]
# Which entries of the result's lists: (list name, index).
_Entry = tuple[str, int]
_ROOM_FOR_NOTE = 1_000  # bytes kept for ``omitted`` and the warning that says what was left out


@dataclass
class Fitted:
    """The result to return, and the warning to give with it (None when nothing was left out)."""

    result: ModuleResult
    warning: str | None = None
    omitted: dict[str, int] = field(default_factory=dict)


def size_of(value: object) -> int:
    """The bytes of ``value`` as JSON the way Ansible sends a result (``json.dumps`` defaults)."""
    return len(json.dumps(value, default=str).encode("utf-8"))


def fit(result: ModuleResult, detail: str = AUTO, max_bytes: int = DEFAULT_MAX_BYTES, reserved: int = 0) -> Fitted:
    """``result`` cut to ``detail`` and to ``max_bytes`` of JSON.

    Args:
        result: the module result (``Report.to_dict`` and what the module adds).
        detail: ``full`` (everything, no limit), ``auto`` (everything that fits), ``changed`` (no
            unchanged member nor plan entry) or ``summary`` (the failed members only, no plan
            entries, no diff: ``plan_id`` still binds a deploy).
        max_bytes: the most bytes the result's JSON may take (not with ``full``).
        reserved: bytes the result will also carry that are not in it yet (the warnings' texts).

    Returns:
        A ``Fitted``: the result as it is when it is within ``max_bytes`` and the detail keeps all.
    """
    if detail == FULL or not any(result.get(name) for name in _LISTS):
        return Fitted(result)
    if detail == AUTO and size_of(result) + reserved <= max_bytes:
        return Fitted(result)
    base = {key: value for key, value in result.items() if key not in _LISTS}
    room = max_bytes - reserved - size_of(base) - _ROOM_FOR_NOTE
    kept = _kept(result, _tiers(result, detail), room)
    fitted = dict(result)
    omitted: dict[str, int] = {}
    for name in _LISTS:
        if name in result:
            fitted[name] = [result[name][i] for i in sorted(kept[name])]
            if len(fitted[name]) < len(result[name]):
                omitted[name] = len(result[name]) - len(fitted[name])
    if not omitted:
        return Fitted(result)
    fitted["omitted"] = omitted
    return Fitted(fitted, _warning(omitted, result, detail, max_bytes), omitted)


def _tiers(result: ModuleResult, detail: str) -> list[_Entry]:
    """The entries ``detail`` keeps, as ``(list, index)`` in the order they are listed while they fit."""
    objects, plan, diff = (result.get(name) or [] for name in _LISTS)

    def members(*actions: str, but: tuple[str, ...] = ()) -> list[_Entry]:
        return [("objects", i) for i, o in enumerate(objects)
                if (o.get("action") in actions if actions else o.get("action") not in but)]

    failed = members("failed")
    if detail == SUMMARY:
        return failed
    changed = members(but=("failed", "unchanged"))
    acting = [("plan", i) for i, e in enumerate(plan) if e.get("action") != "unchanged"]
    tiers = failed + changed + acting + [("diff", i) for i in range(len(diff))]
    if detail == CHANGED:
        return tiers
    return tiers + members("unchanged") + [("plan", i) for i, e in enumerate(plan) if e.get("action") == "unchanged"]


def _kept(result: ModuleResult, tiers: list[_Entry], room: int) -> dict[str, set[int]]:
    """``{list: {index, ...}}``: the entries of ``tiers`` that fit in ``room`` bytes, up to the first
    that does not (a reader sees no unchanged member while a changed one is left out)."""
    kept: dict[str, set[int]] = {name: set() for name in _LISTS}
    for name, index in tiers:
        room -= size_of(result[name][index]) + 2  # and the ", " that separates it from the next
        if room < 0:
            break
        kept[name].add(index)
    return kept


def _warning(omitted: dict[str, int], result: ModuleResult, detail: str, max_bytes: int) -> str:
    counts = ", ".join(f"{len(result[name]) - count:,} of {len(result[name]):,} {name}"
                       for name, count in omitted.items())
    why = (f"result_detail: {detail}" if detail != AUTO else
           f"the rest would pass result_max_bytes ({max_bytes:,} bytes; AWX drops a result over "
           f"{AWX_EVENT_LIMIT:,})")
    return (f"the result lists {counts}: {why}. The summary counts every member, the failed and changed members "
            "come first and 'omitted' counts what was left out; set result_detail: full to return everything")
