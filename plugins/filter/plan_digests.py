# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ``plan_digests`` filter: what a preview publishes for a set in a fleet's artifacts, the plan
id and the plan's entries as digests (``module_utils/applyset/rules/plan_digests.py``), instead of
the whole plan (see the filter's documentation in plan_digests.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.rules import plan_digests


def plan_digests_filter(result):
    """``{plan_id, format, digests[, omitted]}`` from a registered check-mode applyset_apply result."""
    if not isinstance(result, dict) or not isinstance(result.get("plan_id"), str):
        raise AnsibleFilterError("plan_digests expects a registered applyset_apply result with its plan_id")
    plan = [dict(entry) for entry in result.get("plan") or []]
    omitted = (result.get("omitted") or {}).get("plan") or 0
    return plan_digests.published(str(result["plan_id"]), plan, int(omitted))


class FilterModule(object):
    def filters(self):
        return {"plan_digests": plan_digests_filter}
