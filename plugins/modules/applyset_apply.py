#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: applyset_apply
short_description: Apply a set of Kubernetes objects with server-side apply and prune what was removed
version_added: 0.1.0
description:
  - Applies every object of a set with server-side apply (one PATCH per object) and deletes the objects
    that belonged to the set before but are no longer in it, following the ApplySet specification
    (KEP-3659) the way kubectl implements it, so kubectl and this module can read each other's sets.
  - The set is recorded on a I(parent) object (a Secret by default) that carries the set's ID label and
    the group-kinds and namespaces its members live in.
  - The run is crash-safe. The parent is widened to cover old and new members before any member is
    touched, and narrowed to exactly the new set only after a successful prune. An interrupted run
    leaves a state from which the next run prunes exactly what it should.
  - Nothing is deleted unless it carries this set's C(applyset.kubernetes.io/part-of) label, lies in the
    set's recorded scope, is not in the desired set, has no controller owner reference to another
    object, and has no keep annotation. A blast-radius guard refuses large or dangerous prunes.
  - In check mode every apply is a server-side dry run and nothing at all is written, not even the
    parent; the exact list of objects that would be pruned is reported, guards included.
  - A member whose live object is already what the apply would make is not sent at all (see
    I(reapply)), and a run with nothing to change writes nothing, not even the parent.
  - With C(--diff), one before/after entry is returned per created, changed or pruned object. Secret
    values are masked.
author:
  - applyset.kubernetes contributors (!UNKNOWN)
requirements:
  - python >= 3.9
  - kubernetes >= 28.1.0
  - PyYAML >= 6.0
extends_documentation_fragment:
  - applyset.kubernetes.auth
attributes:
  async:
    support: full
    description: "Runs with C(async) and C(poll) like any module, for example several sets at once with C(poll: 0) and C(async_status)."
  check_mode:
    support: full
    description: Every apply is sent with C(dryRun=All); no object and no parent is written.
  diff_mode:
    support: full
    description: Returns a list of before/after entries, one per changed or pruned object.
  platform:
    platforms: posix
    support: full
    description: Runs where the module runs (usually C(localhost)); C(src) files are read there.
