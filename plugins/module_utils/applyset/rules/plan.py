"""Desired manifests + discovery + parent -> a Plan: what to apply, in which order, where to look for prune.

Every input problem that needs the server's knowledge (unknown kinds, duplicates
after namespace defaulting) is found here, before the first write. A namespace on
a cluster-scoped object is dropped with a warning, as kubectl drops it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ..object_meta import KubeObject, annotations_of, metadata_of
from .. import spec
from ..errors import InputError, InputErrors
from ..kube.discovery import Discovery, Resource
from ..inputs.manifests import Manifest
from ..spec import GroupKind


# Apply order, lowest first; prune runs in the reverse order. Kinds not listed
# get RANK_OTHER_CLUSTER (cluster-scoped) or RANK_OTHER (namespaced). Definitions
# come before what uses them, workloads after their config, and webhooks last so
# that they never block the objects that serve them.
#
# Ranks fix the order of the report and of prune; the barriers of an apply sit only
# between *phases* (phase_of), where one object needs another to exist first:
#   0. CRDs, then their Established wait: custom resources need their endpoints;
#   1. Namespaces: namespaced objects cannot be created before their namespace;
#   2. configuration, identity, policy, PVCs and Services (ranks 2..5): a workload's
#      pods need their ConfigMaps, Secrets, ServiceAccount, quota and priority class,
#      so a ConfigMap that fails still stops the Deployment that would use it;
#   3. workloads and the rest (ranks 6..8: HPA, PDB, Ingress, custom resources), which
#      go together: these name their target and do not need it to exist first;
#   4. webhooks and admission policies (RANK_LAST), after everything they could block.
# Within a phase all members are applied at once; a failed member stops later phases.
RANK_CRD, RANK_NAMESPACE, RANK_OTHER_CLUSTER, RANK_OTHER, RANK_LAST = 0, 1, 2, 7, 9
RANK_WORKLOADS = 6  # first rank of the phase that needs its configuration in place
RANK_TABLE = {
    spec.CRD_KIND: RANK_CRD,
    spec.NAMESPACE_KIND: RANK_NAMESPACE,
    # cluster-scoped configuration
    GroupKind("scheduling.k8s.io", "PriorityClass"): 2,
    GroupKind("storage.k8s.io", "StorageClass"): 2,
    GroupKind("", "PersistentVolume"): 2,
    GroupKind("rbac.authorization.k8s.io", "ClusterRole"): 2,
    GroupKind("rbac.authorization.k8s.io", "ClusterRoleBinding"): 2,
    # namespaced configuration, identity and policy
    GroupKind("", "ResourceQuota"): 3,
    GroupKind("", "LimitRange"): 3,
    GroupKind("", "ServiceAccount"): 3,
    spec.SECRET_KIND: 3,
    spec.CONFIGMAP_KIND: 3,
    GroupKind("rbac.authorization.k8s.io", "Role"): 3,
    GroupKind("rbac.authorization.k8s.io", "RoleBinding"): 3,
    GroupKind("networking.k8s.io", "NetworkPolicy"): 3,
    GroupKind("", "PersistentVolumeClaim"): 4,
    spec.SERVICE_KIND: 5,
    # workloads
    GroupKind("apps", "Deployment"): RANK_WORKLOADS,
    GroupKind("apps", "StatefulSet"): RANK_WORKLOADS,
    GroupKind("apps", "DaemonSet"): RANK_WORKLOADS,
    GroupKind("apps", "ReplicaSet"): RANK_WORKLOADS,
    GroupKind("", "ReplicationController"): RANK_WORKLOADS,
    GroupKind("", "Pod"): RANK_WORKLOADS,
    spec.JOB_KIND: RANK_WORKLOADS,
    GroupKind("batch", "CronJob"): RANK_WORKLOADS,
    GroupKind("autoscaling", "HorizontalPodAutoscaler"): 7,
    GroupKind("policy", "PodDisruptionBudget"): 7,
    GroupKind("networking.k8s.io", "Ingress"): 7,
    GroupKind("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): RANK_LAST,
    GroupKind("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): RANK_LAST,
    GroupKind("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): RANK_LAST,
    GroupKind("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): RANK_LAST,
}

# Kinds whose prune loses data or many objects at once; the guard refuses them by default.
PROTECTED_KINDS = frozenset({
    spec.CRD_KIND, spec.NAMESPACE_KIND, GroupKind("", "PersistentVolume"), GroupKind("", "PersistentVolumeClaim"),
})


# Per-object update strategy, on the manifest. The key follows kapp's kapp.k14s.io/update-strategy;
# the value says exactly when the object is deleted and created again: only when the server
# refuses the change as immutable (kapp's fallback-on-replace, Flux's force: enabled, Argo CD's
# Replace=true applied on failure). "apply" opts one object out of recreate_on_immutable.
ANNOTATION_UPDATE_STRATEGY = spec.OWN_PREFIX + "update-strategy"
STRATEGY_RECREATE = "recreate-on-immutable"
STRATEGY_APPLY = "apply"
UPDATE_STRATEGIES = (STRATEGY_APPLY, STRATEGY_RECREATE)


def kind_matches(gk: GroupKind, names: Collection[str]) -> bool:
    """Whether ``names`` (kinds as the user writes them: ``Kind`` or ``Kind.group``) includes ``gk``."""
    return gk.kind in names or str(gk) in names


def update_strategy(member: DesiredObject, recreate_kinds: Collection[str]) -> str:
    """How a refused immutable change of ``member`` is handled.

    Args:
        member: the desired object; its update-strategy annotation decides first.
        recreate_kinds: the recreate_on_immutable option (``Kind`` or ``Kind.group`` names).

    Returns:
        ``STRATEGY_RECREATE`` or ``STRATEGY_APPLY``.
    """
    value = annotations_of(member.body).get(ANNOTATION_UPDATE_STRATEGY)
    if value in UPDATE_STRATEGIES:
        return value
    return STRATEGY_RECREATE if kind_matches(member.resource.group_kind, recreate_kinds) else STRATEGY_APPLY


def recreate_problems(members: list[DesiredObject], recreate_kinds: Collection[str]) -> list[InputError]:
    """Input errors of the recreate settings: unknown annotation values, protected kinds.

    Args:
        members: the desired objects (``DesiredObject``).
        recreate_kinds: the recreate_on_immutable option.

    Returns:
        One ``InputError`` per problem; empty when the settings are fine.
    """
    problems = []
    protected = sorted(k for k in recreate_kinds
                       if any(k in (gk.kind, str(gk)) for gk in PROTECTED_KINDS))
    if protected:
        problems.append(InputError(
            f"recreate_on_immutable lists protected kinds: {', '.join(protected)}; deleting them loses data "
            "or many objects at once, so they are never recreated",
            obj="option recreate_on_immutable", fix="remove them from recreate_on_immutable"))
    for m in members:
        value = annotations_of(m.body).get(ANNOTATION_UPDATE_STRATEGY)
        if value is None:
            continue
        if value not in UPDATE_STRATEGIES:
            problems.append(InputError(
                f"annotation {ANNOTATION_UPDATE_STRATEGY} has the unknown value {value!r}",
                obj=f"{m.manifest.source} ({m.ref})", fix=f"use one of {', '.join(UPDATE_STRATEGIES)}"))
        elif value == STRATEGY_RECREATE and m.resource.group_kind in PROTECTED_KINDS:
            problems.append(InputError(
                f"annotation {ANNOTATION_UPDATE_STRATEGY}: {STRATEGY_RECREATE} on a protected kind: a "
                f"{m.resource.kind} is never deleted to be created again (its data or contents would be lost)",
                obj=f"{m.manifest.source} ({m.ref})", fix="remove the annotation; change such objects by hand"))
    return problems


def rank_of(gk: GroupKind, namespaced: bool) -> int:
    """The apply rank of a kind (``RANK_TABLE``, else by scope); prune goes in reverse rank order."""
    if gk in RANK_TABLE:
        return RANK_TABLE[gk]
    return RANK_OTHER if namespaced else RANK_OTHER_CLUSTER


def phase_of(rank: int) -> int:
    """The apply phase of a rank: members of one phase go together, phases one after the other
    (see the comment on ``RANK_TABLE``)."""
    if rank <= RANK_NAMESPACE:
        return rank  # 0: CRDs, 1: Namespaces
    if rank < RANK_WORKLOADS:
        return 2  # configuration, identity, policy, PVCs, Services
    if rank < RANK_LAST:
        return 3  # workloads and everything that names them
    return 4  # webhooks and admission policies


@dataclass
class DesiredObject:
    """One desired object, ready to send (live members are another type, in inventory.py).

    ``manifest`` is where it came from, ``resource`` what serves it, ``body`` what is sent (the
    manifest with our part-of label and its namespace set), ``rank`` its place in the apply order
    and ``crd_in_set`` whether its kind comes from a CRD that this run applies.
    """

    manifest: Manifest
    resource: Resource
    body: KubeObject  # what is sent: the manifest with our part-of label and the namespace set
    rank: int
    crd_in_set: bool = False  # its kind comes from a CRD that this run applies
    # field_policy.py: the manifest's body with the values of its ignored fields hidden; the digests
    # that say whether it changed (applied-digest, the history's) are of this, when set
    digest_source: KubeObject | None = None
    # ``key`` as computed for this body and resource (a run asks it a dozen times per member).
    _key: tuple = field(default=(None, None, None), init=False, repr=False, compare=False)

    @property
    def namespace(self) -> str | None:
        """Its namespace as sent; None when cluster-scoped."""
        return metadata_of(self.body).get("namespace")

    @property
    def name(self) -> str:
        """Its metadata.name."""
        return metadata_of(self.body)["name"]

    @property
    def key(self) -> spec.ObjectId:
        """Its identity, to match it with live objects."""
        body, resource, key = self._key
        if body is not self.body or resource is not self.resource:
            key = spec.ObjectId.of(self.resource, self.namespace, self.name)
            self._key = (self.body, self.resource, key)
        return key

    @property
    def ref(self) -> str:
        """``Kind namespace/name`` (``Kind name`` when cluster-scoped), as messages name objects."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.resource.kind} {where}"


