# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ``audit_report`` filter: the audit role's fleet report from every host's results.

Thin: it only picks each host's results out of ``hostvars``; the report itself is built by
``module_utils/fleet_report.py`` (see the filter's documentation in audit_report.yml).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.applyset.kubernetes.plugins.module_utils.fleet_report import build_report


def _plain(value):
    """Ansible's lazy or tagged containers as plain dicts and lists, so the report is JSON-ready."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def audit_part(hosts, hostvars, results_var="audit__cluster"):
    """Each host's results (``hostvars[host][results_var]``, named ``name``), as the report takes them:
    what one part of a fleet (an AWX job slice) publishes for ``audit_report_from_parts``."""
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("audit_part expects the list of the play's hosts (ansible_play_hosts_all)")
    collected = []
    for host in hosts:
        results = hostvars[host].get(results_var) if host in hostvars else None
        entry = _plain(results) if isinstance(results, dict) else {}
        entry["name"] = str(host)
        collected.append(entry)
    return collected


def _stale_days(stale_days):
    try:
        return int(stale_days)
    except (TypeError, ValueError):
        raise AnsibleFilterError("audit_report: stale_days must be a whole number of days, got %r" % (stale_days,))


def audit_report(hosts, hostvars, now=None, stale_days=30, scope=None, results_var="audit__cluster"):
    """Build the fleet report from ``hostvars[host][results_var]`` of each host in ``hosts``."""
    collected = audit_part(hosts, hostvars, results_var)
    return build_report(collected, now=now, stale_days=_stale_days(stale_days), scope=_plain(scope or {}))


def audit_report_from_parts(parts, now=None, stale_days=30, scope=None):
    """Build the fleet report from the parts (``audit_part``) each slice of a fleet published; a
    cluster in two parts is taken once, from the last."""
    if not isinstance(parts, (list, tuple)) or not all(isinstance(p, (list, tuple)) for p in parts):
        raise AnsibleFilterError("audit_report_from_parts expects a list of parts, each the list audit_part made")
    hosts = {}
    for part in parts:
        for entry in _plain(list(part)):
            hosts[str(entry.get("name"))] = entry
    ordered = [hosts[name] for name in sorted(hosts)]
    return build_report(ordered, now=now, stale_days=_stale_days(stale_days), scope=_plain(scope or {}))


class FilterModule(object):
    def filters(self):
        return {"audit_report": audit_report, "audit_part": audit_part, "audit_report_from_parts": audit_report_from_parts}