options:
  _protected_input:
    description:
      - Internal, set by the collection's action plugin; do not set it in a task.
      - Carries the O(kubeconfig) given as a dictionary and O(definition) to the module as one
        C(no_log) text, so that neither appears in the module invocation or the syslog/journal line.
    type: str
  parent:
    description:
      - The ApplySet parent.
      - A string in kubectl's C(--applyset) syntax, C([RESOURCE][.GROUP]/NAME). A plain C(NAME) means a Secret;
        for example C(configmaps/shop) or C(applysets.example.com/shop).
      - Or a dictionary with C(kind) (default C(Secret)), C(name), and optionally C(apiVersion) and C(namespace).
      - Or the full definition of a custom resource (with C(apiVersion), C(kind), C(metadata) and C(spec)), which
        is created when it does not exist yet. Its CustomResourceDefinition must carry the label
        C(applyset.kubernetes.io/is-parent-type=true).
      - Secrets and ConfigMaps are created when missing.
    type: raw
    required: true
  namespace:
    description:
      - Namespace of a namespaced parent, and default namespace of namespaced members that do not set
        C(metadata.namespace).
      - Members may live in other namespaces; they are recorded in the parent's C(additional-namespaces).
      - Must be a valid namespace name (a DNS-1123 label); it is checked before any request, as are the
        parent's name and every member's name and namespace.
    type: str
  src:
    description:
      - Manifest files, directories (all C(*.yaml), C(*.yml) and C(*.json) below them, hidden entries
        skipped) or glob patterns.
      - Files are read as kubectl reads them, whatever their extension, JSON or YAML by content, YAML with
        kubectl's rules (go-yaml v2, so C(y), C(on), C(0o17), C(1e3) are a boolean and numbers, C(12:30)
        and C(=) strings). See the collection's C(docs/kubectl-compatibility.md).
      - Multi-document YAML and JSON streams are supported, and every list kind with C(items) (C(List),
        C(RoleList), ...) is flattened.
      - Relative paths are resolved against the playbook or role directory.
      - Files encrypted with Ansible Vault, whole (C(ansible-vault encrypt)) or holding C(!vault) values
        (C(ansible-vault encrypt_string)), are decrypted by the action plugin on the controller, in memory, with
        the play's vault passwords (C(--ask-vault-pass), C(--vault-password-file), C(--vault-id)), and handed to the
        module in a hidden C(no_log) parameter; they keep their place in the order and their name in messages.
        A vaulted file without its password fails the task before anything is sent. See the collection's
        C(docs/user-guide.md).
    type: list
    elements: str
  definition:
    description:
      - Objects given inline, as a dictionary, a list of dictionaries, or YAML/JSON text. Combined with C(src).
      - "Text is read as kubectl reads a file, and a text whose first line is C(# Source: NAME) is named
        NAME in messages. Dictionaries were parsed by Ansible (PyYAML) already; pass text to have YAML
        read with kubectl's rules."
      - The action plugin hands this option to the module in a hidden C(no_log) parameter, so the
        module invocation (C(-vvv), AWX job events) and the syslog/journal line never show it; Secret data
        is hidden in every result by structure, and nothing else is masked. See the collection's C(docs/secrets.md).
    type: raw
  helm:
    description:
      - A Helm chart rendered by C(helm template) on the host that runs the module; what it renders
        is the set's input, as if given as text in C(definition). Give either O(helm.chart) or C(src)/C(definition).
      - "It is rendered as C(helm install) would render it: with the cluster's version (C(--kube-version)) and
        each served group/version and group/version/Kind (C(--api-versions)), C(.Release.IsUpgrade) when the set
        exists or a release O(helm.take_over) takes over does (C(.Release.IsInstall) on its first run), the release
        name and namespace; with the cluster reachable to helm, so that C(lookup) reads it (see O(helm.lookup))."
      - "Hooks follow C(helm.sh/hook) (install hooks on the first run, upgrade hooks on later ones); C(test)
        hooks are left out with a warning. CRDs of the chart's C(crds/) directory are no members: see O(helm.crds)."
      - "The revision's provenance records the chart's name, version and source, a digest of the values
        (never the values) and the helm version. C(rollback_to) applies a revision's recorded objects again
        without rendering (give C(rollback_to) without C(helm))."
      - With C(state=absent), the chart is rendered for its C(pre-delete) and C(post-delete) hooks only.
      - Rendering writes nothing on the cluster, so check mode renders too. Every failure of helm (no
        helm, one older than 3.8, a chart that does not render, a missing values file, an unreachable
        repository, a version that does not exist) fails the task before any write, naming the chart.
      - See the collection's C(docs/helm-charts.md).
      - "With O(helm.take_over) and without O(helm.chart), O(helm) names the Helm release that the set's O(src)
        or O(definition) take over (see O(helm.take_over))."
      - Without O(helm), or without O(helm.take_over), a member whose live object belongs to a Helm release that
        still exists (its C(meta.helm.sh/release-name) annotation names it and Helm keeps its records) is refused
        before anything is written, naming the release (Helm would write it back on its next upgrade and delete it
        on uninstall).
    type: dict
    suboptions:
      chart:
        description:
          - A chart directory or C(.tgz) on the module's host, a chart name in C(repo), or an C(oci://) reference.
        type: str
      repo:
        description:
          - The URL of the chart repository that holds C(chart) (C(helm template --repo)).
        type: str
      version:
        description:
          - The chart version (a version constraint as helm takes it); the newest when not given.
        type: str
      release_name:
        description:
          - The release name the chart renders with (C(.Release.Name)). Defaults to the parent's name.
        type: str
      namespace:
        description:
          - The release namespace (C(.Release.Namespace)), where namespaced objects the chart leaves
            without a namespace go. Defaults to the set's C(namespace).
        type: str
      values:
        description:
          - Values, as C(helm --values) takes them, given after every file of C(values_files) (so they win).
          - "They reach helm through a file only the module's user can read, removed after. Errors and the
            history never show them (a digest only), and the action plugin hands them to the module in its
            hidden C(no_log) parameter (as C(definition)), so the invocation (C(-vvv)) does not show them."
        type: dict
        default: {}
      values_files:
        description:
          - Values files on the module's host, in order (C(helm --values)).
        type: list
        elements: path
        default: []
      set_values:
        description:
          - Values set one by one, as kubernetes.core.helm's O(helm.set_values) and C(helm --set) take them, applied
            after O(helm.values_files) and O(helm.values) (so they win), in their order.
          - "Like O(helm.values), they travel in the action plugin's hidden parameter, and errors and the history
            never show them (helm's messages have them redacted; the revision records a digest). They are on helm's
            command line on the module's host (as with kubernetes.core.helm): give a secret in O(helm.values) or a
            C(file) value instead, which reach helm through files."
        type: list
        elements: dict
        suboptions:
          value:
            description:
              - C(key=value) as helm takes it (C(image.tag=1.2.3), C(a=1,b=2), C(list[0]=x)); for V(file), C(key=path)
                of a file on the module's host whose content is the value.
            type: str
            required: true
          value_type:
            description:
              - "V(raw) is C(--set) (helm's typing: C(true) a boolean, C(3) a number), V(string) C(--set-string),
                V(json) C(--set-json) (helm 3.10 or newer), V(file) C(--set-file)."
            type: str
            choices: [raw, string, json, file]
            default: raw
      dependency_update:
        description:
          - Fetch the dependencies the chart's C(Chart.yaml) lists (C(helm dependency update)) before rendering, as
            kubernetes.core.helm's O(helm.dependency_update) does, but into a copy of a chart directory in the run's
            own temporary directory, never into the chart's directory (relative C(file://) dependencies are found from
            where the chart is). A packaged chart or one from a repository carries its dependencies already.
          - Without it, a chart whose dependencies are not in its C(charts/) directory fails before any request that
            writes, naming the missing dependency and this option.
        type: bool
        default: false
        aliases: [dep_up]
      repo_username:
        description:
          - The user name for O(helm.repo) (basic auth), as kubernetes.core.helm_pull names it. With it, the repository
            is added to the run's own helm state (C(helm repo add --password-stdin)), so that the password is never on a
            command line and C(helm dependency update) uses the credentials for dependencies from the same URL.
        type: str
        aliases: [chart_repo_username]
      repo_password:
        description:
          - The password for O(helm.repo_username); redacted from helm's messages.
        type: str
        aliases: [chart_repo_password]
      pass_credentials:
        description:
          - Send the repository credentials to other hosts too (a chart archive served elsewhere; C(--pass-credentials)).
        type: bool
        default: false
      chart_ca_cert:
        description:
          - A CA file on the module's host to verify the chart repository or registry with (C(--ca-file)).
        type: path
      chart_ssl_cert_file:
        description:
          - A client certificate file for the chart repository or registry (C(--cert-file)).
        type: path
      chart_ssl_key_file:
        description:
          - The key file of O(helm.chart_ssl_cert_file) (C(--key-file)).
        type: path
      insecure_skip_tls_verify:
        description:
          - Do not verify the chart repository's or registry's certificate (C(--insecure-skip-tls-verify)); not the
            cluster's (that is O(validate_certs)).
        type: bool
        default: false
        aliases: [skip_tls_certs_check]
      plain_http:
        description:
          - Reach an OCI registry over HTTP (C(--plain-http), helm 3.13 or newer).
        type: bool
        default: false
      skip_schema_validation:
        description:
          - Render without checking the values against the chart's C(values.schema.json)
            (C(--skip-schema-validation)); needs helm 3.16 or newer, refused before any request with an older one.
        type: bool
        default: false
      include_crds:
        description:
          - Render the chart's C(crds/) directory too (C(--include-crds)); what is done with its CRDs is O(helm.crds).
        type: bool
        default: true
      crds:
        description:
          - "What a run does with the CRDs of the chart's C(crds/) directories, named as Flux's HelmRelease names it.
            They are no members of the set, as with Helm: they carry no part-of label, no prune and no C(state=absent)
            deletes them, and every release of the chart (another set, another namespace) shares them. They are
            applied after the claim, before the chart's hooks and members; RV(applyset.chart_crds) says what was done."
          - V(Create) creates the missing ones and leaves existing ones as they are (Helm's way).
          - V(CreateReplace) also brings existing ones to the chart's (forced server-side apply, on every run); one this
            collection never applied is adopted so with a warning naming it.
          - V(Skip) leaves them out (C(helm install --skip-crds)); install them beforehand.
          - A CRD of C(crds/) that an earlier run made a member of this set is taken out of the set and kept.
          - "To remove them on purpose, delete them (C(kubectl delete crd NAME)): every custom resource of them goes too."
        type: str
        choices: [Skip, Create, CreateReplace]
        default: Create
      binary:
        description:
          - The helm to run, a path or a name looked for on C(PATH). helm 3.8 or newer (helm 3 or helm 4).
        type: str
        default: helm
      lookup:
        description:
          - Render with the cluster reachable to helm (C(helm template --dry-run=server)), so that the chart's C(lookup)
            reads it as C(helm upgrade) does (a Bitnami chart keeps the password it generated on its first run). helm
            connects with the task's own connection (server, credential, CA, impersonation), written to a file only
            the module's user can read, removed after, never shown. helm only reads, so check mode renders so too.
          - A user that may not read what the chart looks up fails the task before any write, naming the resource.
          - V(false) renders without the cluster (C(lookup) returns nothing), as a helm older than 3.13 always does.
        type: bool
        default: true
      take_over:
        description:
          - Take over the release, installed by Helm 3 or Helm 4 (or kubernetes.core's C(helm) module), into this
            set. Every object of it keeps its UID (nothing is recreated, no pod restarts), becomes a member, and
            Helm's field ownership becomes this set's field manager's, so that a field only Helm had set goes when
            the manifests drop it; Helm's C(meta.helm.sh/*) annotations go too.
          - The objects of the release that the manifests no longer contain are pruned under every rule of a prune
            (guard, keep annotations), each exactly the object the release installed (by UID). With
            O(prune=false) they are taken in and kept.
          - Once every object is a member, the release's records (C(sh.helm.release.v1.NAME.vN), Secrets, or
            ConfigMaps with C(HELM_DRIVER=configmap)) are deleted, so C(helm list) no longer shows it and C(helm uninstall) cannot remove what the set owns.
            With a history, the set's revision records the release's chart and manifest digest (not its values).
          - Refused before any write, naming the release, are objects of a release of another name, and a
            release Helm is in the middle of (pending-install, pending-upgrade, pending-rollback, uninstalling).
          - Check mode shows what would be done (RV(applyset.helm_take_over)) and writes nothing. Harmless to
            keep; once the release is retired there is nothing left to take over, and a re-run writes nothing.
          - See docs/helm-takeover.md.
        type: bool
        default: false
  state:
    description:
      - C(present) applies the set and, with I(prune), removes what left it.
      - C(absent) deletes every member (with the same safety rules as prune, in reverse order) and then the parent.
        With I(src) or I(definition), their C(pre-delete) and C(post-delete) hooks run around the deletion (the
        other objects given are not used).
      - C(disbanded) removes the C(part-of) label from every member, leaving the objects in place, and deletes
        the parent.
    type: str
    choices: [present, absent, disbanded]
    default: present
  prune:
    description:
      - Delete the members of the set that are not in the desired set.
      - With C(false) nothing is deleted and the parent keeps recording the old members, so a later
        run with C(prune=true) still finds them.
    type: bool
    default: true
  force_conflicts:
    description:
      - Take ownership of fields that another field manager owns, instead of failing with a conflict.
    type: bool
    default: false
  field_manager:
    description: The server-side apply field manager for the members.
    type: str
    default: applyset.kubernetes
  field_validation:
    description: How the server treats unknown or duplicate fields in the objects.
    type: str
    choices: [Strict, Warn, Ignore]
    default: Strict
  reapply:
    description:
      - Which members are sent to the server.
      - C(changed) sends only the members whose live object is not already what the apply would make;
        the others are reported C(unchanged) without a request. A member is skipped only when the live
        object (listed in full) carries the digest of the very body this run would send (annotation
        C(applyset.kubernetes.ansible/applied-digest), written by every apply), this field manager's apply
        entry, and every value of the manifest, strictly equal. A run that has nothing to change, nothing
        to prune and the parent's hint already right writes nothing at all, the parent included; one that
        only updates members of the set sends just those updates, each conditional on the object it
        listed (its uid and resourceVersion), and no claim (see the safety documentation). Values
        the server normalises (C(0.5) CPU stored as C(500m), a Secret's C(stringData)) cost one apply on
        every run, never a missed change.
      - C(always) applies every member on every run, as C(kubectl apply --server-side) does.
    type: str
    choices: [changed, always]
    default: changed
  approved_plan:
    description:
      - Bind the run to a plan someone approved. The run computes its plan after its reads and, when it is
        not the approved one, fails before any write (no namespace, no claim, no hook, no member) with each
        difference named, for example C(ConfigMap shop/banner) approved C(configure), now C(create), because it was
        deleted on the cluster since. With a matching plan the run goes on as usual and returns the same RV(plan_id).
      - Give the RV(plan_id) of a check-mode run, its RV(plan) list, or a dict with C(plan) and C(plan_id) (the
        check-mode result itself, or what C(playbooks/preview.yml) publishes for an AWX workflow). Only a plan
        lets a refusal name each difference; with the id alone it says the plan differs and shows the plan now.
        A dict with C(plan_id) and C(digests) (what the deploy role publishes, filter C(applyset.kubernetes.plan_digests),
        11 characters per entry) is bound by the id and names each difference of the current plan, counting the
        approved entries whose object is no longer in it.
        An id that is not C(plan-v1:) and 24 hex digits is refused as such; a plan made for another set, or for
        another kind of run, is refused saying so.
      - What it binds besides each body's digest (see RV(plan)) are the values of each Secret it sends (a keyed
        digest whose key the parent Secret keeps) and the live values of the fields it sends to each member it
        configures, so that a Secret value changed in the manifests or a field changed on the cluster after the
        preview is refused and named. With an approved plan the run lists the kinds it applies as whole
        objects (as O(reapply=changed) does), with the same requests (larger answers with O(reapply=always)).
      - Works with O(state=present) (a rollback with O(rollback_to) included), O(state=absent) and
        O(state=disbanded). A rollback that O(on_failure=rollback) starts is bound to no plan.
      - In check mode the preview fails the same way, which tells whether an approved plan still holds.
    type: raw
  result_detail:
    description:
      - How much of the run the result lists; the summary, the failures, the warnings, RV(plan_id) and the keys that
        are not per object are always there. AWX keeps an event's result only up to 700,000 bytes of JSON
        (C(MAX_EVENT_RES_DATA)) and drops a larger one whole.
      - C(auto) lists everything while the result fits in O(result_max_bytes); a result that fits is the same as with
        C(full). Beyond it, the failed members come first, then the other members that changed (or were skipped),
        the plan's entries that do something, the diff, and last the unchanged members and plan entries; a list
        stops at the first entry that no longer fits, RV(omitted) counts what was left out and a warning says so.
      - C(changed) leaves out the unchanged members and plan entries (counted in RV(omitted)), within
        O(result_max_bytes) as C(auto).
      - C(summary) lists only the failed members, no plan entries and no diff (within O(result_max_bytes));
        RV(plan_id) still binds a deploy (O(approved_plan)).
      - C(full) lists everything, whatever its size (in AWX a result over the limit is lost whole).
      - A plan that left entries out still binds O(approved_plan) by its RV(plan_id) (give the result, with its
        RV(omitted)); a refusal names the differences among the entries it has.
    type: str
    choices: [auto, changed, summary, full]
    default: auto
  result_max_bytes:
    description:
      - The most bytes of JSON the result may take with O(result_detail) other than C(full), the warnings' texts
        included; 600,000 leaves room below AWX's 700,000 for what Ansible adds.
      - A limit below the keys that are always there leaves every list out.
    type: int
    default: 600000
  config_digest:
    description:
      - Roll the workloads whose ConfigMaps or Secrets changed, as Helm charts' C(checksum/config) pod annotation
        does by hand. Each pod template of a Deployment, StatefulSet, DaemonSet, ReplicaSet, CronJob or Argo
        Rollout of the set gets the annotation C(applyset.kubernetes.ansible/config-digest) with one sha256 of
        the ConfigMaps and Secrets of the set, in its namespace, that the template reads (volumes, projected
        volumes, C(envFrom), C(env[].valueFrom)), so that a changed one changes the template and the workload rolls.
      - Only the digest is written, never a value; references to objects outside the set are not followed.
        Unchanged config leaves the digest as it was (a re-run writes nothing), and a rollback restores the
        digest of the revision with its ConfigMaps, so the workloads roll back too. Jobs are left as they are
        (their template cannot change).
    type: bool
    default: false
  versioned_keep:
    description:
      - How many older versions of each versioned ConfigMap and Secret stay on the cluster, as members of the
        set. An object annotated C(applyset.kubernetes.ansible/versioned="true") (or carrying kapp's
        C(kapp.k14s.io/versioned)) is sent as C(<name>-<digest>), the digest being 10 hex digits of the sha256
        of what it stores, and every reference to it in the pod templates of the set (volumes, projected
        volumes, C(envFrom), C(env[].valueFrom), C(imagePullSecrets)) is rewritten, so a changed one rolls its
        workloads and an unchanged one writes nothing.
      - The newest older versions are kept so that pods still on the previous template find what they read;
        the others are pruned like any member (with O(prune)), after the applied workloads are ready when
        O(wait) is true. With V(0) and without O(wait), the previous version goes in the same run.
    type: int
    default: 3
  versioned:
    description:
      - ConfigMaps and Secrets of the set to version as if they carried the annotation
        C(applyset.kubernetes.ansible/versioned="true") (see O(versioned_keep)), for manifests you do not edit,
        such as a rendered chart's. V(ConfigMap) or V(Secret) versions every one of the kind,
        V(ConfigMap/<name>) or V(Secret/<name>) one.
    type: list
    elements: str
    default: []
  wait_for_sets:
    description:
      - Other sets on the cluster this run waits for before it reads its own (and so before it claims it), as
        Flux's C(dependsOn). Each entry names the other set's O(wait_for_sets[].parent) and what to wait for.
      - A set whose last release failed (its current revision recorded C(failed)) fails this run at once, naming
        it; so does a member that failed, with O(wait_for_sets[].ready). The wait watches the other set's parent
        and its current revision's Secret (metadata only), within O(wait_timeout) for all entries together.
      - In check mode the sets are read once; a warning says whether a real run would wait, and for what.
    type: list
    elements: dict
    default: []
    suboptions:
      parent:
        description: The other set's parent, as O(parent) takes it (C(secrets/db), or C(kind) and C(name)).
        type: raw
        required: true
      namespace:
        description: Its namespace; this task's O(namespace) when left out.
        type: str
      revision:
        description: The lowest revision the other set may be at (its current one, from its history).
        type: int
      ready:
        description: Also wait until every member of the other set is ready by this collection's readiness rules
          (this task's O(wait_rules)).
        type: bool
        default: false
      ready_expr:
        description:
          - Also wait until this CEL expression holds, as Flux's C(readyExpr). Its variables are C(parent) (the other
            set's parent, its C(metadata) only) and C(members) (the other set's members, whole objects), for example
            C(members.exists(m, m.kind == 'Certificate' && m.status.conditions.exists(c, c.type == 'Ready'))).
          - Checked before any request; watched like the rest (the parent and the members) within O(wait_timeout).
        type: str
  ignore_fields:
    description:
      - Fields of members that this collection leaves to others (an HPA's C(spec.replicas), a value tuned by
        hand), as Argo CD's C(ignoreDifferences) and Flux's C(spec.ignore). Each rule names a C(kind) (and
        C(group)), optionally a C(name) and a C(namespace), and C(json_pointers).
      - Each pointer of a member that exists is resolved by server-side apply ownership, as Flux does. When another
        field manager owns the field, it is left out of the apply (the other manager keeps it). When this
        collection is its only owner, the live value is sent, so that the field is neither changed nor deleted.
        A field nobody owns, or that is not there, is left out. A new object is created with the manifest's value.
      - The digest annotation hides the values of ignored fields (whether the manifest sets them is in it); when the
        owner changes such a field (C(kubectl scale) of ignored replicas), the next run writes nothing and reports the
        member C(unchanged), with C(drift=cluster_changed) and C(drift_left_to_others=true). Each member's result says
        what each pointer did (C(ignored_fields) in RV(objects)).
      - A pointer that names the object or ties it to the set (C(/kind), C(/apiVersion), C(/metadata),
        C(/metadata/name), C(/metadata/namespace), C(/metadata/labels), C(/metadata/annotations)) and a malformed
        one (C(~) other than C(~0) or C(~1)) are refused before any request. A rule that matches no member, and a
        pointer that matches no field of the members it applies to, are warned about.
      - Objects of the set can also opt out as a whole with their own annotation
        C(applyset.kubernetes.ansible/apply) (or Flux's C(kustomize.toolkit.fluxcd.io/ssa)) - C(create-only)
        (Flux C(IfNotPresent)) is created when absent and never updated; C(ignore) (Flux C(Ignore)) is never
        written. Both stay members (their kinds in the hint; pruned when they leave the set, if they exist).
    type: list
    elements: dict
    default: []
    suboptions:
      kind:
        description: The kind of the members the rule applies to.
        type: str
        required: true
      group:
        description: Their API group (C("") for the core group); any group when left out.
        type: str
      name:
        description: Only the member with this name.
        type: str
      namespace:
        description: Only members in this namespace.
        type: str
      json_pointers:
        description: RFC 6901 pointers to the fields, such as C(/spec/replicas) or C(/data/seed).
        type: list
        elements: str
        required: true
  create_namespace:
    description:
      - Create the parent's namespace (for a cluster-scoped parent, I(namespace)) when it does not exist,
        as C(helm install --create-namespace) does.
      - The namespace is not a member of the set, so C(state=absent) leaves it, as Helm does; it may hold
        what other tools put there. To have the set own it, put a Namespace object in the set instead
        (its prune is then guarded, see I(guard.allow_prune_kinds)).
      - Without it, a missing namespace, the parent's or a member's, fails the run before anything is
        written, and names the namespace. In check mode the namespace is reported as C(created).
    type: bool
    default: false
  recreate_on_immutable:
    description:
      - Kinds, as C(Kind) or C(Kind.group), whose objects are deleted and created again when the server
        refuses a change as immutable (a Job's template, a Deployment's selector, a Service's clusterIP).
        For example C([Job]).
      - The object is deleted with a UID precondition, waited for until gone (at most 120 seconds), and
        applied again; its action is C(replaced). The replacement is first validated by the server
        (a dry-run create), so an invalid manifest never gets the live object deleted.
      - Per object, the annotation C(applyset.kubernetes.ansible/update-strategy) set to
        C(recreate-on-immutable) opts in, and C(apply) opts out of this list.
      - Protected kinds (CustomResourceDefinition, Namespace, PersistentVolume, PersistentVolumeClaim) are
        never recreated; listing them is an error.
      - Without it, such a refusal fails the object and names the immutable fields.
    type: list
    elements: str
    default: []
  takeover:
    description:
      - Manage a set whose parent was made by another tool (for example kubectl), or adopt an existing
        Secret or ConfigMap without ApplySet metadata as the parent.
      - A parent whose ID label does not match its name and kind is always refused.
    type: bool
    default: false
  adopt:
    description:
      - Move live objects that belong to another ApplySet into this one. Without it such an overlap is
        an error, found before anything is written.
    type: bool
    default: false
  adopt_legacy:
    description:
      - Take over a set that C(kubectl apply --prune -l SELECTOR) managed. The objects that kubectl's legacy prune
        would consider, of the O(adopt_legacy.kinds) in the namespaces this run applies to (cluster-scoped kinds
        anywhere), that match O(adopt_legacy.selector) and were made by C(kubectl apply) (they carry the
        C(kubectl.kubernetes.io/last-applied-configuration) annotation), are taken into the set; those no longer in
        the manifests are pruned in the same run, under every rule of a prune (guard, keep annotations, foreign
        controllers).
      - Meant for the run that creates the set, and harmless to repeat; remove it once the set has taken over. Check
        mode lists exactly what is adopted (RV(applyset.adopted)) and what is pruned.
      - Objects Helm manages are refused, naming the release, unless O(adopt_legacy.allow_helm=true).
    type: dict
    suboptions:
      selector:
        description: The label selector that C(kubectl apply --prune -l) used.
        type: str
        required: true
      kinds:
        description:
          - The kinds to look at, as C(Kind) or C(Kind.group), as C(--prune-allowlist) did. By default kubectl's
            default prune allowlist.
        type: list
        elements: str
      allow_helm:
        description: Take in objects that Helm manages too (when retiring the release).
        type: bool
        default: false
  guard:
    description: The blast-radius guard, checked before anything is written.
    type: dict
    default: {}
    suboptions:
      allow_empty:
        description: Allow an empty desired set, which prunes every member.
        type: bool
        default: false
      max_prune_percent:
        description: Refuse to prune more than this share of the set's current members.
        type: int
        default: 50
      allow_prune_kinds:
        description:
          - Kinds that are protected from pruning by default and may be pruned in this run,
            as C(Kind) or C(Kind.group).
          - Protected kinds are CustomResourceDefinition, Namespace, PersistentVolume and PersistentVolumeClaim.
        type: list
        elements: str
        default: []
  parallelism:
    description:
      - The most requests in flight at once within one step (applies, deletes, LISTs).
      - Not set, the run follows the round trip to the API server. It starts with 8 requests in flight and
        doubles them while their latency stays close to the round trip (on a slow link, more at once fill
        it), up to 64. When the first three answers each took 20 ms or more (a cluster a region away), it
        goes to 64 at once. It stops growing once the server queues, and halves on a 429 (priority and
        fairness rejections included) or 503, waiting out a C(Retry-After).
      - A number is a hard upper limit. The run starts at 8 (or the number, if smaller) and grows up to
        it. Set it to 8 for the behaviour before this option followed the round trip, or to 1 to send one
        request at a time.
    type: int
  propagation_policy:
    description: How dependents of pruned objects are deleted.
    type: str
    choices: [Background, Foreground, Orphan]
    default: Background
  crd_timeout:
    description: Seconds to wait for a CustomResourceDefinition of the set to become Established.
    type: int
    default: 60
  wait:
    description:
      - After a successful apply, wait until every applied object is ready, then prune, then wait until every
        pruned object is gone. A wait that fails prunes nothing, and the parent keeps covering every object
        until a later run succeeds. A live member annotated C(applyset.kubernetes.ansible/prune-timing=early)
        is pruned before the wait. Without O(wait), a run prunes right after it applies.
      - With O(state=absent), wait until every deleted member is gone, finalizers included (a
        CustomResourceDefinition only after its custom resources), as C(kubectl delete) does, so that an
        install right after does not race the deletion. On timeout the task fails and lists what remains and
        which finalizers hold it.
      - Readiness follows kstatus-style rules per kind (Deployments, StatefulSets and DaemonSets roll out,
        Jobs complete, Pods are Ready, PVCs are Bound, CRDs are Established, Namespaces are Active, and
        C(status.conditions) Ready or Available for everything else).
      - A Job that completed and was then removed by its C(ttlSecondsAfterFinished) counts as complete (its
        final Event tells how it finished; a failed one fails the wait at once). An applied object deleted
        while the task waits, or replaced by another object of the same name, fails the wait at once as
        C(deleted while waiting).
      - "On timeout the task fails and lists each unready object and why, for example
        C(Deployment shop/web: 1/3 replicas available)."
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds to wait in total when I(wait) is on.
      - Also the limit of each gate of an ordered set (C(config.kubernetes.io/depends-on),
        C(argocd.argoproj.io/sync-wave)), whether I(wait) is on or not, and of each stage of a prune in
        reverse dependency order.
    type: int
    default: 300
  wait_rules:
    description: How readiness is judged when I(wait) is on.
    type: dict
    default: {}
    suboptions:
      fail_closed:
        description: A custom resource without any status counts as not ready (by default it counts as ready).
        type: bool
        default: false
      overrides:
        description:
          - Per-kind readiness rules that replace the built-in ones, as C(Kind) or C(Kind.group) mapped to a
            JMESPath expression evaluated on the live object; a truthy result means ready.
        type: dict
        default: {}
      load_balancers:
        description:
          - Services of type LoadBalancer wait until they have an ingress address; so do Ingresses (the bundled
            library's Ingress rule).
        type: bool
        default: false
      health_check_exprs:
        description:
          - Readiness rules in CEL, in the form of Flux's Kustomization C(healthCheckExprs), so that Flux's rules (and the
            Flux CEL cheatsheet's) can be pasted. Each entry names an C(apiVersion) and C(kind) (matched by API group and
            kind, any version) and CEL expressions over the object, whose top-level fields are the variables
            (C(status.conditions.exists(c, c.type == 'Ready' && c.status == 'True'))); C(self) is the whole object.
          - As in Flux, an object whose C(status.observedGeneration) is behind its C(metadata.generation) is in progress;
            then C(inProgress), C(failed) and C(current) are evaluated in that order and the first that holds decides;
            none holding is in progress. A C(failed) that holds stops the wait at once (and starts I(on_failure)).
          - Unlike Flux, an expression that reads a field that is not there yet means in progress, not an error. An
            expression that does not compile, or that cannot work whatever the object (a name not declared, such as
            C(True) for C(true); a function CEL does not have; a result that cannot be a boolean), is refused before
            any request, naming the entry and where it fails.
          - These rules win over I(wait_rules.overrides), the built-in rules and the bundled library. Per object, the
            annotations C(applyset.kubernetes.ansible/ready-when) and C(applyset.kubernetes.ansible/failed-when) (CEL,
            the same variables) win over everything. Needs the Python package C(cel-python).
        type: list
        elements: dict
        suboptions:
          apiVersion:
            description: The API version of the objects (C(cert-manager.io/v1)); the version is not compared.
            type: str
          kind:
            description: Their kind; left out, the entry judges every kind of the group (as in Flux), after the
              entries that name the kind.
            type: str
          current:
            description: CEL expression that holds when the object is ready. Required.
            type: str
          inProgress:
            description: CEL expression that holds while the object is still on its way.
            type: str
          failed:
            description: CEL expression that holds when the object has failed; the wait stops at once.
            type: str
  failure_logs:
    description:
      - When a wait, a gate of an ordered set or a hook fails (timeout, or an object that can never become
        ready) on a Job, a Deployment, StatefulSet, DaemonSet, ReplicaSet or a Pod, the result carries the
        last lines of the failing containers' logs (the previous container's after a restart), at most 20
        lines and 4 KiB per container and 3 containers, beside the Warning events, in
        C(details.unready[].pods[].containers[].log). Like all output, secret values are kept out.
      - A log that cannot be read (not allowed on C(pods/log), no node to serve it) is left out with a note.
      - Set to C(false) to read no logs.
    type: bool
    default: true
  claim_ttl:
    description:
      - While a run changes the set, it claims the parent; another run waits for it (up to I(claim_wait)).
        A run that dies leaves a claim that expires after this many seconds.
      - The old name C(lock_ttl) is an alias, so existing playbooks keep working.
    type: int
    default: 60
    aliases: [lock_ttl]
  claim_wait:
    description:
      - Seconds to wait for another run's claim on the set to go away before failing.
      - The old name C(lock_wait) is an alias, so existing playbooks keep working.
    type: int
    default: 120
    aliases: [lock_wait]
  history_max:
    description:
      - How many revisions of the set to keep. Each run that changes the set records one (every member as sent,
        Secret values included, the options that shaped the apply and where the run came from) in Secrets of the
        parent's namespace, compressed and owned by the parent; they are never members of the set.
      - C(0) keeps no history; a release with it drops the parent's pointer to the current revision and deletes the
        revisions kept before. Check mode and a run that changes nothing record nothing.
      - See the collection's C(docs/user-guide.md), "History and rollback".
    type: int
    default: 10
  history_namespace:
    description:
      - The namespace of the history of a cluster-scoped parent (a namespaced parent keeps it in its own namespace).
        Without it, a cluster-scoped parent keeps no history.
    type: str
  rollback_to:
    description:
      - Apply a revision of the set's history again, instead of O(src) and O(definition) (give neither);
        its number, or C(previous) for the last deployed revision before the current one.
      - It goes through the normal run (claim, guard, prune of what came later, check mode, diff) and records a
        new revision. A revision whose objects' apiVersion is no longer served, or whose CustomResourceDefinition
        drops a version objects are stored in, is refused before any write.
      - The revision gives the member bodies; every option is this task's (O(field_manager), O(force_conflicts),
        O(field_validation), O(recreate_on_immutable), O(wait), the timeouts, ...), not the revision's. Fields that
        other field managers of this set's kept revisions own are taken over first, so the members end as the
        revision had them, whatever field managers later releases used.
    type: str
  on_failure:
    description:
      - What a failed release does. C(fail) leaves the set as the failure left it (nothing pruned).
      - C(rollback) applies the last deployed revision again when the apply or the wait fails, with its own
        O(rollback_timeout), and prunes what only the failed release created; the task still fails, naming the
        revision it returned to and the original error.
    type: str
    choices: [fail, rollback]
    default: fail
  rollback_timeout:
    description: Seconds the wait of an O(on_failure=rollback) rollback may take (its own, not what the failed release left).
    type: int
    default: 300
  provenance:
    description:
      - Where the run comes from, recorded in the revision. The action plugin fills it from the play (the task's
        file and line, C(playbook_dir), AWX's C(awx_job_id), C(awx_job_template_name) and C(awx_user_name), or
        their C(tower_*) names); there is no need to set it.
    type: dict
notes:
  - Members get the label C(applyset.kubernetes.io/part-of); an input object that already carries it is refused.
  - As kubectl does, C(metadata.namespace) on a cluster-scoped object is ignored (with a warning).
  - Unlike kubectl, a namespaced parent may have members in several namespaces, a set may be emptied
    (with I(guard.allow_empty)), owner references are checked before pruning, and overlapping sets are detected.
seealso:
  - name: KEP-3659 ApplySet
    description: The specification this module implements.
    link: https://github.com/kubernetes/enhancements/tree/master/keps/sig-cli/3659-kubectl-apply-prune
"""

EXAMPLES = r"""
- name: Deploy the shop and prune what was removed
  applyset.kubernetes.applyset_apply:
    parent: shop            # a Secret named shop in the namespace below
    namespace: shop
    src: manifests/shop/

- name: Wait with readiness rules pasted from Flux (here for the set's Flux Kustomizations, if any)
  applyset.kubernetes.applyset_apply:
    parent: shop
    namespace: shop
    src: manifests/shop/
    wait: true
    on_failure: rollback      # a failed verdict starts the rollback at once, not at wait_timeout
    wait_rules:
      health_check_exprs:
        - apiVersion: kustomize.toolkit.fluxcd.io/v1
          kind: Kustomization
          current: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')
          failed: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')

- name: Preview another set, under a ConfigMap parent (run the play with --check --diff)
  applyset.kubernetes.applyset_apply:
    parent: configmaps/cache
    namespace: shop
    src:
      - manifests/cache/*.yaml
  check_mode: true

- name: Deploy into a namespace that may not exist yet; a changed migration Job is recreated
  applyset.kubernetes.applyset_apply:
    parent: argocd
    namespace: argocd
    src: manifests/argocd/
    create_namespace: true         # made like helm --create-namespace; not a member, so uninstall leaves it
    recreate_on_immutable: [Job]   # a Job whose template changed is deleted and created again

- name: Objects given inline, without pruning
  applyset.kubernetes.applyset_apply:
    parent: {kind: ConfigMap, name: settings-set}
    namespace: shop
    prune: false
    definition:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: settings}
        data: {mode: fast}

- name: A set across namespaces under a cluster-scoped custom resource parent
  applyset.kubernetes.applyset_apply:
    parent:
      apiVersion: example.com/v1
      kind: ApplySet
      metadata: {name: platform}
    src: manifests/platform/

- name: Take over a set that kubectl made
  applyset.kubernetes.applyset_apply:
    parent: shop
    namespace: shop
    src: manifests/shop/
    takeover: true

- name: Take over a release installed with helm install (preview it first with --check)
  applyset.kubernetes.applyset_apply:
    parent: shop
    namespace: shop
    src: rendered/shop.yaml        # helm template shop chart/ -n shop --values values.yaml
    helm:
      release_name: shop
      take_over: true

- name: Nightly drift check (check mode), leaving the replicas an autoscaler sets to it
  applyset.kubernetes.applyset_apply:
    parent: shop
    namespace: shop
    src: manifests/shop/
    ignore_fields:
      - {kind: Deployment, group: apps, json_pointers: [/spec/replicas]}
  check_mode: true
  register: nightly   # nightly.objects[].drift says why each member differs, changed_by who changed it

- name: Preview; a person approves the plan it shows
  applyset.kubernetes.applyset_apply:
    parent: shop
    namespace: shop
    src: manifests/shop/
  check_mode: true
  register: preview   # preview.plan_id, preview.plan

- name: Apply exactly what was approved, or fail before any write naming what changed since
  applyset.kubernetes.applyset_apply:
    parent: shop
    namespace: shop
    src: manifests/shop/
    approved_plan: "{{ preview }}"   # or preview.plan_id alone

- name: Remove the whole set
  applyset.kubernetes.applyset_apply:
    parent: shop
    namespace: shop
    state: absent

# example: not run: needs the chart repository on the network (tests/integration/test_helm_charts.py renders charts)
- name: Deploy a Helm chart from its repository, rendered with the cluster's Capabilities
  applyset.kubernetes.applyset_apply:
    parent: web          # also the release name
    namespace: apps
    helm:
      chart: podinfo
      repo: https://stefanprodan.github.io/podinfo
      version: 6.14.1
      values:
        replicaCount: 2
      values_files: [/etc/deploy/podinfo-prod.yaml]

# example: not run: needs the OCI registry on the network
- name: Deploy a chart from an OCI registry with helm 4 at a path of its own
  applyset.kubernetes.applyset_apply:
    parent: cert-manager
    namespace: cert-manager
    create_namespace: true
    helm:
      chart: oci://quay.io/jetstack/charts/cert-manager
      version: v1.19.1
      values: {crds: {enabled: true}}
      binary: /opt/helm4/helm
    guard:
      allow_prune_kinds: [CustomResourceDefinition]
"""

RETURN = r"""
applyset:
  description:
    - The set's identity and its recorded scope after the run.
    - Empty when the parent could not be resolved or read (a parent error); then RV(error) says why.
  returned: always
  type: dict
  contains:
    id:
      description: The ApplySet ID, C(applyset-<hash>-v1).
      type: str
      sample: applyset-0eFHV8ySqp7XoShsGvyWFQD3s96yqwHmzc4e0HR1dsY-v1
    parent:
      description: apiVersion, kind, name and namespace of the parent.
      type: dict
      sample: {apiVersion: v1, kind: Secret, name: shop, namespace: shop}
    tooling:
      description: The parent's tooling annotation as it is after the run; this collection's value once the run has
        written the parent (a new parent, a takeover). In check mode, and for O(state=absent) or O(state=disbanded),
        as found before the run (null for a parent that does not exist).
      type: str
      sample: applyset.kubernetes/0.1.0
    group_kinds:
      description:
        - The group-kinds the parent records after the run, as C(Kind.group); in check mode, what a real run would
          leave. After a failed run, what the parent still records (the union of the old and new ones when members
          were touched).
      type: list
      elements: str
      sample: [ConfigMap, Deployment.apps]
    namespaces:
      description: The namespaces the parent records after the run, the parent's own included (as for RV(applyset.group_kinds)).
      type: list
      elements: str
      sample: [shop]
    adopted:
      description: With O(adopt_legacy), the objects of the legacy prune set taken into the set (desired or pruned).
      type: list
      elements: str
      returned: when O(adopt_legacy) is set
      sample: [ConfigMap shop/banner, Deployment shop/web]
    helm_take_over:
      description:
        - With O(helm.take_over), what the take-over does (in check mode, would do). C(found) is false when Helm
          keeps no record of the release (never installed, or already taken over).
        - C(adopted) the release's objects the manifests contain, C(dropped) those they no longer contain (pruned
          under the prune rules, see RV(objects)), C(field_managers) Helm's field managers whose fields became
          ours, C(records) the release's Secrets and C(retired) whether they were deleted.
        - In check mode, C(removes) names, per object, the fields the real run removes (Helm's C(meta.helm.sh/*)
          annotations, fields only Helm set that the manifests do not; fields the server defaults again are not
          listed); the diff shows the objects without them.
      type: dict
      returned: when O(helm.take_over) is true
      sample: {release: shop, namespace: shop, found: true, revision: 3, status: deployed,
               chart: {name: shop, version: 1.2.0, appVersion: "2.0"}, adopted: [ConfigMap shop/shop-settings],
               dropped: [Secret shop/shop-token], field_managers: [helm],
               records: [sh.helm.release.v1.shop.v1, sh.helm.release.v1.shop.v2, sh.helm.release.v1.shop.v3],
               retired: true, removes: {ConfigMap shop/shop-settings: [.metadata.annotations.meta.helm.sh/release-name]}}
    chart_crds:
      description:
        - "With O(helm.chart) and CRDs in the chart's C(crds/), what the run did with them (in check mode, would do)
          under O(helm.crds) (C(policy)): C(created), C(replaced), C(left) as they were, C(adopted) (replaced, but
          never applied by this collection before). They are no members of the set."
      type: dict
      returned: when the chart has CRDs in crds/
      sample: {policy: Create, created: [widgets.shop.example.com], replaced: [], left: [], adopted: []}
summary:
  description: How many objects got each action.
  returned: always
  type: dict
  sample: {created: 2, configured: 1, unchanged: 5, pruned: 1, kept: 0, skipped: 0, failed: 0}
objects:
  description:
    - One entry per object, in the order the actions happened.
    - C(action) is one of C(created), C(configured), C(replaced) (deleted and created again, see
      I(recreate_on_immutable)), C(unchanged), C(pruned), C(kept) (protected by an annotation
      and removed from the set), C(skipped) (controlled by another object, left alone; or, in a run that stopped, a
      member never tried, with the C(reason)), C(disbanded) or C(failed).
    - A run that stops lists every member of its plan, so the C(summary) adds up to the plan's size.
    - A namespace made for I(create_namespace) is listed as C(created) with a C(reason); it is no member.
    - C(drift) (members, in check mode and real runs alike) says why the member differs from what this collection
      last applied, from what the run listed (no extra request) - C(none); C(manifest_changed) (the body sent differs
      from the one last applied, by the digest annotation; a new member too); C(cluster_changed) (a field this
      collection sets is now owned by another field manager, or a value differs); C(both); C(missing) (a member the
      parent records that was deleted out of band; it is created again, unlike a new one).
    - C(changed_by) lists, for C(cluster_changed) and C(both), each field manager holding fields this collection sets -
      C(manager), C(operation), C(time) (its last write, from managedFields; left out when the entry has none),
      C(fields) and C(subresource).
    - C(drift_left_to_others) is C(true) when every field in C(changed_by) is one O(ignore_fields) leaves to its owner.
    - Values are compared in the form the API server stores them (C(stringData) as C(data), quantities such as
      C(1000m) as C(1), zero values the server drops), so they are no drift.
    - C(ignored_fields) lists what each O(ignore_fields) pointer did - C(pointer), C(action) (C(left to others),
      C(kept live value) or C(left out)) and C(owners).
    - In check mode, a member whose apply conflicts with another field manager is previewed as a forced dry run and
      reported with a C(reason) saying that a real run refuses it without O(force_conflicts); the preview does not fail.
    - C(readiness_rule) (with O(wait), and in check mode) names the rule the member is judged by, the first that applies of
      C(annotation) (its C(applyset.kubernetes.ansible/ready-when) annotation), C(health_check_exprs[N]),
      C(override KEY), C(built-in) (the kind's own rule), C(library NAME) (the bundled library, for example
      C(library Certificate.cert-manager.io)), C(generic) (a Ready or Available condition) or C(none) (a kind with
      nothing to wait for); a C(failed-when) annotation alone shows as C(annotation failed-when, then RULE).
  returned: always
  type: list
  elements: dict
  sample:
    - {apiVersion: apps/v1, kind: Deployment, namespace: shop, name: web, action: configured, uid: 0b5c...,
       drift: cluster_changed, changed_by: [{manager: kubectl-patch, operation: Update, time: "2026-11-25T04:42:34Z",
       fields: [".spec.template.spec.containers[name=web].image"]}]}
    - {apiVersion: v1, kind: ConfigMap, namespace: shop, name: old, action: pruned}
hooks:
  description:
    - The hook objects the run ran (or, in check mode, would run), in the order they ran; hooks are objects
      annotated C(applyset.kubernetes.ansible/hook), C(helm.sh/hook) or C(argocd.argoproj.io/hook), which are
      not members of the set (see the user guide, "Hooks").
    - Each has C(phase) (C(pre-apply), C(post-apply), C(on-failure), C(pre-delete), C(post-delete)), C(apiVersion),
      C(kind), C(namespace), C(name), C(weight), C(delete_policy) and C(action) (C(completed), C(failed); in check
      mode C(would run) or C(would run on failure)); C(deleted) when it was deleted by its policy, C(replaced) when
      an earlier run's object was deleted first, C(reason) when there is one.
    - Hooks run only in runs that write members; a re-run with nothing to change has none.
  returned: when hooks ran or would run
  type: list
  elements: dict
  sample:
    - {phase: pre-apply, apiVersion: batch/v1, kind: Job, namespace: shop, name: migrate, weight: -5,
       delete_policy: [before-hook-creation, hook-succeeded], action: completed, replaced: false, deleted: true}
requests:
  description:
    - How many requests the run sent to the API server (C(sent), retries included) and how many of them
      were writes (C(writes), POST, PUT, PATCH and DELETE, server-side dry runs included).
    - C(round_trips) is how many round trips the run waited for one after another, its critical path.
      Requests sent together count once, and a request sent after another's answer counts one more.
      On a cluster far away, each costs one network round trip.
    - A re-run with nothing to change sends C(writes=0) with I(reapply=changed); one that only updates
      members sends one write per updated member.
  returned: when the run started (not for bad options or a failed connection)
  type: dict
  sample: {sent: 5, writes: 0, round_trips: 4}
order:
  description:
    - The order of a set whose members carry C(config.kubernetes.io/depends-on) or
      C(argocd.argoproj.io/sync-wave) annotations, one line per wave and per dependency, as the real
      run takes it (check mode shows the same lines). See "Order inside a set" in the user guide.
  returned: when a member carries one of those annotations
  type: list
  elements: str
  sample: ["Deployment shop/web waits for Job shop/migrate to be applied and ready (config.kubernetes.io/depends-on)",
           "Deployment shop/web waits for Secret shop/tls (outside the set) to be ready: waited for, not applied
           (config.kubernetes.io/depends-on)"]
diff:
  description: Before/after entries of every created, changed or pruned object, when diff mode is on.
  returned: when diff mode is on
  type: list
  elements: dict
plan_id:
  description:
    - The id of the run's plan, C(plan-v1:) and 24 hex digits, a digest of what a real run does, computed after
      the reads and before the first write, from RV(plan). The same manifests and options on the same cluster
      state give the same id, in check mode and in a real run; give it (or RV(plan)) as O(approved_plan).
    - Not in it, so not changing it, are resourceVersions, timestamps, status, and fields other managers set
      that the run does not send (a label someone added).
  returned: when the run got as far as its decisions, before any write (also when O(approved_plan) refused it)
  type: str
  sample: plan-v1:3f1c9a0b5e27d4c8a6b1f2e3
plan:
  description:
    - What RV(plan_id) digests, sorted, one entry per object. C(object) names it (C(Kind.group namespace/name));
      C(action) is C(apply), C(uninstall) or C(disband) for the set (with its C(id)), C(create), C(configure),
      C(unchanged) or C(skip) for a member (with C(body), the digest of the body it sends, and C(wave) and
      C(after) when ordered), C(prune), C(keep) or C(leave) for a prune candidate and C(delete), C(keep), C(leave)
      or C(unlabel) for a member of an uninstall or disband (with its C(uid)), C(adopt), C(create-namespace),
      C(run-hook) for each hook that runs (with its C(phase), C(body) and C(weight)), and C(retire-helm-release)
        for a Helm release O(helm.take_over) takes over (with its C(revision) and C(status)).
    - A Secret's values are not in C(body) (its keys are); its entry has C(values), a keyed digest (HMAC-SHA256)
      of them whose key is random and kept in the parent Secret's data, never shown, so that nobody can test a
      guess of a value against it. A set gets its key at the first run that writes its parent; until then, and
      for a ConfigMap or custom-resource parent, Secret entries have no C(values) and a warning says so.
    - A member to C(configure) has C(start), the digest of the live values of the fields its body sends, as read
      before the preview; a change there on the cluster since changes the plan, fields only others set do not.
  returned: with RV(plan_id)
  type: list
  elements: dict
  sample:
    - {object: ApplySet Secret shop/shop, action: apply, id: "applyset-...-v1"}
    - {object: ConfigMap shop/banner, action: prune, uid: 0f4c...}
    - {object: Deployment.apps shop/web, action: configure, body: 3q2-7wAbCdEfGhIj, start: Qm9vT3c2WmRkM1pV}
    - {object: Secret shop/db, action: create, body: Hx81c0dQfT2LwPzA, values: u0Jk3dP-sV9aQe1L}
omitted:
  description:
    - How many entries of RV(objects), RV(plan) and RV(diff) the result left out (see O(result_detail)), per list;
      the lists keep their order. RV(summary) still counts every member.
  returned: when O(result_detail) or O(result_max_bytes) left entries out
  type: dict
  sample: {objects: 23950, plan: 23950}
rollback_plan_id:
  description:
    - With O(on_failure=rollback), the plan id of the rollback a failed release started; RV(plan_id) and RV(plan)
      stay the failed release's (the approved ones).
  returned: when a failed release was rolled back (or its rollback failed too)
  type: str
  sample: plan-v1:0c9d2e4f6a8b1c3d5e7f9a0b
check_mode:
  description:
    - Whether the run was a preview (check mode), whose RV(plan_id) is what an approver approves. Given because
      C(ansible_check_mode) follows C(--check) only, not a play's or a task's C(check_mode) keyword.
  returned: with RV(plan_id)
  type: bool
  sample: true
revision:
  description: The number of the revision this run recorded in the set's history (see O(history_max)).
  returned: when the run recorded one
  type: int
  sample: 3
rolled_back_to:
  description: With O(on_failure=rollback), the revision a failed release returned the set to.
  returned: when a failed release was rolled back
  type: int
  sample: 2
error:
  description:
    - On failure, the error with the object it is about and how to fix it.
    - "When a wait, gate or hook failed, C(details.unready) lists each object not ready with its
      C(reason), its latest Warning C(events) and its C(pods): each with its C(phase) and its failing
      C(containers) (C(container), C(reason), C(message), C(restarts)); with I(failure_logs), each
      failing container also has C(log) (its last lines, at most 20, and C(previous) when they are the
      log of the container before a restart) or C(log_unavailable) (why the log could not be read)."
  returned: failed
  type: dict
  sample: {type: ParentError, message: "...", object: "parent secrets./shop", fix: "..."}
"""

import dataclasses  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

# First: the collection's module_utils below are then compiled once per host, not on every run.
from ansible_collections.applyset.kubernetes.plugins.module_utils import bytecode_cache  # noqa: E402

bytecode_cache.install()

from ansible_collections.applyset.kubernetes.plugins.module_utils.ansible_support import (  # noqa: E402
    check_names,
    connect,
    fail_from_error,
    fail_missing_library,
    fail_option,
    health_check_exprs,
    module_argument_spec,
    options_from,
    protected_helm_values,
    protected_helm_set_values,
    protected_src_contents,
    start,
    wait_rules_spec,
    warn_all,
)

# What the run needs to start reading the cluster (connect() adds kube.client, check_names() inputs.names,
# options.py nothing else). The rest of the engine is imported in main(), after the early reads went out
# (early.py): they travel while Python compiles it.
from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.run import early, phases  # noqa: E402
from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.run.options import (  # noqa: E402
    GuardLimits, HelmSettings, Options, SetDependency, WaitOptions)
from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.errors import ApplySetError  # noqa: E402


def argument_spec():
    return module_argument_spec(
        parent=dict(type="raw", required=True),
        namespace=dict(type="str"),
        src=dict(type="list", elements="str"),
        definition=dict(type="raw"),
        state=dict(type="str", choices=["present", "absent", "disbanded"], default="present"),
        prune=dict(type="bool", default=True),
        force_conflicts=dict(type="bool", default=False),
        field_manager=dict(type="str", default="applyset.kubernetes"),
        field_validation=dict(type="str", choices=["Strict", "Warn", "Ignore"], default="Strict"),
        reapply=dict(type="str", choices=["changed", "always"], default="changed"),
        config_digest=dict(type="bool", default=False),
        versioned_keep=dict(type="int", default=3),
        versioned=dict(type="list", elements="str", default=[]),
        wait_for_sets=dict(type="list", elements="dict", default=[], options=dict(
            parent=dict(type="raw", required=True), namespace=dict(type="str"), revision=dict(type="int"),
            ready=dict(type="bool", default=False), ready_expr=dict(type="str"))),
        ignore_fields=dict(type="list", elements="dict", default=[], options=dict(
            kind=dict(type="str", required=True), group=dict(type="str"), name=dict(type="str"),
            namespace=dict(type="str"), json_pointers=dict(type="list", elements="str", required=True))),
        create_namespace=dict(type="bool", default=False),
        recreate_on_immutable=dict(type="list", elements="str", default=[]),
        takeover=dict(type="bool", default=False),
        adopt=dict(type="bool", default=False),
        adopt_legacy=dict(
            type="dict",
            options=dict(
                selector=dict(type="str", required=True),
                kinds=dict(type="list", elements="str"),
                allow_helm=dict(type="bool", default=False),
            ),
        ),
        guard=dict(
            type="dict",
            default={},
            options=dict(
                allow_empty=dict(type="bool", default=False),
                max_prune_percent=dict(type="int", default=50),
                allow_prune_kinds=dict(type="list", elements="str", default=[]),
            ),
        ),
        parallelism=dict(type="int"),
        propagation_policy=dict(type="str", choices=["Background", "Foreground", "Orphan"], default="Background"),
        crd_timeout=dict(type="int", default=60),
        wait=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=300),
        wait_rules=wait_rules_spec(),
        failure_logs=dict(type="bool", default=True),
        claim_ttl=dict(type="int", default=60, aliases=["lock_ttl"]),
        claim_wait=dict(type="int", default=120, aliases=["lock_wait"]),
        history_max=dict(type="int", default=10),
        history_namespace=dict(type="str"),
        rollback_to=dict(type="str"),
        on_failure=dict(type="str", choices=["fail", "rollback"], default="fail"),
        rollback_timeout=dict(type="int", default=300),
        provenance=dict(type="dict"),
        approved_plan=dict(type="raw"),
        result_detail=dict(type="str", choices=["auto", "changed", "summary", "full"], default="auto"),
        result_max_bytes=dict(type="int", default=600000),
        helm=dict(type="dict", options=dict(
            chart=dict(type="str"), repo=dict(type="str"), version=dict(type="str"),
            release_name=dict(type="str"), namespace=dict(type="str"), values=dict(type="dict", default={}),
            values_files=dict(type="list", elements="path", default=[]), include_crds=dict(type="bool", default=True),
            binary=dict(type="str", default="helm"), take_over=dict(type="bool", default=False),
            lookup=dict(type="bool", default=True),
            crds=dict(type="str", choices=["Skip", "Create", "CreateReplace"], default="Create"),
            set_values=dict(type="list", elements="dict", no_log=False, options=dict(
                value=dict(type="str", required=True, no_log=False),
                value_type=dict(type="str", choices=["raw", "string", "json", "file"], default="raw"))),
            skip_schema_validation=dict(type="bool", default=False),
            dependency_update=dict(type="bool", default=False, aliases=["dep_up"]),
            repo_username=dict(type="str", aliases=["chart_repo_username"]),
            repo_password=dict(type="str", no_log=True, aliases=["chart_repo_password"]),
            pass_credentials=dict(type="bool", default=False, no_log=False), chart_ca_cert=dict(type="path"),
            chart_ssl_cert_file=dict(type="path"), chart_ssl_key_file=dict(type="path", no_log=False),
            insecure_skip_tls_verify=dict(type="bool", default=False, aliases=["skip_tls_certs_check"]),
            plain_http=dict(type="bool", default=False))),
    )


# The parameters that become a field of the run's Options (see ansible_support.options_from):
# (parameter, Options field, conversion). Options.problems and Options.validate check the values.
# adopt_legacy and the history settings are typed objects of the rules and the history, made by
# legacy_options and history_settings once the early reads went out.
OPTIONS = (
    ("field_manager", "field_manager", None),
    ("force_conflicts", "force_conflicts", None),
    ("field_validation", "field_validation", None),
    ("prune", "prune", None),
    ("propagation_policy", "propagation_policy", None),
    ("takeover", "takeover", None),
    ("adopt", "adopt", None),
    ("guard.allow_empty", "guard.allow_empty", None),
    ("guard.max_prune_percent", "guard.max_prune_percent", None),
    ("guard.allow_prune_kinds", "guard.allow_prune_kinds", frozenset),
    ("crd_timeout", "crd_timeout", float),
    ("wait", "waiting.enabled", None),
    ("wait_timeout", "waiting.timeout", float),
    ("failure_logs", "waiting.failure_logs", None),
    ("wait_rules.fail_closed", "waiting.rules.fail_closed", None),
    ("wait_rules.overrides", "waiting.rules.overrides", lambda overrides: overrides or None),
    ("wait_rules.load_balancers", "waiting.rules.wait_for_load_balancers", None),
    ("claim_ttl", "claim_ttl", float),
    ("claim_wait", "claim_wait", float),
    ("create_namespace", "create_namespace", None),
    ("recreate_on_immutable", "recreate_on_immutable", frozenset),
    ("reapply", "reapply", None),
    ("config_digest", "config_digest", None),
    ("versioned_keep", "versioned_keep", None),
    ("versioned", "versioned", tuple),
    ("wait_for_sets", "wait_for_sets", lambda entries: tuple(SetDependency(**entry) for entry in entries)),
    ("ignore_fields", "ignore_fields", tuple),
    ("approved_plan", "approved_plan", None),
)


def load_manifests(params, definition, src_contents=None):
    """Load and validate the input (before any write); ``src_contents``: the vaulted ``src``
    files, decrypted by the action plugin (see ``manifests.load_sources``)."""
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import manifests
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import manifest_checks

    loaded = []
    if params["src"]:
        loaded += manifests.load_sources(params["src"], contents=src_contents)
    if definition is not None:
        loaded += manifests.load_definition(definition)
    manifest_checks.validate(loaded)
    return loaded


# The annotation prefix of the per-object readiness rules (applyset.kubernetes.ansible/ready-when, ...).
READINESS_ANNOTATIONS = "applyset.kubernetes.ansible/"


def input_with_readiness_rules(module, definition):
    """The manifests, read and their ready-when / failed-when annotations checked before the first
    request, when the input may carry such annotations (its text names their prefix); else None,
    and the input is read while the early reads travel. A bad CEL annotation is refused without
    a single request, as a bad wait_rules expression is."""
    params = module.params
    if params["state"] != "present" or params["rollback_to"] is not None:
        return None
    contents = protected_src_contents(module)
    if not _names_readiness_annotations(params["src"], definition, contents):
        return None
    try:
        from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import manifests
        from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.wait import expressions
    except ImportError as err:  # PyYAML missing
        fail_missing_library(module, err)
    fail_missing_library(module, manifests.YAML_IMPORT_ERROR)
    desired = load_manifests(params, definition, contents)
    expressions.check_annotations((m.source, m.mapping) for m in desired)
    return desired


def _names_readiness_annotations(src, definition, contents) -> bool:
    """Whether the input's text names the readiness annotations' prefix (a cheap look, no YAML)."""
    import json

    if definition is not None:
        text = definition if isinstance(definition, str) else json.dumps(definition, default=str)
        if READINESS_ANNOTATIONS in text:
            return True
    if not src:
        return False
    import os

    try:
        from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import manifests
    except ImportError:
        return False  # said once the input is read
    files, _problems = manifests.source_files(src)  # the problems are said when the input is read
    for path, _shown in files:
        try:
            data = contents.get(os.path.realpath(path))
            if data is None:
                with open(path, "rb") as handle:
                    data = handle.read()
        except OSError:
            continue
        if any(READINESS_ANNOTATIONS.encode(codec) in data for codec in ("utf-8", "utf-16-le", "utf-16-be")):
            return True
    return False


def legacy_options(params):
    if not params:
        return None
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.rules import legacy

    return legacy.LegacyAdoption(selector=params["selector"], kinds=tuple(params["kinds"] or legacy.DEFAULT_KINDS),
                                 allow_helm=params["allow_helm"])


def main():
    phases.start_from_env()  # APPLYSET_PHASE_TIMES=FILE: where the time goes, to FILE (run/phases.py)
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    # Secret data never goes to no_log_values (that would mask every equal word in the output);
    # it is kept out of results by structure instead. See protected_input().
    definition, kubeconfig = start(module)
    options = checked_options(module, definition)
    phases.lap("arguments")
    runs = []  # the engines of the run: one, or two when a failed release rolled back
    try:
        check_names(module)  # the engine may take this over
        desired = input_with_readiness_rules(module, definition)
        client, connect_error = connect_and_read_early(module, kubeconfig)
        phases.watch_client(client)
        phases.lap("connect")
        try:
            from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset import engine
            from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import manifests
        except ImportError as err:  # PyYAML missing
            fail_missing_library(module, err)
        fail_missing_library(module, manifests.YAML_IMPORT_ERROR)
        # Made now, not with the other options: they import the rules, after the early reads.
        options = dataclasses.replace(options, adopt_legacy=legacy_options(params["adopt_legacy"]),
                                      history=history_settings(module))
        if params["state"] == "present" and desired is None:
            if params["rollback_to"] is not None:
                definition = []
            desired = load_manifests(params, definition, protected_src_contents(module))
        elif params["state"] == "absent" and (params["src"] is not None or definition is not None):
            desired = load_manifests(params, definition, protected_src_contents(module))  # for its delete hooks
        if connect_error is not None:
            raise connect_error  # after the input's own problems, as before the early reads
        phases.lap("imports and input")

        def make_engine(opts):
            runs.append(engine.Engine(client, params["parent"], params["namespace"], opts))
            return runs[-1]

        if params["state"] == "present":
            report = engine.apply_or_roll_back(make_engine, options, desired)
        elif params["state"] == "absent":
            report = make_engine(options).uninstall(desired)
        else:
            report = make_engine(options).disband()
        phases.lap("run")
    except ApplySetError as err:
        # A failed run raises; what it did until then comes with the error (err.report).
        partial = err.report
        if partial is not None:
            warn_all(module, partial.warnings)
        result = partial.to_dict() if partial is not None else {"changed": False}
        result.update(_revisions(runs, err))
        carried = [partial.warnings if partial is not None else [], str(err), getattr(err, "details", None)]
        fail_from_error(module, err, **_shape(result, module, failed=True, carried=carried))
    warn_all(module, report.warnings)
    module.exit_json(**_shape(dict(report.to_dict(), **_revisions(runs)), module, carried=report.warnings))


def checked_options(module, definition):
    """The run's ``Options`` from the parameters (``OPTIONS``), their values checked
    (``Options.problems``) before any request, as is what the parameters ask together. The
    history and adopt_legacy are added after the early reads; the engine checks them."""
    params = module.params
    fields = options_from(params, OPTIONS, dry_run=module.check_mode, diff=module._diff)
    waiting, guard = fields.pop("waiting"), GuardLimits(**fields.pop("guard"))
    exprs = health_check_exprs(params["wait_rules"])
    if exprs:  # only then: a run without CEL rules passes the same rule keywords as before them
        waiting["rules"]["health_check_exprs"] = exprs
    options = Options(**fields, guard=guard, waiting=WaitOptions(**waiting),
                      **helm_options(params, protected_helm_values(module), helm_set_values(module)))
    problems = options.problems()
    if problems:
        fail_option(module, *problems[0])  # one at a time, in the order of Options.problems
    target = params["rollback_to"]
    rollback_revision(target, module)
    if params["state"] == "present":
        chart = (params["helm"] or {}).get("chart")
        if params["helm"] is not None and chart is None and not params["helm"]["take_over"]:
            fail_option(module, "helm", "helm needs chart (a chart to render) or take_over (a Helm release to take "
                        "over)", "give helm.chart, or helm.take_over: true with the set's src or definition")
        if chart is not None and (target is not None or params["src"] is not None or definition is not None):
            fail_option(module, "helm", "helm renders the set's input: it goes with neither src, definition nor "
                        "rollback_to", "give the chart alone; to roll back, give rollback_to without helm")
        if target is not None and (params["src"] is not None or definition is not None):
            fail_option(module, "rollback_to", "rollback_to applies a revision of the history, not src or "
                        "definition", "give either rollback_to or src/definition")
        if (target is None and params["src"] is None and definition is None and chart is None
                and not params["guard"]["allow_empty"]):
            fail_option(module, "state", "state=present needs src or definition",
                        "give src or definition; to empty the set on purpose set guard.allow_empty: true")
    return options


def helm_set_values(module):
    """``helm.set_values`` (carried hidden by the action plugin, so not checked by the argument spec)
    as ``inputs.helm_chart.SetValue``s; fails the module for an item that is not ``{value, value_type}``."""
    items = protected_helm_set_values(module)
    if not items:  # the chart's module is imported only when it is used: the early reads go first
        return ()
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs.helm_chart import SET_FLAGS, SetValue

    found = []
    for number, item in enumerate(items, 1):
        value_type = item.get("value_type") or "raw" if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(item.get("value"), str) or value_type not in SET_FLAGS \
                or set(item) - {"value", "value_type"}:
            fail_option(module, "helm.set_values", f"item {number} is not {{value: KEY=VALUE, value_type: "
                        f"{'|'.join(SET_FLAGS)}}}", "give each item as kubernetes.core.helm's set_values takes it")
        found.append(SetValue(value=item["value"], value_type=str(value_type)))
    return tuple(found)


def helm_options(params, values, set_values=()):
    """The ``helm`` option as the ``Options`` field ``helm`` (``HelmSettings``): the release (the name
    defaults to the parent's), ``take_over``, and with a chart the chart (``inputs.helm_chart.Chart``)
    with ``values`` (``protected_helm_values``) rendered in the release's namespace (given, or the
    set's); {} without helm."""
    helm = params["helm"]
    if helm is None:
        return {}
    release = helm["release_name"] or parent_name(params["parent"])
    settings = HelmSettings(release=release, namespace=helm["namespace"], take_over=helm["take_over"])
    if helm["chart"] is None:  # a take-over of objects given as src or definition
        return {"helm": settings}
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs.helm_chart import Chart, RepoAccess

    namespace = helm["namespace"] or params["namespace"] or parent_namespace(params["parent"])
    chart = Chart(chart=helm["chart"], release=release, namespace=namespace, repo=helm["repo"], version=helm["version"],
                  values=values, values_files=tuple(helm["values_files"] or ()),
                  include_crds=helm["include_crds"], binary=helm["binary"], lookup=helm["lookup"],
                  crds=helm["crds"], set_values=set_values, skip_schema_validation=helm["skip_schema_validation"],
                  dependency_update=helm["dependency_update"], access=RepoAccess(
                      username=helm["repo_username"], password=helm["repo_password"],
                      pass_credentials=helm["pass_credentials"], ca_file=helm["chart_ca_cert"],
                      cert_file=helm["chart_ssl_cert_file"], key_file=helm["chart_ssl_key_file"],
                      insecure_skip_tls_verify=helm["insecure_skip_tls_verify"], plain_http=helm["plain_http"]))
    return {"helm": dataclasses.replace(settings, chart=chart, namespace=namespace)}


def parent_name(parent):
    """The name the ``parent`` option gives: ``[RESOURCE][.GROUP]/NAME`` or a reference or object dict."""
    if isinstance(parent, str):
        return parent.partition("/")[2] or parent
    if isinstance(parent, dict):
        return (parent.get("metadata") or {}).get("name") or parent.get("name")
    return None


def parent_namespace(parent):
    """The namespace a ``parent`` reference or object dict gives (None for a ``RESOURCE/NAME`` string)."""
    if isinstance(parent, dict):
        return parent.get("namespace") or (parent.get("metadata") or {}).get("namespace")
    return None


def rollback_revision(target, module):
    """``rollback_to`` as ``history.Settings`` takes it: a number, ``previous`` or None; text that is
    neither, or no revision number (0), fails ``module`` before any request."""
    if target is None or target == "previous":
        return target
    if not target.isdigit() or int(target) < 1:
        fail_option(module, "rollback_to", f"must be a revision number or previous, not {target!r}",
                    "list the revisions with applyset_info (revisions: true)")
    return int(target)


def connect_and_read_early(module, kubeconfig):
    """``(client, error)``: the client, and the reads that need no manifests sent from a thread
    (early.py); a connection setting that fails is the error, raised once the input was read."""
    params = module.params
    try:
        client = connect(module, kubeconfig)
    except ApplySetError as err:
        return None, err
    applies = params["state"] == "present" and params["rollback_to"] is None
    early.start(client, params["parent"], params["namespace"], takeover=params["takeover"], lists=applies,
                list_whole=bool(module._diff or module.check_mode or params["reapply"] == "changed"
                                or params["ignore_fields"] or params["approved_plan"] is not None))
    return client, None


def history_settings(module):
    """The history options as ``history.Settings`` (``rollback_to`` parsed by ``rollback_revision``)."""
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.history import (
        revisions as history, provenance,
    )

    params = module.params
    return history.Settings(max=params["history_max"], namespace=params["history_namespace"],
                            provenance=provenance.gather(params["provenance"], params["src"]),
                            rollback_to=rollback_revision(params["rollback_to"], module),
                            on_failure=params["on_failure"], rollback_timeout=float(params["rollback_timeout"]))


def _revisions(runs, err=None):
    """``revision`` (what the last run recorded) and ``rolled_back_to`` for the result."""
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset import engine

    shown = {}
    recorded = runs[-1].recorded_revision if runs else None
    if recorded is not None:
        shown["revision"] = recorded
    if isinstance(err, engine.RolledBack):
        shown["rolled_back_to"] = err.revision
    return shown


def _shape(result, module, failed=False, carried=()):
    """The result to return: no diff outside diff mode, no Secret data, and the detail and size that
    ``result_detail`` and ``result_max_bytes`` ask (``carried``: what the result will also carry,
    the warnings and the error, counted in the size)."""
    if not module._diff:
        result.pop("diff", None)
    if failed and module.check_mode:
        result["changed"] = False  # a preview that fails changed nothing, and its objects say what it found
    # The engine returns no Secret data; this makes sure of it for every path, by structure.
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import redact
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.run import result_budget

    params = module.params
    fitted = result_budget.fit(redact.hide_secret_data(result), params["result_detail"], params["result_max_bytes"],
                               reserved=result_budget.size_of(carried))
    if fitted.warning:
        module.warn(fitted.warning)
    return fitted.result


if __name__ == "__main__":
    main()