@dataclass
class Plan:
    """The desired set resolved: its members in input order, grouped into ``ranks`` (apply order),
    the group-kinds and namespaces it covers, and ``warnings`` about input we changed."""

    members: list[DesiredObject]
    group_kinds: set[GroupKind]  # this run's group-kinds
    namespaces: set[str]  # namespaces holding this run's namespaced members
    ranks: list[list[DesiredObject]] = field(default_factory=list)  # member lists, in apply order
    warnings: list[str] = field(default_factory=list)  # input kubectl would accept but we changed

    def keys(self) -> set[spec.ObjectId]:
        """The ``ObjectId`` of every member."""
        return {m.key for m in self.members}

    @property
    def phases(self) -> list[list[DesiredObject]]:
        """Member lists to apply one after the other (``phase_of``), each in rank order, then
        input order: the order of ``ranks`` flattened, cut only where a barrier is needed."""
        by_phase: dict[int, list[DesiredObject]] = {}
        for rank_members in self.ranks:
            for member in rank_members:
                by_phase.setdefault(phase_of(member.rank), []).append(member)
        return [by_phase[p] for p in sorted(by_phase)]

    @property
    def in_apply_order(self) -> list[DesiredObject]:
        """The members in the order a run applies and records them: ``phases`` flattened."""
        return [member for phase in self.phases for member in phase]


