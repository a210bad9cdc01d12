"""Taking over a set that ``kubectl apply --prune -l SELECTOR`` managed (the legacy prune).

Before ApplySets, kubectl pruned by label selector: every object of its allowlist kinds that
matches the selector, lies in a namespace the run applied to (cluster-scoped kinds anywhere),
carries the ``last-applied-configuration`` annotation (it was made by ``kubectl apply``) and
was not applied by the run, is deleted (``k8s.io/kubectl`` ``pkg/cmd/apply/prune.go``).

On the run that creates the ApplySet, ``adopt_legacy`` selects exactly those objects and takes
them into the set, so that what left the manifests long ago is pruned in that same run, under
every safety rule of a prune (guard, keep annotations, foreign controllers, UID preconditions).
Objects Helm manages match such selectors too (Helm charts label ``app``), but Helm would
recreate or fight over them, so they are refused unless allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .. import spec
from .csa import LAST_APPLIED_ANNOTATION
from ..errors import InputError
from ..kube.discovery import Discovery, Resource
from ..spec import GroupKind
from .prune import ListedMeta

# kubectl's default prune allowlist (k8s.io/kubectl pkg/util/prune/prune.go).
DEFAULT_KINDS = (
    "ConfigMap", "Endpoints", "PersistentVolumeClaim", "Pod", "ReplicationController", "Secret", "Service",
    "Job.batch", "CronJob.batch", "Ingress.networking.k8s.io", "DaemonSet.apps", "Deployment.apps",
    "ReplicaSet.apps", "StatefulSet.apps", "Namespace", "PersistentVolume",
)
HELM_MANAGED_BY = ("app.kubernetes.io/managed-by", "Helm")
HELM_RELEASE_NAME = "meta.helm.sh/release-name"
HELM_RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"


@dataclass(frozen=True)
class LegacyAdoption:
    """The module's ``adopt_legacy`` option: the ``selector`` kubectl pruned with, the allowlist
    ``kinds`` (``Kind`` or ``Kind.group``; kubectl's default allowlist unless given) and whether
    objects Helm manages may be taken over (``allow_helm``)."""

    selector: str
    kinds: tuple[str, ...] = DEFAULT_KINDS
    allow_helm: bool = False

    def group_kinds(self) -> list[GroupKind]:
        """The allowlist as sorted ``GroupKind``s."""
        return sorted(spec.parse_group_kinds(",".join(self.kinds)))


@dataclass
class Selection:
    """What ``select`` made of the legacy LISTs: each entry a ``(resource, metadata)`` pair, with the
    other set's ID as a third item in ``elsewhere``."""

    adopted: list[tuple[Resource, ListedMeta]] = field(default_factory=list)  # taken into the set
    not_applied: list[tuple[Resource, ListedMeta]] = field(default_factory=list)  # not made by kubectl apply: left alone
    elsewhere: list[tuple[Resource, ListedMeta, str]] = field(default_factory=list)  # (..., other id): in another set


def helm_release(meta: ListedMeta) -> str | None:
    """The Helm release (``namespace/name``) that manages an object, from the Helm annotations or
    the ``managed-by: Helm`` label of its metadata ``meta``; None when Helm does not manage it."""
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    if HELM_RELEASE_NAME in annotations:
        namespace = annotations.get(HELM_RELEASE_NAMESPACE)
        return f"{namespace}/{annotations[HELM_RELEASE_NAME]}" if namespace else annotations[HELM_RELEASE_NAME]
    if labels.get(HELM_MANAGED_BY[0]) == HELM_MANAGED_BY[1]:
        return labels.get("app.kubernetes.io/instance") or "(unknown release)"
    return None


def select(listed: Iterable[tuple[Resource, ListedMeta]], applyset_id: str, options: LegacyAdoption,
           set_ref: str) -> Selection:
    """Sort what the legacy LISTs found into a ``Selection``.

    Args:
        listed: ``(resource, metadata)`` pairs of the objects matching the selector.
        applyset_id: the set's ID; objects labelled with it are ours already and skipped.
        options: the ``adopt_legacy`` options.
        set_ref: the set as messages name it (``parent_model.set_name``), for the error.

    Raises:
        InputError: before anything is written, for objects Helm manages (unless
            ``options.allow_helm``); ``details["helm_managed"]`` lists them.
    """
    selection = Selection()
    helm = []
    for res, meta in listed:
        part_of = (meta.get("labels") or {}).get(spec.LABEL_PART_OF)
        if part_of == applyset_id:
            continue  # ours already
        if LAST_APPLIED_ANNOTATION not in (meta.get("annotations") or {}):
            selection.not_applied.append((res, meta))
            continue
        if part_of:
            selection.elsewhere.append((res, meta, part_of))
            continue
        release = helm_release(meta)
        if release and not options.allow_helm:
            helm.append(f"{ref(res, meta)} (Helm release {release})")
            continue
        selection.adopted.append((res, meta))
    if helm:
        raise InputError(
            f"adopt_legacy.selector {options.selector} matches objects that Helm manages: " + ", ".join(helm[:10])
            + (f" and {len(helm) - 10} more" if len(helm) > 10 else ""),
            obj=set_ref,
            fix="narrow the selector so that it leaves the Helm release out (Helm would fight over them), "
            "or set adopt_legacy.allow_helm: true if the release is being retired; nothing was changed",
            details={"helm_managed": helm})
    return selection


def ref(res: Resource, meta: ListedMeta) -> str:
    """``Kind namespace/name`` of an object of resource ``res`` with metadata ``meta``, for messages."""
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{res.kind} {where}{meta['name']}"


def scope_kinds(options: LegacyAdoption, discovery: Discovery) -> tuple[list[Resource], list[GroupKind]]:
    """Split the allowlist of ``options`` by what ``discovery`` (a ``kube.Discovery``) serves.

    Returns ``(served resources to list, group kinds of the allowlist the server does not serve)``.
    """
    served: list[Resource] = []
    missing: list[GroupKind] = []
    for gk in options.group_kinds():
        res = discovery.for_group_kind(GroupKind(*gk))
        if res is not None:
            served.append(res)
        else:
            missing.append(gk)
    return served, missing
