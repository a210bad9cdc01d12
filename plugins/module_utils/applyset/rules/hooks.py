"""Hook objects: the input objects annotated to run at a moment of a run rather than to be members.

Three annotation families say that an object is a hook, read in this order (the first present
wins, as Argo CD ignores Helm's hook annotations on an object that has its own):

    applyset.kubernetes.ansible/hook   pre-apply, post-apply, on-failure, pre-delete, post-delete
    argocd.argoproj.io/hook            PreSync, Sync, PostSync, SyncFail, PreDelete, PostDelete, Skip
    helm.sh/hook                       pre-install, pre-upgrade, post-install, post-upgrade,
                                       pre-delete, post-delete (pre-/post-rollback, test: left out)

Several comma-separated values are allowed. Helm's install hooks run only when the set is
installed (its parent does not exist yet), its upgrade hooks only when it exists; the others on
both. The hooks of a phase run in the order their tool gives them: lower weight first
(``.../hook-weight``, ``helm.sh/hook-weight``, Argo CD's ``sync-wave``), then the kind in Helm's
install order (``HELM_KIND_ORDER``: a ServiceAccount and its RBAC before the Job that runs under
them; Argo CD's list adds two kinds), then the name. Helm sorts kinds it does not know last,
alphabetically; Argo CD puts them last too but goes straight to the name.

A delete policy (``before-hook-creation``, the default, ``hook-succeeded``, ``hook-failed``; Argo
CD's ``BeforeHookCreation``, ``HookSucceeded``, ``HookFailed``) says when the object is deleted.
When the ``hook-succeeded`` ones go differs by tool, and we follow each (``Hook.succeeded_scope``):
Helm (and our own annotation) deletes them once every hook of the phase succeeded, so a Job's
ServiceAccount hook outlives the Job; Argo CD once the whole run succeeded. hook_run.py does it.

Hook objects are no members: they get no part-of label, the parent's hint never counts them,
and no prune (ours or kubectl's) ever sees them. ``split`` takes them out of the input before
the plan; every annotation problem is refused there, before any write. hook_run.py runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from . import plan as plans
from .. import spec
from ..object_meta import KubeObject, ObjectMeta
from ..errors import ApplySetError, InputError, InputErrors
from ..inputs.manifests import Manifest
from ..kube.discovery import Discovery

PRE_APPLY, POST_APPLY, ON_FAILURE = "pre-apply", "post-apply", "on-failure"
PRE_DELETE, POST_DELETE = "pre-delete", "post-delete"
PHASES = (PRE_APPLY, POST_APPLY, ON_FAILURE, PRE_DELETE, POST_DELETE)

BEFORE_CREATION, SUCCEEDED, FAILED = "before-hook-creation", "hook-succeeded", "hook-failed"
DELETE_POLICIES = (BEFORE_CREATION, SUCCEEDED, FAILED)

# When a phase's hook runs: on every run, or only when the set is installed or upgraded (Helm).
ALWAYS, INSTALL, UPGRADE = "always", "install", "upgrade"

# When a hook-succeeded hook is deleted: once its phase succeeded (Helm's execHook), or once the
# run succeeded (Argo CD's sync: after the last phase).
AFTER_PHASE, AFTER_RUN = "phase", "run"

# The kinds in the order Helm installs them (helm.sh/helm pkg/releaseutil InstallOrder); a hook
# phase is sorted by it within a weight. Argo CD's sync order (gitops-engine pkg/sync) is the same
# list with SecretList after Secret and IngressClass before Ingress.
HELM_KIND_ORDER = (
    "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy", "PodDisruptionBudget",
    "ServiceAccount", "Secret", "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
    "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList",
    "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController",
    "ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "Ingress", "APIService")
ARGO_KIND_ORDER = HELM_KIND_ORDER[:8] + ("SecretList",) + HELM_KIND_ORDER[8:31] + ("IngressClass",) + HELM_KIND_ORDER[31:]
# One rank per kind for both tools, so that a phase mixing them still sorts one way; Helm's
# own order is the same on its kinds.
_RANK = {kind: i for i, kind in enumerate(ARGO_KIND_ORDER)}
_HELM_KINDS = frozenset(HELM_KIND_ORDER)

OWN_HOOK = spec.OWN_PREFIX + "hook"
OWN_WEIGHT = spec.OWN_PREFIX + "hook-weight"
OWN_DELETE_POLICY = spec.OWN_PREFIX + "hook-delete-policy"
HOOK_OF = spec.OWN_PREFIX + "hook-of"  # the set's id, on every hook object (an annotation, no label)
HELM_HOOK, HELM_WEIGHT, HELM_DELETE_POLICY = "helm.sh/hook", "helm.sh/hook-weight", "helm.sh/hook-delete-policy"
ARGO_HOOK, ARGO_WAVE, ARGO_DELETE_POLICY = ("argocd.argoproj.io/hook", "argocd.argoproj.io/sync-wave",
                                            "argocd.argoproj.io/hook-delete-policy")

Moment = tuple[str, str]
"""When a hook runs: ``(phase, when)``, ``when`` being ``ALWAYS``, ``INSTALL`` or ``UPGRADE``."""

# value -> (phase, when); None: a known value this collection leaves out (warned about).
_OWN: dict[str, Moment | None] = {p: (p, ALWAYS) for p in PHASES}
_HELM = {"pre-install": (PRE_APPLY, INSTALL), "pre-upgrade": (PRE_APPLY, UPGRADE),
         "post-install": (POST_APPLY, INSTALL), "post-upgrade": (POST_APPLY, UPGRADE),
         "pre-delete": (PRE_DELETE, ALWAYS), "post-delete": (POST_DELETE, ALWAYS),
         "pre-rollback": None, "post-rollback": None, "test": None, "test-success": None, "test-failure": None}
_ARGO = {"PreSync": (PRE_APPLY, ALWAYS), "Sync": (POST_APPLY, ALWAYS), "PostSync": (POST_APPLY, ALWAYS),
         "SyncFail": (ON_FAILURE, ALWAYS), "PreDelete": (PRE_DELETE, ALWAYS), "PostDelete": (POST_DELETE, ALWAYS),
         "Skip": None}
_OWN_POLICIES = {p: p for p in DELETE_POLICIES}
_ARGO_POLICIES = {"BeforeHookCreation": BEFORE_CREATION, "HookSucceeded": SUCCEEDED, "HookFailed": FAILED}

# (hook annotation, its values, weight annotation, delete-policy annotation, its values): one family.
Family = tuple[str, dict[str, "Moment | None"], str, str, dict[str, str]]

# The families, in the order read.
FAMILIES: tuple[Family, ...] = ((OWN_HOOK, _OWN, OWN_WEIGHT, OWN_DELETE_POLICY, _OWN_POLICIES),
                                (ARGO_HOOK, _ARGO, ARGO_WAVE, ARGO_DELETE_POLICY, _ARGO_POLICIES),
                                (HELM_HOOK, _HELM, HELM_WEIGHT, HELM_DELETE_POLICY, _OWN_POLICIES))


@dataclass(frozen=True)
class Hook:
    """One hook object: ``desired``, what is sent (a ``plan.DesiredObject`` whose body has its
    namespace defaulted, the hook-of annotation and no part-of label), its ``index`` in the input,
    its ``moments`` (``(phase, when)`` pairs), ``weight``, ``delete_policies`` and the annotation
    family it was read from (``tool``: ``OWN_HOOK``, ``ARGO_HOOK`` or ``HELM_HOOK``)."""

    desired: plans.DesiredObject
    index: int
    moments: tuple[Moment, ...]
    weight: int
    delete_policies: frozenset[str]
    tool: str = HELM_HOOK

    @property
    def succeeded_scope(self) -> str:
        """When a hook-succeeded policy deletes it: ``AFTER_RUN`` for Argo CD's, else ``AFTER_PHASE``."""
        return AFTER_RUN if self.tool == ARGO_HOOK else AFTER_PHASE

    @property
    def order_key(self) -> tuple:
        """Its place in its phase as its tool sorts: weight, kind order (unknown kinds last), name."""
        kind, name = self.desired.resource.kind, self.desired.name
        if self.tool == ARGO_HOOK:
            return (self.weight, _RANK.get(kind, len(_RANK)), "", name)
        known = kind in _HELM_KINDS
        return (self.weight, _RANK[kind] if known else len(_RANK), "" if known else kind, name)

    def runs_in(self, phase: str, installing: bool) -> bool:
        """Whether this hook runs in ``phase`` of a run that installs the set (or upgrades it)."""
        return any(p == phase and when in (ALWAYS, INSTALL if installing else UPGRADE) for p, when in self.moments)


