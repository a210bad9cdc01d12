# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""A preview's report for the people who approve it: what each set's deploy would change.

The deploy role, in check mode with diff mode on, registers one ``applyset_apply`` result per set
(per cluster in a fleet). This module turns those results into one document (``build_preview``),
which the role writes as JSON and renders as Markdown for a pull request's comment
(``render_markdown``) and as a standalone web page (``render_html``): per set its plan id (what the
deploy is bound to) and its changes grouped by action (create, configure, recreate, prune, keep,
hooks, take-over, failed), each with its diff.

The diffs are the module's (the server's dry-run answers), with the collection's bookkeeping hidden
(its annotations, which the module already leaves out, and the part-of label it adds to every
member) and every Secret's values masked again here (``hide_secret_data``), whatever the result
holds. The report is capped (``Limits``): what it leaves out is counted, never dropped silently.
No Ansible import, no I/O.
"""

from __future__ import annotations

import difflib
import html
from dataclasses import dataclass
from datetime import datetime, timezone

try:
    import yaml
except ImportError:  # a requirement of the collection; without it diffs are shown as the module gave them
    yaml = None

from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs.redact import hide_secret_data
from ansible_collections.applyset.kubernetes.plugins.module_utils.fleet_report import object_key

PART_OF = "applyset.kubernetes.io/part-of"
BOOKKEEPING_PREFIX = "applyset.kubernetes.ansible/"  # the collection's own annotations (applied digest, ...)

# An object's action in the result -> the group the report shows it in, in this order.
GROUPS = {"created": "create", "configured": "configure", "replaced": "recreate", "pruned": "prune",
          "kept": "keep", "failed": "failed"}
GROUP_ORDER = ("create", "configure", "recreate", "prune", "keep", "hooks", "take-over", "failed")


@dataclass(frozen=True)
class Limits:
    """How much the report shows: changes listed, lines of one diff, lines of every diff, and the
    characters of the Markdown (a GitHub comment holds 65,536)."""

    changes: int = 500
    diff_lines: int = 120
    all_diff_lines: int = 4_000
    markdown_chars: int = 60_000


# ----- the document --------------------------------------------------------------------------


def build_preview(sets: list, *, now: str | None = None, limits: Limits = Limits()) -> dict:
    """The preview report from each set's registered check-mode result.

    Args:
        sets: one dict per set, in play order: ``key`` (``host/namespace/parent``, as the deploy
            role's plan key), ``cluster`` (the inventory host) and ``result`` (the registered
            ``applyset_apply`` result; a failed one is shown with its error).
        now: the report's time, RFC 3339 (default: the current time).
        limits: the caps (``Limits``).

    Returns:
        A JSON-ready dict: ``generated_at``, ``ok`` (no set failed), ``summary`` (counts, and
        ``left_out``: changes and diff lines the caps left out), and ``sets``, each with ``key``,
        ``cluster``, ``plan_id``, ``summary``, ``error``, ``omitted`` (what the module's result
        itself left out, see ``result_detail``) and ``groups``: ``[{action, changes: [{object,
        reason, diff, diff_lines_left_out}]}]``.
    """
    budget = {"changes": limits.changes, "lines": limits.all_diff_lines}
    left_out = {"changes": 0, "diff_lines": 0}
    shown = [_set_entry(entry, budget, left_out, limits) for entry in sets]
    return _document(shown, left_out, now)


def merge_previews(parts: list, *, now: str | None = None, limits: Limits = Limits()) -> dict:
    """One report from the reports of a fleet's parts (each slice of an AWX sliced job builds its own).

    Args:
        parts: reports as ``build_preview`` returns them; a set in two parts (same ``key``) is taken
            once, from the last.
        now: the report's time, RFC 3339 (default: the current time).
        limits: the caps, applied again across the whole fleet.

    Returns:
        A report as ``build_preview``'s, its sets ordered by key; what a part's caps left out is
        still counted, with what the fleet's caps leave out besides.
    """
    by_key = {entry.get("key"): entry for part in parts for entry in (part or {}).get("sets") or []}
    budget = {"changes": limits.changes, "lines": limits.all_diff_lines}
    left_out = {"changes": 0, "diff_lines": 0}
    shown = [dict(by_key[key], groups=[_regrouped(group, budget, left_out, limits)
                                       for group in by_key[key].get("groups") or []])
             for key in sorted(by_key, key=str)]
    return _document(shown, left_out, now)


def _regrouped(group: dict, budget: dict, left_out: dict, limits: Limits) -> dict:
    """A group of a part's report, capped again: its diffs back to lines for ``_capped``."""
    changes = [dict(change, diff=change["diff"].splitlines() if change.get("diff") else None)
               for change in group.get("changes") or []]
    return _group(group["action"], changes, budget, left_out, limits, earlier=group.get("left_out") or 0)


