# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ``manifest_drift`` filter: the audit role's drift against the manifests, from the check-mode
runs of M(applyset_apply) that each host registered (see manifest_drift.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def _who(changed_by):
    return ", ".join("%s (%s %s: %s)" % (c.get("manager"), c.get("operation"), c.get("time"),
                                         ", ".join(c.get("fields") or [])) for c in changed_by or [])


def _set_entry(cluster, preview):
    item = preview.get("item") or {}
    parent = item.get("parent")
    entry = {"cluster": cluster, "parent": parent if isinstance(parent, str) else str(parent),
             "namespace": item.get("namespace"), "checked": not preview.get("skipped"), "error": None,
             "members": [], "drifted": 0,
             # the id of the plan a real run would carry out now (applyset_apply's plan_id), to bind it to
             "plan_id": preview.get("plan_id")}
    if preview.get("failed") and not preview.get("objects"):
        entry["error"] = (preview.get("error") or {}).get("message") or preview.get("msg") or "the preview failed"
    for obj in preview.get("objects") or []:
        if not obj.get("drift"):
            continue  # pruned objects and the namespace of create_namespace have no drift
        member = {"kind": obj.get("kind"), "namespace": obj.get("namespace"), "name": obj.get("name"),
                  "action": obj.get("action"), "drift": obj["drift"], "changed_by": obj.get("changed_by") or [],
                  "who": _who(obj.get("changed_by")), "reason": obj.get("reason"),
                  "left_to_others": bool(obj.get("drift_left_to_others"))}
        entry["members"].append(member)
        # a field ignore_fields leaves to its owner (an HPA's replicas) changed by that owner: as asked
        entry["drifted"] += member["drift"] != "none" and not member["left_to_others"]
    entry["would_prune"] = ["%s %s%s" % (o.get("kind"), (o.get("namespace") + "/") if o.get("namespace") else "",
                                         o.get("name")) for o in preview.get("objects") or []
                            if o.get("action") == "pruned"]
    return entry


def manifest_drift(hosts, hostvars, results_var="audit__previews"):
    """Every set previewed on every host, with each member's drift, and the totals."""
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("manifest_drift expects the list of the play's hosts (ansible_play_hosts_all)")
    sets = []
    for host in hosts:
        registered = hostvars[host].get(results_var) if host in hostvars else None
        for preview in (registered or {}).get("results") or []:
            sets.append(_set_entry(str(host), preview))
    return {"sets": sets,
            "drifted_members": sum(s["drifted"] for s in sets),
            "drifted_sets": sum(1 for s in sets if s["drifted"] or s["would_prune"] or s["error"]),
            "failed_sets": sum(1 for s in sets if s["error"])}


class FilterModule(object):
    def filters(self):
        return {"manifest_drift": manifest_drift}