@dataclass(frozen=True)
class HookSet:
    """The hooks of a run in input order, and what was left out of the run (``skipped``: Argo
    CD's Skip, Helm's rollback and test hooks) with a warning each (``warnings``)."""

    hooks: tuple[Hook, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)
    installing: bool = False  # the parent did not exist when the run read it (Helm's install hooks)
    started: bool = False  # the pre-apply hooks' step began (the on-failure hooks may then run)
    ran: tuple = ()  # (Hook, its result entry) of each hook run so far, in order (hook_run.py)

    def of_phase(self, phase: str, installing: bool) -> list[Hook]:
        """The hooks of ``phase``, in the order they run (``Hook.order_key``)."""
        return sorted((h for h in self.hooks if h.runs_in(phase, installing)), key=lambda h: h.order_key)


NO_HOOKS = HookSet()


def _family(meta: ObjectMeta) -> tuple[Family | None, dict[str, str]]:
    annotations = meta.get("annotations") or {}
    for family in FAMILIES:
        if family[0] in annotations:
            return family, annotations
    return None, annotations


def _values(text: object) -> list[str]:
    return [v.strip() for v in str(text).split(",") if v.strip()]


def _where(m: Manifest, discovery: Discovery, default_namespace: str | None) -> str:
    """``source (Kind namespace/name)``, as input errors name an object (``Kind name`` when the kind
    is cluster-scoped; the manifest's namespace when the server does not serve the kind)."""
    res = discovery.for_gvk(m.group, m.version, m.kind)
    namespace = m.metadata.get("namespace")
    if res is not None:
        namespace = (namespace or default_namespace) if res.namespaced else None
    return f"{m.source} ({m.kind} {namespace}/{m.name})" if namespace else f"{m.source} ({m.kind} {m.name})"