def _document(shown: list, left_out: dict, now: str | None) -> dict:
    by_action = {action: sum(_size(g) for s in shown for g in s["groups"]
                             if g["action"] == action) for action in GROUP_ORDER}
    return {
        "generated_at": now or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ok": not any(s["error"] for s in shown),
        "summary": {"sets": len(shown), "sets_changing": sum(bool(s["groups"]) for s in shown),
                    "changes": sum(by_action.values()), "by_action": {a: n for a, n in by_action.items() if n},
                    "left_out": left_out},
        "sets": shown,
    }


def _set_entry(entry: dict, budget: dict, left_out: dict, limits: Limits) -> dict:
    result = entry.get("result") or {}
    error = None
    if result.get("failed"):
        error = (result.get("error") or {}).get("message") or result.get("msg") or "the preview failed"
    diffs = _diffs_by_object(result.get("diff") or [])
    groups: dict = {}
    for obj in result.get("objects") or []:
        action = GROUPS.get(obj.get("action"))
        if action:
            ref = object_key(obj)
            groups.setdefault(action, []).append({"object": ref, "reason": obj.get("reason"),
                                                  "diff": diffs.get(_header(obj))})
    for hook in result.get("hooks") or []:
        groups.setdefault("hooks", []).append({"object": f"{object_key(hook)} ({hook.get('phase')})",
                                               "reason": hook.get("action"), "diff": None})
    for adopted in _taken_over(result):
        groups.setdefault("take-over", []).append({"object": adopted, "reason": None, "diff": None})
    return {"key": entry.get("key"), "cluster": entry.get("cluster"), "plan_id": result.get("plan_id"),
            "summary": result.get("summary"), "error": error, "omitted": result.get("omitted") or {},
            "groups": [_group(action, groups[action], budget, left_out, limits)
                       for action in GROUP_ORDER if action in groups]}


def _group(action: str, changes: list, budget: dict, left_out: dict, limits: Limits, earlier: int = 0) -> dict:
    """One group of a set, its changes listed while the report's budget lasts, the rest counted
    (with ``earlier``, and each change's ``diff_lines_left_out``: what a part's report left out)."""
    kept = changes[:max(budget["changes"], 0)]
    budget["changes"] -= len(kept)
    dropped = len(changes) - len(kept) + earlier
    left_out["changes"] += dropped
    for change in kept:
        cut_before = change.get("diff_lines_left_out") or 0
        change["diff"], cut = _capped(change["diff"], budget, left_out, limits)
        change["diff_lines_left_out"] = cut_before + cut
        left_out["diff_lines"] += cut_before
    return {"action": action, "changes": kept, "left_out": dropped}


def _capped(diff: list | None, budget: dict, left_out: dict, limits: Limits) -> tuple:
    if not diff:
        return None, 0
    room = max(min(limits.diff_lines, budget["lines"]), 0)
    budget["lines"] -= min(len(diff), room)
    cut = max(len(diff) - room, 0)
    left_out["diff_lines"] += cut
    return "\n".join(diff[:room]), cut


def _taken_over(result: dict) -> list:
    """What the run takes over: ``adopt`` plan entries and a Helm take-over's adopted objects."""
    found = [e["object"] for e in result.get("plan") or [] if e.get("action") == "adopt"]
    helm = result.get("helm_take_over") or {}
    found += [f"{ref} (Helm release {helm.get('release')})" for ref in helm.get("adopted") or []]
    return found


