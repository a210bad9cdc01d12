# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ``preview_report``, ``preview_markdown`` and ``preview_html`` filters: the deploy role's
preview report from each set's check-mode result, and its two renderings.

Thin: the report is built and rendered by ``module_utils/preview_report.py`` (see the filters'
documentation in preview_report.yml).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.applyset.kubernetes.plugins.module_utils import preview_report as report
from ansible_collections.applyset.kubernetes.plugins.filter.audit_report import _plain


def preview_report(sets, now=None, changes=500, diff_lines=120, all_diff_lines=4000):
    """Build the preview report from ``sets``: ``[{key, cluster, result}]``."""
    if not isinstance(sets, (list, tuple)):
        raise AnsibleFilterError("preview_report expects a list of {key, cluster, result}, one per set")
    limits = _limits("preview_report", changes, diff_lines, all_diff_lines)
    return report.build_preview(_plain(list(sets)), now=now, limits=limits)


def preview_report_from_parts(parts, now=None, changes=500, diff_lines=120, all_diff_lines=4000):
    """One preview report from the reports each slice of a fleet preview published (the deploy role's
    ``deploy_publish_part``)."""
    if not isinstance(parts, (list, tuple)) or not all(isinstance(p, dict) and "sets" in p for p in parts):
        raise AnsibleFilterError("preview_report_from_parts expects a list of parts, each a report preview_report built")
    limits = _limits("preview_report_from_parts", changes, diff_lines, all_diff_lines)
    return report.merge_previews(_plain(list(parts)), now=now, limits=limits)


def _limits(name, changes, diff_lines, all_diff_lines):
    try:
        return report.Limits(changes=int(changes), diff_lines=int(diff_lines), all_diff_lines=int(all_diff_lines))
    except (TypeError, ValueError):
        raise AnsibleFilterError("%s: changes, diff_lines and all_diff_lines are whole numbers" % name)


def preview_markdown(built):
    return report.render_markdown(_plain(built))


def preview_html(built):
    return report.render_html(_plain(built))


class FilterModule(object):
    def filters(self):
        return {"preview_report": preview_report, "preview_report_from_parts": preview_report_from_parts,
                "preview_markdown": preview_markdown, "preview_html": preview_html}