def _parse(m: Manifest, name_it: Callable[[], str], problems: list[ApplySetError],
           warnings: list[str]) -> tuple[tuple[Moment, ...], int, frozenset[str], str] | None:
    """``(moments, weight, policies, hook annotation)`` of manifest ``m``; None for a member; ``()``
    moments for an object left out of the run. Problems go to ``problems``, named by ``name_it()`` (``_where``)."""
    family, annotations = _family(m.metadata)
    if family is None:
        return None
    hook_key, known, weight_key, policy_key, policies_known = family
    where = name_it()
    moments: list[Moment] = []
    left_out: list[str] = []
    for value in _values(annotations[hook_key]) or [""]:
        moment = known.get(value)
        if value not in known:
            problems.append(InputError(
                f"annotation {hook_key}: unknown value {value!r}; accepted: {', '.join(known)}", obj=where,
                fix=f"use one of {', '.join(known)} (several separated by commas)"))
        elif moment is None:
            left_out.append(value)
        elif moment not in moments:
            moments.append(moment)
    if left_out and not moments:
        warnings.append(f"{where}: {hook_key}: {', '.join(left_out)} is not run by this collection; the object "
                        "is left out of the run (neither applied nor pruned)")
    weight = 0
    if annotations.get(weight_key) not in (None, ""):
        try:
            weight = int(str(annotations[weight_key]).strip())
        except ValueError:
            problems.append(InputError(f"annotation {weight_key}: {annotations[weight_key]!r} is not an integer",
                                       obj=where, fix="give a whole number, for example \"-5\" or \"10\""))
    policies = set()
    for value in _values(annotations.get(policy_key) or ""):
        if value not in policies_known:
            problems.append(InputError(
                f"annotation {policy_key}: unknown value {value!r}; accepted: {', '.join(policies_known)}",
                obj=where, fix=f"use one of {', '.join(policies_known)} (several separated by commas)"))
        else:
            policies.add(policies_known[value])
    return tuple(moments), weight, frozenset(policies or {BEFORE_CREATION}), hook_key