# An API group, version and kind, as a manifest's apiVersion and kind name them: ``("apps", "v1", "Deployment")``.
GroupVersionKind = tuple[str, str, str]


def _resources_from_crds(manifests: list[Manifest]) -> dict[GroupVersionKind, Resource]:
    """Resources that CRDs in the input will define, keyed by (group, version, kind)."""
    defined = {}
    for m in manifests:
        if m.group_kind != spec.CRD_KIND:
            continue
        crd_spec = m.mapping.get("spec") or {}
        names = crd_spec.get("names") or {}
        group, kind, plural = crd_spec.get("group"), names.get("kind"), names.get("plural")
        if not (group and kind and plural):
            continue
        for version in crd_spec.get("versions") or []:
            if version.get("served", True) and version.get("name"):
                defined[(group, version["name"], kind)] = Resource(
                    group=group, version=version["name"], kind=kind, plural=plural,
                    namespaced=crd_spec.get("scope", "Namespaced") == "Namespaced",
                    verbs=frozenset({"get", "list", "create", "update", "patch", "delete"}),
                    singular=names.get("singular", ""),
                )
    return defined


def build(manifests: list[Manifest], discovery: Discovery, applyset_id: str, default_namespace: str | None,
          crds_applied_first: Sequence[Manifest] = ()) -> Plan:
    """Resolve every manifest to a resource and a namespace, and order them for applying.

    Args:
        manifests: the desired objects as loaded (``manifests.load_*``).
        discovery: what the server serves; kinds of CRDs in ``manifests`` count as served.
        applyset_id: the set's id, written into each object's part-of label.
        default_namespace: the namespace of namespaced objects that name none (may be None).
        crds_applied_first: CRDs the run applies before the members without making them members
            (a chart's ``crds/``): their kinds count as served too.

    Returns:
        The ``Plan``, its members in input order and grouped into ranks.

    Raises:
        InputErrors: every problem found (unknown kinds, a missing namespace, duplicates after
            namespace defaulting), all at once, before anything is sent.
    """
    from_crds = _resources_from_crds([*manifests, *crds_applied_first])
    problems: list[InputError] = []
    warnings: list[str] = []
    members: list[DesiredObject] = []
    seen: dict[spec.ObjectId, Manifest] = {}
    for m in manifests:
        res, crd_in_set = _resource_for(m, discovery, from_crds, problems)
        if res is None:
            continue
        body = _body_for(m, res, applyset_id, default_namespace, problems, warnings)
        if body is None:
            continue
        member = DesiredObject(manifest=m, resource=res, body=body, rank=rank_of(res.group_kind, res.namespaced),
                               crd_in_set=crd_in_set)
        if member.key in seen:
            problems.append(InputError(
                f"the same object appears twice (also in {seen[member.key].source})",
                obj=f"{m.source} ({member.ref})", fix="keep one copy of each object",
            ))
            continue
        seen[member.key] = m
        members.append(member)
    if problems:
        raise InputErrors(problems)
    by_rank: dict[int, list[DesiredObject]] = {}
    for member in members:
        by_rank.setdefault(member.rank, []).append(member)
    return Plan(
        members=members,
        group_kinds={m.resource.group_kind for m in members},
        namespaces={m.namespace for m in members if m.resource.namespaced and m.namespace},  # each has one
        ranks=[by_rank[r] for r in sorted(by_rank)],
        warnings=warnings,
    )