def _header(obj: dict) -> str:
    """How the module's diff names an object: ``Kind namespace/name`` (``Kind name`` when cluster-scoped)."""
    where = f"{obj['namespace']}/{obj.get('name')}" if obj.get("namespace") else obj.get("name")
    return f"{obj.get('kind')} {where}"


# ----- diffs ---------------------------------------------------------------------------------


def _diffs_by_object(entries: list) -> dict:
    """The module's diff entries (``before``/``after`` YAML and headers) as unified diff lines, by header."""
    found = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        header = entry.get("after_header") if entry.get("after_header") != "(absent)" else entry.get("before_header")
        before, after = _clean(entry.get("before")), _clean(entry.get("after"))
        found[header] = list(difflib.unified_diff(before.splitlines(), after.splitlines(), "before", "after",
                                                  lineterm=""))[2:]  # the ---/+++ lines say nothing here
    return found


def _clean(text: object) -> str:
    """A diff side without the collection's bookkeeping and with every Secret value masked."""
    if not isinstance(text, str) or not text.strip():
        return ""
    if yaml is None:
        return text
    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if not isinstance(obj, dict):
        return text
    meta: dict = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    for field, prefix in (("labels", PART_OF), ("annotations", BOOKKEEPING_PREFIX)):
        values = meta.pop(field, None)
        kept = {k: v for k, v in values.items() if not str(k).startswith(prefix)} if isinstance(values, dict) else values
        if kept:
            meta[field] = kept
    return yaml.safe_dump(hide_secret_data(obj), default_flow_style=False, sort_keys=True)


# ----- Markdown ------------------------------------------------------------------------------


def render_markdown(report: dict, limits: Limits = Limits()) -> str:
    """The report as Markdown for a pull request's comment, within ``limits.markdown_chars``."""
    summary = report["summary"]
    head = [f"### ApplySet preview: {summary['changes']} change(s) in {summary['sets_changing']} of "
            f"{summary['sets']} set(s)" + ("" if report["ok"] else " - a preview FAILED"), "",
            "| set | plan id | " + " | ".join(GROUP_ORDER) + " |", "|---|---|" + "---:|" * len(GROUP_ORDER)]
    for entry in report["sets"]:
        counts = {g["action"]: _size(g) for g in entry["groups"]}
        head.append(f"| `{entry['key']}` | `{entry['plan_id'] or '-'}` | "
                    + " | ".join(str(counts.get(a, "")) for a in GROUP_ORDER) + " |")
    body, left = [], 0
    used = len("\n".join(head)) + 400  # and the closing lines
    for entry in report["sets"]:
        for section in _markdown_set(entry):
            if used + len(section) > limits.markdown_chars:
                left += 1
                continue
            body.append(section)
            used += len(section) + 1
    tail = _left_out_line(report, left)
    return "\n".join(head + [""] + body + ([tail] if tail else [])) + "\n"


def _markdown_set(entry: dict) -> list:
    """The sections of one set: its heading, then one per change (each is kept or left out whole)."""
    title = f"#### `{entry['key']}` - plan `{entry['plan_id'] or 'none'}`"
    if entry["error"]:
        title += f"\n\n**The preview failed:** {entry['error']}"
    if entry["omitted"]:
        title += f"\n\nThe module's result left out {_counts(entry['omitted'])} (result_detail)."
    sections = [title]
    for group in entry["groups"]:
        sections.append(f"\n**{group['action']}** ({_size(group)})\n")
        for change in group["changes"]:
            line = f"- `{change['object']}`" + (f": {change['reason']}" if change["reason"] else "")
            if change["diff"]:
                fence = "````" if "```" in change["diff"] else "```"
                line += f"\n  <details><summary>diff</summary>\n\n{fence}diff\n{_shown_diff(change)}\n{fence}\n\n  </details>"
            sections.append(line)
    return sections


def _left_out_line(report: dict, sections: int) -> str:
    left = report["summary"]["left_out"]
    parts = []
    if left["changes"]:
        parts.append(f"{left['changes']} change(s) not listed")
    if left["diff_lines"]:
        parts.append(f"{left['diff_lines']} diff line(s) not shown")
    if sections:
        parts.append(f"{sections} section(s) past the comment's size")
    return f"_Left out of this report: {', '.join(parts)}; the HTML and JSON reports hold what the caps allow._" if parts else ""


