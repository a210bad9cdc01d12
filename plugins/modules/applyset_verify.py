#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: applyset_verify
short_description: Check ApplySets against the specification and the live cluster, and repair their hints
version_added: 0.1.0
description:
  - Checks one ApplySet (KEP-3659), or every set in a namespace or the cluster, whichever tool made it, and
    returns a sorted list of problems, each with a code, a severity, the objects concerned, a message, how to fix
    it, and whether O(fix) can repair it. The codes are explained in the collection's C(docs/info-and-verify.md).
  - "Problems of the parent: C(parent_missing), C(id_missing), C(id_mismatch) (the id label does not match the
    parent: a possible impersonation), C(tooling_missing), C(hint_missing), C(legacy_hint) (only the
    C(contains-group-resources) of kubectl 1.27/1.28), C(hint_not_canonical) (hint annotations not sorted or not
    minimal), C(legacy_annotation) (C(contains-group-resources) left beside C(contains-group-kinds); an error
    when it names kinds the other does not, which this collection prunes in but kubectl 1.29 and later do not),
    C(unserved_group_kind) (a recorded kind that no CRD or APIService defines any more),
    C(unlistable_group_kind) (a recorded kind not served right now that may still hold members: never dropped)."
  - "Problems of the members: C(unrecorded_group_kind) and C(unrecorded_namespace) (members a prune can never see:
    leaks), C(stale_group_kind) and C(stale_namespace) (recorded hints without members), C(foreign_controller)
    (members controlled by an object outside the set, which a prune leaves alone), C(orphan) (objects whose
    C(part-of) id belongs to no parent). Objects that a controller makes for a member and labels like it
    (the EndpointSlices and Endpoints of a member Service) go with their owner and are no leak."
  - Leaks can only be found by looking beyond the hints, so the check scans every kind the server serves, across
    all namespaces, with one metadata-only LIST per kind selected by the C(part-of) label. A kind that cannot be
    listed (RBAC, an unavailable API) is reported in RV(unlisted), gives the problem C(incomplete_scan) and makes
    RV(complete) false; an incomplete check is never RV(ok).
  - "Namespace-scoped credentials (a tenant's ServiceAccount bound to C(admin) or C(edit) in its namespace): when a
    LIST across all namespaces is refused (403), the kind is listed in the namespaces the sets record instead (the
    parent's and C(additional-namespaces); with O(namespace) and no O(parent), that namespace too), so members are
    counted and leaks there found. What such credentials cannot see (cluster-scoped kinds, other namespaces, parent
    types) is B(reduced coverage): listed in RV(reduced_coverage), named in a warning and in the problem
    C(reduced_coverage), a warning unless O(require_complete_scan). A recorded kind the set's own scope cannot be
    listed in stays C(incomplete_scan)."
  - With O(fix), the parent's hint annotations are rewritten to match the members found. Only entries the scan
    proved empty are dropped. Nothing is ever deleted or relabelled, and the id label and tooling annotation are
    never changed. Sets managed by another tool are only repaired with O(allow_foreign).
  - By default the task fails when problems of severity C(error) remain after the repair (see O(fail_on_problems)).
author:
  - applyset.kubernetes contributors (!UNKNOWN)
requirements:
  - python >= 3.9
  - kubernetes >= 28.1.0
extends_documentation_fragment:
  - applyset.kubernetes.auth
attributes:
  async:
    support: full
    description: "Runs with C(async) and C(poll) like any module."
  check_mode:
    support: full
    description:
      - With O(fix), each repair is sent as a server-side dry run, so the server validates it and nothing changes.
        RV(fixes[].applied) and RV(problems[].fixed) then say what a real run would do.
  diff_mode:
    support: full
    description: Returns the hint annotations of each repaired parent before and after.
  platform:
    platforms: posix
    support: full
    description: Runs where the module runs (usually C(localhost)).
options:
  _protected_input:
    description:
      - Internal, set by the collection's action plugin; do not set it in a task.
      - Carries the O(kubeconfig) given as a dictionary to the module as one C(no_log) text, so that it
        appears neither in the module invocation nor in the syslog/journal line.
    type: str
  parent:
    description:
      - Check only this set. The same syntax as O(applyset.kubernetes.applyset_apply#module:parent).
      - A string in kubectl's C(--applyset) syntax, C([RESOURCE][.GROUP]/NAME). A plain C(NAME) means a Secret;
        for example C(configmaps/shop) or C(applysets.example.com/shop).
      - Or a dictionary with C(kind) (default C(Secret)), C(name), and optionally C(apiVersion) and C(namespace).
      - Without it, every set whose parent is in O(namespace) (or every set in the cluster) is checked, and
        orphans are looked for as well.
    type: raw
  namespace:
    description:
      - With O(parent), the namespace of a namespaced parent that does not set its own.
      - Without O(parent), check the sets whose parent is in this namespace, and report orphans in it.
        The scan for members still covers all namespaces, since members may live anywhere.
    type: str
  fix:
    description:
      - Rewrite the hint annotations (C(contains-group-kinds), C(additional-namespaces)) of each parent whose hints
        do not match its members, in canonical form, with server-side apply and a resourceVersion precondition.
      - Repairs the problems marked RV(problems[].fixable); the others need a person.
      - A parent whose id label is missing or wrong, or that has no tooling annotation, is never repaired.
    type: bool
    default: false
  allow_foreign:
    description:
      - Let O(fix) repair sets managed by another tool (for example kubectl), not only sets of this collection.
      - The set's tooling annotation is kept, and the parent is written as the tool's own field manager
        (C(<tool>-applyset), as kubectl names it), so the tool keeps managing the set without conflicts.
        For a set of kubectl 1.27 or 1.28 the legacy C(contains-group-resources) is replaced by
        C(contains-group-kinds), as kubectl 1.29 and later do, which kubectl 1.27 and 1.28 cannot read.
    type: bool
    default: false
  fail_on_problems:
    description:
      - Fail the task when problems of severity C(error) remain (after O(fix)), C(incomplete_scan) included.
      - With V(false) the problems are only reported; check RV(ok).
    type: bool
    default: true
  require_complete_scan:
    description:
      - Make reduced coverage an error (the problem C(reduced_coverage) of severity C(error), so RV(ok) is false
        and the task fails unless O(fail_on_problems=false)).
      - With V(false), credentials that may not list every kind across all namespaces still check the sets'
        recorded scope in full, and what they could not see is a warning.
      - Without O(parent) and O(namespace) the whole cluster is asked for, and every LIST that fails is
        C(incomplete_scan) whatever this option says.
    type: bool
    default: false
  parallelism:
    description: How many LIST requests run at once.
    type: int
    default: 8
notes:
  - A complete check needs C(list) on every kind across all namespaces, and on CustomResourceDefinitions; the
    C(view) ClusterRole does not cover Secrets and some other kinds. O(fix) needs C(patch) on the parents.
  - A tenant (C(admin) or C(edit) bound in its namespace) gets a check of its sets with reduced coverage; see
    C(docs/awx.md), "Tenants", for the RBAC each module needs.
  - The check is read-only without O(fix).
seealso:
  - module: applyset.kubernetes.applyset_info
  - module: applyset.kubernetes.applyset_apply
  - name: KEP-3659 ApplySet
    description: The specification of ApplySets.
    link: https://github.com/kubernetes/enhancements/tree/master/keps/sig-cli/3659-kubectl-apply-prune
"""

EXAMPLES = r"""
- name: Check one set
  applyset.kubernetes.applyset_verify:
    parent: shop
    namespace: shop

- name: Repair its hints (preview first with --check --diff)
  applyset.kubernetes.applyset_verify:
    parent: shop
    namespace: shop
    fix: true

- name: Nightly audit of every set in the cluster, failing on nothing, for a report
  applyset.kubernetes.applyset_verify:
    fail_on_problems: false
  register: audit

- name: Show the problems that need a person
  ansible.builtin.debug:
    msg: "{{ audit.problems | rejectattr('fixable') | map(attribute='message') | list }}"

- name: Repair a set that kubectl made, keeping kubectl as its tool
  applyset.kubernetes.applyset_verify:
    parent: configmaps/legacy
    namespace: legacy
    fix: true
    allow_foreign: true
"""

RETURN = r"""
ok:
  description:
    - True when every LIST the check needed succeeded (RV(unlisted) is empty) and no problem of severity C(error)
      remains. Reduced coverage (RV(reduced_coverage)) is a warning unless O(require_complete_scan).
  returned: always
  type: bool
complete:
  description: False when some kind or parent type could not be listed (see RV(unlisted) and RV(reduced_coverage)).
  returned: always
  type: bool
summary:
  description: Counts of sets checked, problems by severity, problems fixed, and errors remaining.
  returned: always
  type: dict
  sample: {applysets: 3, errors: 1, warnings: 2, fixed: 2, remaining_errors: 0}
problems:
  description: The problems found, sorted by set, severity and code, so runs can be compared.
  returned: always
  type: list
  elements: dict
  contains:
    code:
      description: What kind of problem it is, for example C(unrecorded_group_kind); see the module description.
      type: str
    severity:
      description: C(error) (a prune may miss or wrongly touch objects, or tools refuse the set) or C(warning).
      type: str
    message:
      description: What is wrong, naming the set and the objects.
      type: str
    fix:
      description: What to do about it.
      type: str
    fixable:
      description: Whether O(fix) can repair it (for a set of another tool, with O(allow_foreign)).
      type: bool
    fixed:
      description: Whether this run repaired it (in check mode, whether it would).
      type: bool
    id:
      description: The id of the set concerned (for C(orphan), the id that has no parent); null for C(incomplete_scan).
      type: str
    parent:
      description: apiVersion, kind, namespace and name of the set's parent; null for problems of no set.
      type: dict
    objects:
      description: The objects concerned (apiVersion, kind, namespace, name); the parent for problems of the parent.
      type: list
      elements: dict
  sample:
    - code: unrecorded_group_kind
      severity: error
      message: "Secret shop/shop: 1 member(s) of kind Service, which ... does not list, ..."
      fix: run applyset_verify with fix true to record Service, ...
      fixable: true
      fixed: false
      id: applyset-0eFHV8ySqp7XoShsGvyWFQD3s96yqwHmzc4e0HR1dsY-v1
      parent: {apiVersion: v1, kind: Secret, namespace: shop, name: shop}
      objects: [{apiVersion: v1, kind: Service, namespace: shop, name: web}]
applysets:
  description: The sets checked, as M(applyset.kubernetes.applyset_info) describes them, with RV(applysets[].ok).
  returned: always
  type: list
  elements: dict
  contains:
    parent:
      description: apiVersion, kind, namespace and name of the parent.
      type: dict
    id:
      description: The id label as found.
      type: str
    expected_id:
      description: The id computed from the parent.
      type: str
    id_matches:
      description: Whether the id label matches the parent.
      type: bool
    tooling:
      description: The tooling annotation.
      type: str
    tool:
      description: The tool name of the tooling annotation.
      type: str
    group_kinds:
      description: The recorded group-kinds (before any repair).
      type: list
      elements: str
    namespaces:
      description: The recorded namespaces, the parent's own included.
      type: list
      elements: str
    hint_annotation:
      description: The annotation the group-kinds were read from.
      type: str
    claim:
      description: The claim of a run that is changing the set, or null (see M(applyset.kubernetes.applyset_info)).
      type: dict
    last_written:
      description: When any tool last changed the parent (the newest C(managedFields) time), or null.
      type: str
    member_count:
      description:
        - Members found by the scan (any kind, any namespace), without RV(applysets[].derived).
      type: int
    derived:
      description:
        - Objects that a controller made for a member and labelled like it (the EndpointSlices and Endpoints of a
          member Service). They go with their owner, so they are not counted as members nor recorded in the hints.
      type: list
      elements: dict
      sample: [{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, namespace: shop, name: web-x7k2p}]
    ok:
      description: Whether the check was complete and no error remains for this set.
      type: bool
fixes:
  description: One entry per parent whose hints do not match its members, whether O(fix) was set or not.
  returned: always
  type: list
  elements: dict
  contains:
    parent:
      description: The parent.
      type: dict
    id:
      description: The set's id.
      type: str
    before:
      description: The hint annotations before.
      type: dict
    after:
      description: The hint annotations the members call for.
      type: dict
    applied:
      description: Whether they were written (in check mode, validated by a server-side dry run).
      type: bool
    refused:
      description:
        - Why the repair was not done. A set of another tool without O(allow_foreign), or a set that a run of
          M(applyset.kubernetes.applyset_apply) is changing right now (that run rewrites the hints itself when it
          ends; check again afterwards).
      returned: when refused
      type: str
    error:
      description: Why writing failed.
      returned: when writing failed
      type: dict
  sample:
    - parent: {apiVersion: v1, kind: Secret, namespace: shop, name: shop}
      id: applyset-0eFHV8ySqp7XoShsGvyWFQD3s96yqwHmzc4e0HR1dsY-v1
      before:
        applyset.kubernetes.io/contains-group-kinds: ConfigMap
        applyset.kubernetes.io/additional-namespaces: ""
      after:
        applyset.kubernetes.io/contains-group-kinds: ConfigMap,Service
        applyset.kubernetes.io/additional-namespaces: ""
      applied: true
unlisted:
  description:
    - The LISTs that failed and that the check needed, with the reason; a null namespace means all namespaces.
    - A LIST across all namespaces that the credentials may not make is here only when nothing narrower was
      asked for (no O(parent), no O(namespace)); otherwise it is in RV(reduced_coverage).
  returned: always
  type: list
  elements: dict
reduced_coverage:
  description:
    - "What the credentials could not see. C(kinds) lists each kind they may not list across all namespaces
      (C(namespace) null) or in one of C(namespaces), with the server's reason; a namespaced kind refused across
      all namespaces was listed in C(namespaces) instead, a cluster-scoped one not at all."
    - Empty lists when the credentials could list everything.
  returned: always
  type: dict
  sample:
    kinds:
      - {group_kind: ClusterRole.rbac.authorization.k8s.io, namespace: null, reason: "HTTP 403: ... is forbidden: ..."}
    namespaces: [shop]
diff:
  description: Before/after of the hint annotations of each repaired parent (empty when nothing was repaired).
  returned: when diff mode is on
  type: list
  elements: dict
error:
  description: On failure, why the task failed (remaining problems or a failed repair) and how to fix it.
  returned: failed
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

# First: the collection's module_utils below are then compiled once per host, not on every run.
from ansible_collections.applyset.kubernetes.plugins.module_utils import bytecode_cache  # noqa: E402

bytecode_cache.install()

from ansible_collections.applyset.kubernetes.plugins.module_utils.ansible_support import (  # noqa: E402
    check_names, connect, fail_from_error, module_argument_spec, start, warn_all,
)

try:
    import yaml

    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.verify import fsck
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import redact
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.errors import ApplySetError
    IMPORT_ERROR = None
except ImportError as err:  # PyYAML or kubernetes missing
    IMPORT_ERROR = err


def argument_spec():
    return module_argument_spec(
        parent=dict(type="raw"),
        namespace=dict(type="str"),
        fix=dict(type="bool", default=False),
        allow_foreign=dict(type="bool", default=False),
        fail_on_problems=dict(type="bool", default=True),
        require_complete_scan=dict(type="bool", default=False),
        parallelism=dict(type="int", default=8),
    )


def diff_entries(report):
    entries = []
    for planned in report.fixes:
        if not planned.applied:
            continue
        header = planned.set_info.display
        entries.append({
            "before_header": header, "after_header": header,
            "before": yaml.safe_dump(planned.before, default_flow_style=False, sort_keys=True),
            "after": yaml.safe_dump(planned.after, default_flow_style=False, sort_keys=True),
        })
    return entries


def failure(report):
    """The error that fails the task: a failed repair, or the errors that remain."""
    if report.fix_errors:
        first = report.fix_errors[0]
        more = f" (and {len(report.fix_errors) - 1} more repairs failed)" if len(report.fix_errors) > 1 else ""
        return ApplySetError(first.message + more, obj=first.obj, fix=first.fix)
    remaining = report.remaining_errors
    codes = sorted({p.code for p in remaining})
    return ApplySetError(
        f"{len(remaining)} ApplySet problem(s) of severity error remain ({', '.join(codes)}): "
        + "; ".join(p.message for p in remaining[:3]) + (" ..." if len(remaining) > 3 else ""),
        fix="see problems[].fix for each; fix: true repairs those marked fixable; "
            "fail_on_problems: false only reports them",
    )


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    _definition, kubeconfig = start(module, IMPORT_ERROR)
    try:
        check_names(module)  # before any request
        client = connect(module, kubeconfig)
        report = fsck.verify(client, parent_spec=params["parent"], namespace=params["namespace"],
                             fix=params["fix"], allow_foreign=params["allow_foreign"], dry_run=module.check_mode,
                             require_complete=params["require_complete_scan"])
    except ApplySetError as err:
        fail_from_error(module, err, changed=False)
    warn_all(module, report.warnings)
    result = report.to_dict()
    if module._diff:
        result["diff"] = diff_entries(report)
    result = redact.hide_secret_data(result)  # parents' hints only; made sure of by structure
    if report.fix_errors or (params["fail_on_problems"] and report.remaining_errors):
        fail_from_error(module, failure(report), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
