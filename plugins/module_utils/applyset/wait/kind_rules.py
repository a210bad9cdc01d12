"""Readiness of the other built-in kinds, the generic rule, and which kinds have a rule at all.

``RULES`` maps each built-in GroupKind with a rule of its own to it (the workloads' are in
``workload_rules``); ``ALWAYS_READY`` are the kinds with nothing to wait for (waiting does not
even read them); ``conditions_ready`` is the generic rule for everything else: a ``Ready`` or
``Available`` condition that is True for the current generation, or no status at all (ready,
unless the caller asks to fail closed on custom resources). Tests: tests/unit/wait/test_kind_rules.py.
"""

from __future__ import annotations

from ..object_meta import KubeObject, generation_of
from .. import spec
from ..spec import GroupKind
from .status import Readiness
from .status_fields import conditions_by_type, explain, generation_not_observed, is_true, spec_of, status_of
from .workload_rules import daemonset_ready, deployment_ready, job_ready, pod_ready, replicaset_ready, statefulset_ready


def pvc_ready(obj: KubeObject) -> Readiness:
    """A PersistentVolumeClaim ``obj`` is ready when Bound; ``FAILED`` when Lost."""
    phase = status_of(obj).get("phase")
    if phase == "Bound":
        return Readiness.current("Bound")
    if phase == "Lost":
        return Readiness.failed("Lost: its PersistentVolume is gone")
    return Readiness.in_progress(f"phase {phase or 'Pending'}, not Bound")


def crd_ready(obj: KubeObject) -> Readiness:
    """A CustomResourceDefinition ``obj`` is ready when Established. ``FAILED`` when its
    names were not accepted.
    """
    conditions = conditions_by_type(obj)
    if is_true(conditions.get("Established")):
        return Readiness.current("Established")
    names = conditions.get("NamesAccepted")
    if names and names.get("status") == "False":
        return Readiness.failed(f"names not accepted: {explain(names)}")
    return Readiness.in_progress("not Established yet")


def namespace_ready(obj: KubeObject) -> Readiness:
    """A Namespace ``obj`` is ready when Active (not Terminating)."""
    phase = status_of(obj).get("phase")
    if phase == "Active":
        return Readiness.current("Active")
    return Readiness.in_progress(f"phase {phase or 'unknown'}, not Active")


def load_balancer_ready(obj: KubeObject) -> Readiness:
    """A Service ``obj`` of type LoadBalancer is ready once it has an address; other types always are.

    The message names the address.
    """
    service_type = spec_of(obj).get("type") or "ClusterIP"
    if service_type != "LoadBalancer":
        return Readiness.current(f"type {service_type}")
    ingress = ((status_of(obj).get("loadBalancer") or {}).get("ingress")) or []
    found = [entry.get("ip") or entry.get("hostname") for entry in ingress if isinstance(entry, dict)]
    addresses: list[str] = [address for address in found if address]
    if addresses:
        return Readiness.current(f"load balancer at {', '.join(addresses)}")
    return Readiness.in_progress("waiting for a load balancer address")


def conditions_ready(obj: KubeObject) -> Readiness:
    """The generic rule for ``obj``: a current status whose Ready (or else Available) condition is True.

    No status at all, or neither condition, is ready; ``Stalled`` or ``Reconciling`` True is not
    (Stalled is ``FAILED``).
    """
    if not status_of(obj):
        return Readiness.current("no status to check")
    stale = generation_not_observed(obj, required=False)
    if stale:
        return Readiness.in_progress(stale)
    conditions = conditions_by_type(obj)
    # kstatus' abnormal-true conditions: the controller says it is not done.
    # Stalled is kstatus' Failed: the controller gave up, so waiting stops at once (cli-utils
    # pkg/kstatus/status/core.go, checkGenericProperties).
    if is_true(conditions.get("Stalled")):
        return Readiness.failed(f"Stalled: {explain(conditions['Stalled'])}")
    if is_true(conditions.get("Reconciling")):
        return Readiness.in_progress(f"Reconciling: {explain(conditions['Reconciling'])}")
    generation = generation_of(obj)
    for kind in ("Ready", "Available"):
        condition = conditions.get(kind)
        if not condition:
            continue
        observed = condition.get("observedGeneration")
        if isinstance(observed, int) and isinstance(generation, int) and observed < generation:
            return Readiness.in_progress(f"condition {kind} is from generation {observed}, not {generation}")
        if condition.get("status") == "True":
            return Readiness.current(kind)
        return Readiness.in_progress(f"{kind} is {condition.get('status')}: {explain(condition)}")
    return Readiness.current("no Ready or Available condition")


RULES = {
    GroupKind("apps", "Deployment"): deployment_ready,
    GroupKind("apps", "StatefulSet"): statefulset_ready,
    GroupKind("apps", "DaemonSet"): daemonset_ready,
    GroupKind("apps", "ReplicaSet"): replicaset_ready,
    spec.JOB_KIND: job_ready,
    GroupKind("", "Pod"): pod_ready,
    GroupKind("", "PersistentVolumeClaim"): pvc_ready,
    spec.CRD_KIND: crd_ready,
    spec.NAMESPACE_KIND: namespace_ready,
    spec.SERVICE_KIND: load_balancer_ready,  # only with wait_for_load_balancers, see readiness.verdict
}

# Built-in kinds with nothing to wait for: waiting does not even read them.
ALWAYS_READY = frozenset({
    spec.CONFIGMAP_KIND,
    spec.SECRET_KIND,
    GroupKind("", "ServiceAccount"),
    GroupKind("", "LimitRange"),
    GroupKind("", "ResourceQuota"),
    GroupKind("", "Endpoints"),
    GroupKind("rbac.authorization.k8s.io", "Role"),
    GroupKind("rbac.authorization.k8s.io", "RoleBinding"),
    GroupKind("rbac.authorization.k8s.io", "ClusterRole"),
    GroupKind("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    GroupKind("networking.k8s.io", "NetworkPolicy"),
    GroupKind("networking.k8s.io", "IngressClass"),
    GroupKind("scheduling.k8s.io", "PriorityClass"),
    GroupKind("storage.k8s.io", "StorageClass"),
    GroupKind("node.k8s.io", "RuntimeClass"),
    GroupKind("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    GroupKind("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
})

# API groups served by Kubernetes itself; any other group holds custom resources.
# (Listed, not matched by suffix: CRDs such as gateway.networking.k8s.io end in .k8s.io too.)
BUILTIN_GROUPS = frozenset({
    "", "apps", "batch", "autoscaling", "policy", "extensions",
    "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io",
    "authentication.k8s.io", "authorization.k8s.io", "certificates.k8s.io", "coordination.k8s.io",
    "discovery.k8s.io", "events.k8s.io", "flowcontrol.apiserver.k8s.io", "internal.apiserver.k8s.io",
    "networking.k8s.io", "node.k8s.io", "rbac.authorization.k8s.io", "resource.k8s.io",
    "scheduling.k8s.io", "storage.k8s.io", "storagemigration.k8s.io", "metrics.k8s.io",
})


def is_custom(group_kind: GroupKind) -> bool:
    """Whether ``group_kind`` is a custom resource: its group is not one Kubernetes itself serves."""
    return group_kind.group not in BUILTIN_GROUPS
