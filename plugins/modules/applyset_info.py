#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: applyset_info
short_description: List ApplySets made by any tool, and the members of a set
version_added: 0.1.0
description:
  - Lists the ApplySets (KEP-3659) in one namespace or in the whole cluster, whichever tool made them
    (kubectl, this collection, others), or shows one set with its members.
  - Sets are found through their parents, every kind the specification allows. Secrets and ConfigMaps
    labelled C(applyset.kubernetes.io/id), and every custom resource of a CustomResourceDefinition labelled
    C(applyset.kubernetes.io/is-parent-type).
  - For each set it reports the parent, the id label and whether it matches the parent, the tooling
    annotation, and the recorded group-kinds and namespaces. Sets made by kubectl 1.27 and 1.28, which record
    C(contains-group-resources) instead of C(contains-group-kinds), are mapped to kinds through discovery.
    A parent is read as M(applyset.kubernetes.applyset_apply) reads it before a prune, so when both annotations
    are there, the kinds of both are recorded.
  - Members are the objects labelled C(applyset.kubernetes.io/part-of) with the set's id in the recorded
    group-kinds and namespaces, exactly what a prune would look at. Use
    M(applyset.kubernetes.applyset_verify) to find members outside the recorded hints.
  - Only reads. Every LIST is metadata-only (unless whole objects are asked for) and paginated, and the
    members of many sets are fetched together, one LIST per kind and namespace.
  - Results are sorted, so two runs can be compared.
author:
  - applyset.kubernetes contributors (!UNKNOWN)
requirements:
  - python >= 3.9
  - kubernetes >= 28.1.0
  - jmespath (only for O(query))
extends_documentation_fragment:
  - applyset.kubernetes.auth