def _resource_for(m: Manifest, discovery: Discovery, from_crds: dict[GroupVersionKind, Resource],
                  problems: list[InputError]) -> tuple[Resource | None, bool]:
    """The resource serving ``m`` and whether a CRD of this run defines it; ``(None, False)``
    with an input error added to ``problems`` when nothing serves its kind."""
    res = discovery.for_gvk(m.group, m.version, m.kind)
    if res is not None:
        return res, False
    if (m.group, m.version, m.kind) in from_crds:
        # Not served yet: its CRD is created by this run, which says what it will be.
        return from_crds[(m.group, m.version, m.kind)], True
    served = sorted(r.api_version for r in discovery.with_kind(m.kind))
    hint = (f"; the server serves {m.kind} as {' or '.join(served)}" if served else
            "; add its CustomResourceDefinition to the set or install it first")
    problems.append(InputError(
        f"unknown kind {m.kind} in apiVersion {m.api_version}{hint}",
        obj=f"{m.source} ({m.ref})", fix="check apiVersion and kind",
    ))
    return None, False


def _body_for(m: Manifest, res: Resource, applyset_id: str, default_namespace: str | None,
              problems: list[InputError], warnings: list[str]) -> KubeObject | None:
    """What is sent for ``m``: its namespace defaulted or dropped, and our part-of label added.

    Like kubectl's resource builder, a namespaced object without metadata.namespace gets the
    default namespace, and the namespace of a cluster-scoped object is dropped (kubectl does so
    silently; we say so in ``warnings``).
    """
    meta = metadata_of(m.mapping).copy()
    namespace = meta.get("namespace")
    if res.namespaced:
        namespace = namespace or default_namespace
        if not namespace:
            problems.append(InputError(
                f"{res.kind} is namespaced but no namespace is given",
                obj=f"{m.source} ({m.ref})", fix="set metadata.namespace or the namespace option",
            ))
            return None
        meta["namespace"] = namespace
    elif "namespace" in meta:
        del meta["namespace"]
        if namespace:
            warnings.append(f"{m.source} ({res.kind} {m.name}): metadata.namespace {namespace!r} ignored: "
                            f"{res.kind} is cluster-scoped (kubectl ignores it too); remove it from the manifest")
    meta["labels"] = {**(meta.get("labels") or {}), spec.LABEL_PART_OF: applyset_id}
    body = dict(m.mapping)
    body["metadata"] = meta
    return body