def split(manifests: list[Manifest], discovery: Discovery, applyset_id: str,
          default_namespace: str | None) -> tuple[list[Manifest], HookSet]:
    """The members of ``manifests`` (in input order) and their hooks.

    Raises:
        InputErrors: every unknown hook value, weight or delete policy, a hook of an unknown kind
            or without a namespace, the same hook twice; all at once, before anything is sent.
    """
    members: list[Manifest] = []
    hooks: list[Hook] = []
    problems: list[ApplySetError] = []
    warnings: list[str] = []
    seen: set[spec.ObjectId] = set()
    for index, m in enumerate(manifests):
        parsed = _parse(m, lambda: _where(m, discovery, default_namespace), problems, warnings)
        if parsed is None:
            members.append(m)
            continue
        moments, weight, policies, tool = parsed
        if not moments:
            continue
        try:
            built = plans.build([m], discovery, applyset_id, default_namespace)
        except InputErrors as err:
            problems += err.errors
            continue
        desired = built.members[0]
        warnings += built.warnings
        if desired.key in seen:
            problems.append(InputError("the same hook object appears twice", obj=f"{m.source} ({desired.ref})",
                                       fix="keep one copy of each object"))
            continue
        seen.add(desired.key)
        desired.body = _hook_body(desired.body, applyset_id)
        hooks.append(Hook(desired=desired, index=index, moments=moments, weight=weight, delete_policies=policies,
                          tool=tool))
    problems += _hooks_also_members(members, discovery, default_namespace, seen)
    if problems:
        raise InputErrors(problems)
    return members, HookSet(tuple(hooks), tuple(warnings))


def _hooks_also_members(members: list[Manifest], discovery: Discovery, default_namespace: str | None,
                        hook_keys: set[spec.ObjectId]) -> list[InputError]:
    """An object given twice, once as a hook and once as a member, would be applied twice with
    different labels: refused."""
    problems = []
    for m in members:
        res = discovery.for_gvk(m.group, m.version, m.kind)
        if res is None or not hook_keys:
            continue
        key = spec.ObjectId.of(res, (m.metadata.get("namespace") or default_namespace) if res.namespaced else None, m.name)
        if key in hook_keys:
            problems.append(InputError("the same object is given as a hook and as a member of the set",
                                       obj=_where(m, discovery, default_namespace),
                                       fix="keep one copy: with the hook annotation (a hook) or without (a member)"))
    return problems


def _hook_body(body: KubeObject, applyset_id: str) -> KubeObject:
    """A member's body turned into a hook's: without our part-of label, with the hook-of annotation."""
    meta = dict(body["metadata"])
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != spec.LABEL_PART_OF}
    meta.pop("labels", None)
    if labels:
        meta["labels"] = labels
    meta["annotations"] = {**(meta.get("annotations") or {}), HOOK_OF: applyset_id}
    return {**body, "metadata": meta}
