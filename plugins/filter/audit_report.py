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


def audit_report(hosts, hostvars, now=None, stale_days=30, scope=None, results_var="audit__cluster"):
    """Build the fleet report from ``hostvars[host][results_var]`` of each host in ``hosts``."""
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("audit_report expects the list of the play's hosts (ansible_play_hosts_all)")
    try:
        stale_days = int(stale_days)
    except (TypeError, ValueError):
        raise AnsibleFilterError("audit_report: stale_days must be a whole number of days, got %r" % (stale_days,))
    collected = []
    for host in hosts:
        results = hostvars[host].get(results_var) if host in hostvars else None
        entry = _plain(results) if isinstance(results, dict) else {}
        entry["name"] = str(host)
        collected.append(entry)
    return build_report(collected, now=now, stale_days=stale_days, scope=_plain(scope or {}))


class FilterModule(object):
    def filters(self):
        return {"audit_report": audit_report}