def _size(group: dict) -> int:
    """How many changes a group has, those the caps left out included."""
    return len(group["changes"]) + group["left_out"]


def _shown_diff(change: dict) -> str:
    """A change's diff as shown, with a last line counting what the caps cut."""
    cut = change["diff_lines_left_out"]
    return change["diff"] + (f"\n... {cut} more line(s)" if cut else "")


def _counts(omitted: dict) -> str:
    return ", ".join(f"{n} {name}" for name, n in sorted(omitted.items()))


# ----- HTML ----------------------------------------------------------------------------------


_STYLE = """body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1f2328}
table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:4px 8px}th{background:#f6f8fa}
.ok{color:#1a7f37}.failed{color:#cf222e;font-weight:600}h2{margin-top:1.6em}code{font-size:13px}
pre{background:#f6f8fa;padding:8px;overflow:auto}.add{background:#dafbe1;color:#1a7f37;display:block}
.del{background:#ffebe9;color:#cf222e;display:block}.note{color:#9a6700}"""


def render_html(report: dict) -> str:
    """The report as one standalone page (no script, no outside resource)."""
    summary = report["summary"]
    verdict = ('<p class="ok">Every set was previewed.</p>' if report["ok"]
               else '<p class="failed">A preview failed: see the set below.</p>')
    rows = "".join(
        f"<tr><td><code>{_e(s['key'])}</code></td><td><code>{_e(s['plan_id'] or '-')}</code></td>"
        + "".join(f"<td>{_count(s, a)}</td>" for a in GROUP_ORDER) + "</tr>" for s in report["sets"])
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>ApplySet preview</title>"
             f"<style>{_STYLE}</style></head><body><h1>ApplySet preview</h1>",
             f"<p>{summary['changes']} change(s) in {summary['sets_changing']} of {summary['sets']} set(s), "
             f"{_e(report['generated_at'])}. The deploy is bound to each set's plan id.</p>", verdict,
             "<table><tr><th>set</th><th>plan id</th>" + "".join(f"<th>{a}</th>" for a in GROUP_ORDER)
             + f"</tr>{rows}</table>"]
    parts += [_html_set(entry) for entry in report["sets"]]
    note = _left_out_line(report, 0)
    if note:
        parts.append(f'<p class="note">{_e(note.strip("_"))}</p>')
    return "\n".join(parts) + "\n</body></html>\n"


def _html_set(entry: dict) -> str:
    out = [f"<h2><code>{_e(entry['key'])}</code></h2><p>plan <code>{_e(entry['plan_id'] or 'none')}</code></p>"]
    if entry["error"]:
        out.append(f'<p class="failed">The preview failed: {_e(entry["error"])}</p>')
    if entry["omitted"]:
        out.append(f'<p class="note">The module\'s result left out {_e(_counts(entry["omitted"]))} (result_detail).</p>')
    for group in entry["groups"]:
        out.append(f"<h3>{_e(group['action'])} ({_size(group)})</h3><ul>")
        for change in group["changes"]:
            item = f"<li><code>{_e(change['object'])}</code>" + (f": {_e(change['reason'])}" if change["reason"] else "")
            if change["diff"]:
                item += f"<details open><summary>diff</summary><pre>{_diff_html(_shown_diff(change))}</pre></details>"
            out.append(item + "</li>")
        if group["left_out"]:
            out.append(f'<li class="note">... {group["left_out"]} more, not listed</li>')
        out.append("</ul>")
    return "\n".join(out)


def _diff_html(text: str) -> str:
    lines = []
    for line in text.splitlines():
        kind = "add" if line.startswith("+") else "del" if line.startswith("-") else None
        lines.append(f'<span class="{kind}">{_e(line)}</span>' if kind else _e(line) + "\n")
    return "".join(lines)


def _count(entry: dict, action: str) -> str:
    counts = {g["action"]: _size(g) for g in entry["groups"]}
    return str(counts.get(action, ""))


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
