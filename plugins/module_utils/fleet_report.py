# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""One audit report for a fleet: every set on every cluster, drift between clusters, stale sets.

The audit role runs ``applyset_verify`` (and, to compare members, ``applyset_info``) on each
cluster of the play; this module turns those per-cluster results into one document, which the
role writes as JSON and renders as Markdown and HTML. It only reads the results: no Ansible
import, no I/O, so every rule here is a small pure function with its own unit test.

A set is the same set on two clusters when its parent is the same (group, kind, namespace,
name); its ApplySet id is computed from exactly these, so the id is the key.
"""

from __future__ import annotations

from datetime import datetime, timezone

STATE_OK, STATE_PROBLEMS, STATE_ABSENT, STATE_UNKNOWN = "ok", "problems", "absent", "unknown"
SEVERITIES = ("error", "warning")


# ----- small helpers -------------------------------------------------------------------------


def object_key(ref: dict) -> str:
    """``Deployment.apps shop/web``: how a person names an object, and how it is compared."""
    api_version = ref.get("apiVersion") or ""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    kind = ref.get("kind") or "?"
    where = f"{ref['namespace']}/{ref.get('name')}" if ref.get("namespace") else ref.get("name") or "?"
    return f"{kind}.{group} {where}" if group else f"{kind} {where}"


def parse_time(text):
    """An RFC 3339 time as the API server writes it (``2025-06-01T12:00:00Z``), or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _sorted_unique(values) -> list:
    return sorted({v for v in values if v is not None})


# ----- one cluster ---------------------------------------------------------------------------


def cluster_entry(host: dict) -> dict:
    """What the report says about one cluster: reachable or not, its counts, its verdict.

    ``host`` has ``name`` and optionally ``context``, ``server``, ``verify`` (the registered
    result of applyset_verify; missing when the host failed before the audit ran).
    """
    verify = host.get("verify")
    entry = {"name": host["name"], "context": host.get("context"), "server": host.get("server"),
             "checked": False, "ok": False, "complete": False, "error": None, "summary": None}
    if not isinstance(verify, dict) or verify.get("skipped"):
        entry["error"] = {"message": "the host failed before the audit ran, so its cluster was not checked",
                          "fix": "see the host's earlier failure in the play output"}
    elif verify.get("failed") or "ok" not in verify:
        error = verify.get("error")
        if not isinstance(error, dict):
            error = {}
        entry["error"] = {"message": error.get("message") or verify.get("msg") or "applyset_verify failed",
                          "fix": error.get("fix")}
    else:
        entry.update(checked=True, ok=bool(verify["ok"]), complete=bool(verify.get("complete")),
                     summary=verify.get("summary"))
    return entry


def tag(items, cluster: str) -> list:
    """Copies of the entries of one cluster's list, each naming the cluster first."""
    return [dict({"cluster": cluster}, **item) for item in items or []]


def members_by_set(info) -> dict | None:
    """Set id -> member keys from a registered applyset_info result (members: true), or None."""
    if not isinstance(info, dict) or info.get("failed") or info.get("skipped") or "applysets" not in info:
        return None
    found = {}
    for entry in info["applysets"]:
        if "members" in entry:
            # Members belong to the id computed from the parent, whatever its label says.
            found[entry.get("expected_id") or entry.get("id")] = sorted(object_key(m) for m in entry["members"])
    return found


# ----- stale sets ----------------------------------------------------------------------------


