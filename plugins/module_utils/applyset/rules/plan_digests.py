"""A plan as digests: what a preview publishes for a fleet, small per set, from which a deploy
still names each difference its current plan can name.

A plan's entries name objects and hold digests already (``plan_id.py``), about 80 bytes each; a
fleet of 100 clusters with 1,000 members each publishes megabytes of AWX artifacts, which AWX hands
to the next job as extra variables. ``tokens`` makes each entry 11 characters instead, in the
plan's canonical order:

* 6 for the object (and a hook's phase): a digest of the entry's key (36 bits);
* 1 for its action (``ACTION_CODES``);
* 4 for the rest of the entry (the body's digest, the UID, the start, the values, the order): a
  digest of it (24 bits).

The run is still bound by the plan id, never by the tokens: they only name differences. The
deploy's current plan names its objects, so ``differences`` names every object of it whose token
is not the approved one, with the approved action and why (``plan_diff``); an approved entry whose
object is not in the plan now cannot be named, and is counted by its action. A collision of two
digests (about one in 10^5 for 1,000 entries) can only leave a difference unnamed.

Pure: values in, a value out.
"""

from __future__ import annotations

import base64
import hashlib
import json

from . import plan_diff, plan_id as plans
from .plan_id import PlanEntry

FORMAT = "plan-digests-v1"
_KEY, TOKEN = plans.DIGEST_KEY_CHARS, plans.DIGEST_TOKEN_CHARS
_DETAIL = TOKEN - _KEY - 1

ACTION_CODES = {
    plans.SET_APPLY: "A", plans.SET_UNINSTALL: "U", plans.SET_DISBAND: "D",
    plans.CREATE: "c", plans.CONFIGURE: "g", plans.UNCHANGED: "u", plans.SKIP: "s",
    plans.ADOPT: "a", plans.CREATE_NAMESPACE: "n", plans.RUN_HOOK: "h",
    plans.PRUNE: "p", plans.KEEP: "k", plans.LEAVE: "l", plans.DELETE: "d", plans.UNLABEL: "x",
    plans.RETIRE_HELM_RELEASE: "r",
}
_ACTIONS = {code: action for action, code in ACTION_CODES.items()}
_OTHER = "?"  # an action this version does not know (a hand-made plan): still compared


def tokens(plan: list[PlanEntry]) -> str:
    """The plan's entries as tokens, in canonical order, one string."""
    return "".join(_token(entry) for entry in plans.canonical(plan))


def published(plan_id: str, plan: list[PlanEntry], omitted: int = 0) -> dict[str, object]:
    """What a preview publishes for a set: the id that binds the deploy and the tokens that name
    differences (``omitted``: entries the result left out, so not in the tokens)."""
    out: dict[str, object] = {"plan_id": plan_id, "format": FORMAT, "digests": tokens(plan)}
    if omitted:
        out["omitted"] = {"plan": omitted}
    return out


parse = plans.parse_digests


def differences(approved: str, current: list[PlanEntry], left_out: int = 0) -> list[str]:
    """Each difference between the ``approved`` tokens and the ``current`` plan: a line per object
    of the current plan whose token differs (``Object: approved A, now B: why``), then a line per
    action of approved entries that have no object in the plan now, counted. With ``left_out``
    (entries the approved result left out) an object the tokens do not hold is not named."""
    before = parse(approved)
    lines, seen = [], set()
    for entry in plans.canonical(current):
        key, code, detail = _split(_token(entry))
        seen.add(key)
        was = before.get(key)
        if was is None and not left_out:
            lines.append(plan_diff.describe(entry, None))
        elif was is not None and was != (code, detail):
            lines.append(plan_diff.describe(entry, _ACTIONS.get(was[0], "another action"), same_action=was[0] == code))
    gone: dict[str, int] = {}
    for key, (code, _detail) in before.items():
        if key not in seen:
            action = _ACTIONS.get(code, "another action")
            gone[action] = gone.get(action, 0) + 1
    lines += [f"{count} object(s) approved to {action} are not in the plan now (deleted on the cluster, or removed "
              "from the manifests, since; the published digests do not name them)" for action, count in sorted(gone.items())]
    return lines


def _token(entry: PlanEntry) -> str:
    key = _short(b"key\0" + "\0".join(map(str, plans.entry_key(entry))).encode("utf-8"), _KEY)
    rest = {k: v for k, v in entry.items() if k not in ("object", "action", "phase")}
    detail = _short(b"detail\0" + json.dumps(rest, sort_keys=True, separators=(",", ":")).encode("utf-8"), _DETAIL)
    return key + ACTION_CODES.get(str(entry.get("action")), _OTHER) + detail


def _split(token: str) -> tuple[str, str, str]:
    return token[:_KEY], token[_KEY], token[_KEY + 1:]


def _short(data: bytes, chars: int) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode("ascii")[:chars]