attributes:
  async:
    support: full
    description: "Runs with C(async) and C(poll) like any module."
  check_mode:
    support: full
    description: The module only reads, so check mode changes nothing about what it does.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to diff.
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
      - Show only this set. The same syntax as O(applyset.kubernetes.applyset_apply#module:parent).
      - A string in kubectl's C(--applyset) syntax, C([RESOURCE][.GROUP]/NAME). A plain C(NAME) means a Secret;
        for example C(configmaps/shop) or C(applysets.example.com/shop).
      - Or a dictionary with C(kind) (default C(Secret)), C(name), and optionally C(apiVersion) and C(namespace).
      - When the parent does not exist, RV(applysets) is empty.
      - Without it, every set in O(namespace) (or in the cluster) is listed.
    type: raw
  namespace:
    description:
      - With O(parent), the namespace of a namespaced parent that does not set its own.
      - Without O(parent), list only the sets whose parent is in this namespace. Cluster-scoped custom resource
        parents are then left out. Without either, the sets of the whole cluster are listed.
    type: str
  members:
    description:
      - Add each set's members (RV(applysets[].members)).
      - Defaults to V(true) when O(parent) is given and to V(false) when sets are listed.
    type: bool
  member_count:
    description: Add each set's number of members (RV(applysets[].member_count)), without the list.
    type: bool
    default: false
  full_objects:
    description:
      - Add each member's whole object (RV(applysets[].members[].object)); implies O(members).
      - The values of Secrets are replaced by C(<hidden>); the keys stay visible.
    type: bool
    default: false
  readiness:
    description:
      - Add whether each member is ready and why (RV(applysets[].members[].ready) and
        RV(applysets[].members[].reason)), by the same rules as the readiness waiting of the collection
        (kstatus); implies O(members).
      - Whole objects are read to judge their status.
    type: bool
    default: false
  wait_rules:
    description:
      - With O(readiness), the readiness rules to judge members by, as
        O(applyset.kubernetes.applyset_apply#module:wait_rules) takes them, so that info judges as the apply waits.
      - Each member's ready-when / failed-when annotations and the bundled library apply in any case.
    type: dict
    default: {}
    suboptions:
      fail_closed:
        description: A custom resource without any status counts as not ready.
        type: bool
        default: false
      overrides:
        description: Per-kind JMESPath readiness expressions, C(Kind) or C(Kind.group) to an expression.
        type: dict
        default: {}
      load_balancers:
        description: Services of type LoadBalancer and Ingresses are ready once they have an address.
        type: bool
        default: false
      health_check_exprs:
        description: Readiness rules in CEL, in the form of Flux's C(healthCheckExprs) (see applyset_apply).
        type: list
        elements: dict
        suboptions:
          apiVersion: {description: The API version of the objects; the version is not compared., type: str}
          kind: {description: "Their kind; left out, every kind of the group (as in Flux).", type: str}
          current: {description: CEL expression that holds when the object is ready. Required., type: str}
          inProgress: {description: CEL expression that holds while the object is on its way., type: str}
          failed: {description: CEL expression that holds when the object has failed., type: str}
  revisions:
    description:
      - Also list each set's release history (see O(applyset.kubernetes.applyset_apply#module:history_max)), each
        revision with its number, time, result (C(deployed), C(superseded), C(failed), C(rolled back), C(damaged)), member count and
        provenance, as RV(applysets[].revisions). Read from the history Secrets' metadata only, never a Secret value; a revision whose
        summary annotation or chunk Secrets cannot be read is listed C(damaged) (M(applyset.kubernetes.applyset_verify) reads each
        revision whole).
    type: bool
    default: false
  history_namespace:
    description: Where a cluster-scoped parent keeps its history (as given to applyset_apply).
    type: str
  query:
    description:
      - A JMESPath expression applied to the result (a dictionary with RV(applysets), RV(complete) and
        RV(unlisted)); its value is returned as RV(query_result).
      - For example C(applysets[?tool=='kubectl'].parent.name) or C(applysets[0].members[].name).
      - Needs the Python package C(jmespath) where the module runs.
    type: str
  parallelism:
    description: How many LIST requests run at once.
    type: int
    default: 8
notes:
  - Listing needs C(list) on Secrets and ConfigMaps (in O(namespace), or across all namespaces), on
    CustomResourceDefinitions (cluster-wide) and on the custom resources of parent types. A LIST the credentials
    may not do is reported in RV(unlisted) and makes RV(complete) false; the rest is still returned.
  - Every custom resource of a parent type is listed, labelled or not, because each of them exists to be a parent;
    one without an id label shows RV(applysets[].id) null.
seealso:
  - module: applyset.kubernetes.applyset_verify
  - module: applyset.kubernetes.applyset_apply
  - name: KEP-3659 ApplySet
    description: The specification of ApplySets.
    link: https://github.com/kubernetes/enhancements/tree/master/keps/sig-cli/3659-kubectl-apply-prune
"""

EXAMPLES = r"""
- name: List every ApplySet in the cluster
  applyset.kubernetes.applyset_info:
  register: sets

- name: List the sets in one namespace, with their member counts
  applyset.kubernetes.applyset_info:
    namespace: shop
    member_count: true

- name: Show the members of one set
  applyset.kubernetes.applyset_info:
    parent: shop                 # the Secret shop/shop
    namespace: shop
  register: shop

- name: Names of its Deployments and whether they are ready
  applyset.kubernetes.applyset_info:
    parent: {kind: Secret, name: shop, namespace: shop}
    readiness: true
    query: "applysets[0].members[?kind=='Deployment'].{name: name, ready: ready}"
  register: deployments

- name: Sets that kubectl made
  applyset.kubernetes.applyset_info:
    query: "applysets[?tool=='kubectl'].parent"
  register: kubectl_sets

- name: A cluster-scoped custom resource parent
  applyset.kubernetes.applyset_info:
    parent: applysets.example.com/platform
"""

RETURN = r"""
applysets:
  description:
    - One entry per set, sorted by parent namespace, group, kind and name.
    - With O(parent), one entry, or none when the parent does not exist (a warning then names the parent looked for).
  returned: always
  type: list
  elements: dict
  contains:
    parent:
      description: apiVersion, kind, namespace (null when cluster-scoped) and name of the parent.
      type: dict
      sample: {apiVersion: v1, kind: Secret, namespace: shop, name: shop}
    id:
      description: The parent's C(applyset.kubernetes.io/id) label as found; null when it has none.
      type: str
      sample: applyset-0eFHV8ySqp7XoShsGvyWFQD3s96yqwHmzc4e0HR1dsY-v1
    expected_id:
      description: The id computed from the parent's name, namespace, kind and group, as kubectl computes it.
      type: str
    id_matches:
      description: Whether RV(applysets[].id) equals RV(applysets[].expected_id). A set whose id does not match
        is refused by every tool; see M(applyset.kubernetes.applyset_verify).
      type: bool
    tooling:
      description: The C(applyset.kubernetes.io/tooling) annotation, for example C(kubectl/v1.33.0); null when absent.
      type: str
    tool:
      description: The tool name of RV(applysets[].tooling), for example C(kubectl) or C(applyset.kubernetes).
      type: str
    group_kinds:
      description:
        - The recorded group-kinds, as C(Kind.group), sorted. Kinds the server does not serve are included.
        - When C(contains-group-resources) is left beside C(contains-group-kinds), the kinds of both (the prune
          scope of M(applyset.kubernetes.applyset_apply), wider than kubectl's).
      type: list
      elements: str
      sample: [ConfigMap, Deployment.apps]
    namespaces:
      description: The namespaces where namespaced members may live, the parent's own included, sorted.
      type: list
      elements: str
      sample: [shop]
    hint_annotation:
      description:
        - The annotation the group-kinds were read from, C(applyset.kubernetes.io/contains-group-kinds) or, for
          sets made by kubectl 1.27 and 1.28, C(applyset.kubernetes.io/contains-group-resources); null when the
          parent has neither. When both are there, C(contains-group-kinds) (and the kinds of both are recorded).
      type: str
    claim:
      description:
        - The claim of a run of M(applyset.kubernetes.applyset_apply) that is changing the set (C(run), C(expires) as
          Unix time), or null. A claim whose C(expires) has passed was left by a run that died; the next run takes
          the set over and finishes the job.
      type: dict
    last_written:
      description:
        - When any tool last changed the parent (the newest C(managedFields) time, RFC 3339 UTC), or null.
          Every run of M(applyset.kubernetes.applyset_apply) writes the parent; kubectl writes it only when its
          hints change.
      type: str
      sample: "2025-06-01T12:00:00Z"
    revision:
      description: The set's current revision in its history (the parent's C(applyset.kubernetes.ansible/revision)), or null.
      type: int
      sample: 3
    revisions:
      description:
        - With O(revisions), the kept revisions, oldest first, each with C(revision), C(time), C(result) (C(deployed),
          C(superseded), C(failed), C(rolled back) or C(damaged)), C(damage) (why a damaged one cannot be read, else
          null), C(members), C(rollback_of) (the revision a rollback applied again), C(provenance), C(bytes) stored
          and the C(secret) holding it.
      type: list
      elements: dict
      returned: with O(revisions)
      sample: [{revision: 1, result: superseded, members: 4}, {revision: 2, result: deployed, members: 5}]
    member_count:
      description: The number of members.
      returned: when O(members), O(member_count), O(full_objects) or O(readiness) is set
      type: int
    members:
      description: The members, sorted by group, kind, namespace and name.
      returned: when O(members), O(full_objects) or O(readiness) is set (O(members) defaults to true with O(parent))
      type: list
      elements: dict
      contains:
        apiVersion: {description: The preferred apiVersion of the member's kind., type: str}
        kind: {description: The member's kind., type: str}
        namespace: {description: The member's namespace; null when cluster-scoped., type: str}
        name: {description: The member's name., type: str}
        uid: {description: The member's UID., type: str}
        object:
          description: The whole object (Secret values hidden).
          returned: when O(full_objects=true)
          type: dict
        ready:
          description: Whether the member is ready.
          returned: when O(readiness=true)
          type: bool
        reason:
          description: Why the member is or is not ready, for example C(1/3 replicas available).
          returned: when O(readiness=true)
          type: str
        readiness_rule:
          description:
            - The rule the member is judged by, the first that applies of C(annotation) (its ready-when annotation),
              C(health_check_exprs[N]), C(override KEY), C(built-in) (the kind's own rule), C(library NAME) (the bundled
              library's rule, for example C(library Rollout.argoproj.io)), C(generic) (Ready or Available condition), or
              C(none) (a kind with nothing to wait for). A failed-when annotation alone is shown as
              C(annotation failed-when, then RULE).
          returned: when O(readiness=true)
          type: str
          sample: library Certificate.cert-manager.io
complete:
  description: False when some LIST failed (see RV(unlisted) and RV(reduced_coverage)), so sets or members may be
    missing.
  returned: always
  type: bool
unlisted:
  description: The LISTs that failed, with the reason (usually RBAC). A null namespace means all namespaces.
  returned: always
  type: list
  elements: dict
  sample: [{group_kind: Secret, namespace: shop, reason: "HTTP 403: ..."}]
reduced_coverage:
  description:
    - With O(namespace) (or O(parent)), the parent types the credentials may not list across the cluster, in
      C(kinds) with the server's reason. A tenant bound in its namespace may not list CustomResourceDefinitions, so
      custom resource parents are not looked for (a warning says so); the Secret and ConfigMap parents of the
      namespace and every set's members in its recorded scope still are.
  returned: always
  type: dict
  sample: {kinds: [{group_kind: CustomResourceDefinition.apiextensions.k8s.io, reason: "HTTP 403: ..."}]}
query_result:
  description: The value of O(query) applied to the result.
  returned: when O(query) is given
  type: raw
error:
  description: On failure, the error with the object it is about and how to fix it.
  returned: failed
  type: dict
"""

import functools  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

# First: the collection's module_utils below are then compiled once per host, not on every run.
from ansible_collections.applyset.kubernetes.plugins.module_utils import bytecode_cache  # noqa: E402

bytecode_cache.install()

from ansible_collections.applyset.kubernetes.plugins.module_utils.ansible_support import (  # noqa: E402
    check_names, connect, fail_from_error, health_check_exprs, module_argument_spec, start, wait_rules_spec, warn_all,
)

try:
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.wait import readiness
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.history import revisions as history
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.verify import inventory
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import redact
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset import spec
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.wait import expressions
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.errors import ApplySetError, InputError
    IMPORT_ERROR = None
except ImportError as err:  # PyYAML or kubernetes missing
    IMPORT_ERROR = err


def argument_spec():
    return module_argument_spec(
        parent=dict(type="raw"),
        namespace=dict(type="str"),
        members=dict(type="bool"),
        member_count=dict(type="bool", default=False),
        full_objects=dict(type="bool", default=False),
        readiness=dict(type="bool", default=False),
        wait_rules=wait_rules_spec(),
        query=dict(type="str"),
        revisions=dict(type="bool", default=False),
        history_namespace=dict(type="str"),
        parallelism=dict(type="int", default=8),
    )


def run_query(module, expression, data):
    """Apply a JMESPath expression, failing with a clear message on a missing package or bad syntax."""
    try:
        import jmespath
    except ImportError:
        module.fail_json(msg="the query option needs the Python package jmespath where the module runs; "
                             "install it (pip install jmespath) or drop query and use the json_query filter")
    try:
        return jmespath.search(expression, data)
    except jmespath.exceptions.JMESPathError as err:
        module.fail_json(msg=f"query {expression!r} is not a valid JMESPath expression: {err}")


def readiness_rules(wait_rules):
    """``readiness.verdict``'s keywords from the wait_rules option, checked before any request (as applyset_apply's)."""
    wait_rules = wait_rules or {}
    exprs = health_check_exprs(wait_rules)
    overrides = wait_rules.get("overrides") or None
    rules = {"fail_closed": bool(wait_rules.get("fail_closed")), "overrides": overrides,
             "wait_for_load_balancers": bool(wait_rules.get("load_balancers")), "health_check_exprs": exprs or None}
    readiness.check_overrides(overrides)
    problems = expressions.problems_in_exprs(rules["health_check_exprs"])
    if problems:
        raise InputError("; ".join(problems), obj="wait_rules.health_check_exprs",
                         fix="correct the expressions named (CEL, as in Flux's healthCheckExprs)")
    return rules


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    _definition, kubeconfig = start(module, IMPORT_ERROR)
    members = params["members"]
    if members is None:
        members = params["parent"] is not None
    try:
        check_names(module)  # before any request
        rules = readiness_rules(params["wait_rules"]) if params["readiness"] else None
        client = connect(module, kubeconfig)
        report = inventory.describe(
            client,
            parent_spec=params["parent"],
            namespace=params["namespace"],
            members=members,
            member_count=params["member_count"],
            full_objects=params["full_objects"],
            readiness=functools.partial(readiness.verdict, **rules) if rules is not None else None,
        )
        result = report.to_dict()
        if params["revisions"]:
            secrets = client.discover().for_group_kind(spec.SECRET_KIND)
            for applyset in result["applysets"]:
                applyset["revisions"] = history.describe(client, secrets, applyset, params["history_namespace"])
    except ApplySetError as err:
        fail_from_error(module, err, changed=False)
    warn_all(module, report.warnings)
    if params["query"] is not None:
        result["query_result"] = run_query(module, params["query"], dict(result))
    # full_objects hides Secret values already; this makes sure of it for every path, by structure.
    module.exit_json(changed=False, **redact.hide_secret_data(result))


if __name__ == "__main__":
    main()