def stale_reasons(applyset: dict, now: datetime, stale_days: int, members_known: bool = True) -> list:
    """Why one set on one cluster looks abandoned or unfinished; empty when it does not.

    - no members and no derived objects (only said when ``members_known``: the cluster's scan
      was complete): a parent left behind (everything pruned, or deleted by hand), which keeps
      costing every audit and can be adopted by accident;
    - a claim that has expired: the run that held it died, its hints may be wider than its
      members until the next deploy finishes the job;
    - not written for ``stale_days`` days: nothing deployed the set for that long (a run of
      applyset_apply always writes its parent; kubectl only when the hints change).
    """
    reasons = []
    if members_known and not applyset.get("member_count") and not applyset.get("derived"):
        reasons.append("it has no members: a parent left behind after everything was pruned or deleted; "
                       "remove it with applyset_apply state=absent (or kubectl delete) if the app is gone")
    claim = applyset.get("claim")
    if isinstance(claim, dict):
        try:
            expires = float(claim.get("expires"))  # type: ignore[arg-type]  # None and text: caught below
        except (TypeError, ValueError):
            expires = None
        if expires is not None and expires < now.timestamp():
            died = datetime.fromtimestamp(expires, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
            reasons.append(f"the run {claim.get('run', '?')} that claimed it did not finish (its claim expired "
                           f"{died} UTC); deploy the set again to finish the job")
    written = parse_time(applyset.get("last_written"))
    if written is not None and stale_days is not None and stale_days >= 0:
        age_days = (now - written).total_seconds() / 86400
        if age_days >= stale_days:
            reasons.append(f"its parent was last written {written.strftime('%Y-%m-%d')} ({int(age_days)} days ago), "
                           f"so nothing deployed it for at least {stale_days} days")
    return reasons


# ----- drift between clusters ----------------------------------------------------------------


def _by_cluster(instances: dict, field: str) -> dict:
    return {cluster: applyset.get(field) for cluster, applyset in instances.items()}


def _differing_values(instances: dict, field: str, aspect: str, label: str) -> dict | None:
    values = _by_cluster(instances, field)
    shown = {cluster: (", ".join(v) if isinstance(v, list) else v) for cluster, v in values.items()}
    if len({repr(v) for v in values.values()}) <= 1:
        return None
    return {"aspect": aspect, "summary": f"{label} differ", "by_cluster": shown}


def member_drift(members: dict) -> dict | None:
    """Members present on some clusters only; ``members`` maps cluster -> member keys."""
    everywhere = set.intersection(*(set(keys) for keys in members.values()))
    seen = sorted(set().union(*(set(keys) for keys in members.values())) - everywhere)
    if not seen:
        return None
    clusters = sorted(members)
    objects = []
    for key in seen:
        present = [c for c in clusters if key in members[c]]
        objects.append({"object": key, "on": present, "missing_on": [c for c in clusters if c not in present]})
    return {"aspect": "members", "summary": f"{len(objects)} member(s) are not on every cluster",
            "objects": objects}


def set_drift(present: dict, absent: list, members: dict) -> list:
    """What differs for one set between the clusters that were checked.

    ``present``: cluster -> the set's verify entry there; ``absent``: checked clusters without
    it; ``members``: cluster -> member keys, for the clusters whose members were listed.
    """
    differences = []
    if absent and present:
        differences.append({"aspect": "presence", "summary": f"missing on {', '.join(sorted(absent))}",
                            "by_cluster": dict({c: "present" for c in present}, **{c: "absent" for c in absent})})
    for field, aspect, label in (("tooling", "tooling", "managing tools"),
                                 ("group_kinds", "group_kinds", "recorded kinds"),
                                 ("namespaces", "namespaces", "recorded namespaces")):
        difference = _differing_values(present, field, aspect, label)
        if difference is not None:
            differences.append(difference)
    if len(members) > 1:
        difference = member_drift(members)
        if difference is not None:
            differences.append(difference)
    elif len(present) > 1:  # members were not listed: the counts still tell something
        difference = _differing_values(present, "member_count", "member_count", "member counts")
        if difference is not None:
            differences.append(difference)
    return differences


# ----- the whole fleet -----------------------------------------------------------------------


def _set_label(applyset: dict) -> str:
    parent = applyset.get("parent") or {}
    return object_key(parent)


def _cell(cluster: dict, applyset: dict | None, problems: list, stale: list, drifted: bool) -> dict:
    """One set on one cluster, as the report's matrix shows it; every cell has the same keys."""
    cell = {"state": STATE_UNKNOWN, "members": None, "derived": None, "errors": None, "warnings": None,
            "stale": False, "drift": False, "tooling": None}
    if not cluster["checked"] or (applyset is None and not cluster["complete"]):
        return cell
    if applyset is None:
        return dict(cell, state=STATE_ABSENT, drift=drifted)
    return dict(cell, state=STATE_OK if applyset.get("ok") else STATE_PROBLEMS,
                members=applyset.get("member_count", 0), derived=len(applyset.get("derived") or []),
                errors=sum(p["severity"] == "error" and not p.get("fixed") for p in problems),
                warnings=sum(p["severity"] == "warning" for p in problems),
                stale=bool(stale), drift=drifted, tooling=applyset.get("tooling"))


def build_report(hosts: list, *, now: str | None = None, stale_days: int = 30, scope: dict | None = None) -> dict:
    """The fleet report from every host's results.

    :param hosts: one dict per cluster, in play order: ``name`` (the inventory host), and
        optionally ``context``, ``server``, ``verify`` (registered applyset_verify result) and
        ``info`` (registered applyset_info result with members, to compare members).
    :param now: the report's time, RFC 3339 (default: the current time); ages are counted to it.
    :param stale_days: a set whose parent was not written for this many days is stale
        (negative: never by age).
    :param scope: what was audited (parent, namespace, fix), copied into the report.
    :returns: a JSON-ready dict: ``ok``, ``complete``, ``summary``, ``clusters``, ``sets`` (one per
        distinct set, with a cell per cluster), ``drift``, ``stale``, and the per-cluster lists
        ``applysets``, ``problems``, ``fixes``, ``unlisted``, each entry naming its ``cluster``.
    """
    moment = parse_time(now) or datetime.now(timezone.utc)
    clusters = [cluster_entry(host) for host in hosts]
    applysets, problems, fixes, unlisted, stale = [], [], [], [], []
    instances: dict = {}  # set id -> cluster -> verify entry
    members: dict = {}  # set id -> cluster -> member keys
    for host, cluster in zip(hosts, clusters):
        if not cluster["checked"]:
            continue
        verify = host["verify"]
        name = cluster["name"]
        listed = members_by_set(host.get("info"))
        applysets += tag(verify.get("applysets"), name)
        problems += tag(verify.get("problems"), name)
        fixes += tag(verify.get("fixes"), name)
        unlisted += tag(verify.get("unlisted"), name)
        for applyset in verify.get("applysets") or []:
            set_id = applyset.get("expected_id") or applyset.get("id")
            instances.setdefault(set_id, {})[name] = applyset
            if listed is not None and set_id in listed:
                members.setdefault(set_id, {})[name] = listed[set_id]
            reasons = stale_reasons(applyset, moment, stale_days, members_known=cluster["complete"])
            if reasons:
                stale.append({"cluster": name, "set": _set_label(applyset), "id": set_id,
                              "parent": applyset.get("parent"), "reasons": reasons})

    # A set missing from a cluster whose scan was incomplete may just not have been listable there.
    complete = [c["name"] for c in clusters if c["checked"] and c["complete"]]
    drift, sets = [], []
    for set_id, present in instances.items():
        first = next(iter(present.values()))
        absent = [c for c in complete if c not in present]
        differences = set_drift(present, absent, members.get(set_id, {}))
        if differences:
            drift.append({"set": _set_label(first), "id": set_id, "parent": first.get("parent"),
                          "clusters": sorted(present), "differences": differences})
        cells = {}
        for cluster in clusters:
            own = [p for p in problems if p["cluster"] == cluster["name"] and p.get("id") == set_id]
            own_stale = [s for s in stale if s["cluster"] == cluster["name"] and s["id"] == set_id]
            cells[cluster["name"]] = _cell(cluster, present.get(cluster["name"]), own, own_stale, bool(differences))
        parent = first.get("parent") or {}
        sets.append({"set": _set_label(first), "id": set_id, "parent": parent, "drift": bool(differences),
                     "cells": cells,
                     "sort_key": [parent.get("namespace") or "", parent.get("kind") or "", parent.get("name") or ""]})
    sets.sort(key=lambda s: s["sort_key"])
    drift.sort(key=lambda d: [(d["parent"] or {}).get(k) or "" for k in ("namespace", "kind", "name")])
    for entry in sets:
        del entry["sort_key"]

    unchecked = [c for c in clusters if not c["checked"]]
    return {
        "generated_at": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "scope": scope or {},
        "ok": not unchecked and all(c["ok"] for c in clusters),
        "complete": not unchecked and all(c["complete"] for c in clusters),
        "summary": summarise(clusters, applysets, problems, sets, drift, stale),
        "clusters": clusters,
        "sets": sets,
        "drift": drift,
        "stale": stale,
        "applysets": applysets,
        "problems": problems,
        "fixes": fixes,
        "unlisted": unlisted,
    }


def summarise(clusters, applysets, problems, sets, drift, stale) -> dict:
    """The counts a person reads first."""
    return {
        "clusters": len(clusters),
        "clusters_checked": sum(c["checked"] for c in clusters),
        "clusters_failed": sum(not c["checked"] for c in clusters),
        "clusters_ok": sum(c["ok"] for c in clusters),
        "sets": len(sets),
        "applysets": len(applysets),
        "members": sum(a.get("member_count", 0) for a in applysets),
        "derived": sum(len(a.get("derived") or []) for a in applysets),
        "errors": sum(p["severity"] == "error" for p in problems),
        "warnings": sum(p["severity"] == "warning" for p in problems),
        "fixed": sum(bool(p.get("fixed")) for p in problems),
        "remaining_errors": sum(p["severity"] == "error" and not p.get("fixed") for p in problems),
        "drift": len(drift),
        "stale": len(stale),
    }
