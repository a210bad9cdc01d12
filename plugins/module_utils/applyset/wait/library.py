"""The bundled readiness library: how popular custom resources (and two built-in kinds) say done.

The generic rule (``kind_rules.conditions_ready``) reads a ``Ready`` or ``Available`` condition,
and calls an object without status ready: right for many kinds, wrong for those whose
controllers say more (a Rollout paused or degraded, a Certificate still issuing, a Gateway route
refused by one of its parents). Each entry here reads one kind the way its project documents it,
and answers a ``Readiness``: current, in progress, or failed with the
controller's own reason, which the waiting turns into a stop at once. ``needs_status`` says that
an object without a status is not ready yet (its controller has not looked at it).

Written in Python, not CEL: the library judges every member of every wait round, and a Python
rule costs a few microseconds where a cel-python expression costs about a millisecond
(docs/user-guide.md, "Readiness rules"). Each rule cites its source; tests/unit/wait/
test_library.py runs them over the status documents the projects (and Argo CD's
resource_customizations) publish, kept under tests/unit/wait/data/.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, TypeGuard, cast

from ..object_meta import Condition, KubeObject, annotations_of, conditions_of, generation_of
from ..spec import GroupKind
from . import delivery_rules, freshness
from .status import Readiness, Status
from .status_fields import ObjectSpec, ObjectStatus, conditions_by_type


# ----- what the rules share ---------------------------------------------------------------------


def _status(obj: KubeObject) -> ObjectStatus:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def _spec(obj: KubeObject) -> ObjectSpec:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def conditions_in(holder: Mapping[str, Any]) -> dict[str, Condition]:
    """The ``conditions`` of ``holder`` (a route parent, a listener) by type; an object's own are
    ``conditions_by_type``."""
    found: dict[str, Condition] = {}
    for condition in holder.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type"):
            found[condition["type"]] = cast(Condition, condition)
    return found


def _is(condition: Condition | None, status: str) -> TypeGuard[Condition]:
    return condition is not None and condition.get("status") == status


def explain(condition: Condition | KubeObject) -> str:
    """``reason: message`` of a condition (or event), whichever parts it has."""
    parts = [condition.get("reason"), condition.get("message")]
    return ": ".join(str(p).strip() for p in parts if p) or f"status {condition.get('status')}"


_as_int = freshness.as_int


def generation_behind(obj: KubeObject) -> str | None:
    """Why the status is older than the spec (``status.observedGeneration`` behind
    ``metadata.generation``, both present), or None."""
    generation = generation_of(obj)
    observed = _as_int(_status(obj).get("observedGeneration"))
    if generation is None or observed is None or observed >= generation:
        return None
    return f"waiting for the controller to observe generation {generation} (it has seen {observed})"


def _stale_condition(obj: KubeObject, condition: Condition) -> bool:
    generation = generation_of(obj)
    observed = _as_int(condition.get("observedGeneration"))
    return generation is not None and observed is not None and observed < generation


def controller_reason(obj: KubeObject) -> str:
    """What the object's controller says is wrong, for a failure's message: a Stalled condition, a
    Ready condition that is False, any other condition that is False, or the status' message."""
    conditions = conditions_by_type(obj)
    for kind in ("Stalled",):
        if _is(conditions.get(kind), "True"):
            return f"{kind}: {explain(conditions[kind])}"
    for kind in ("Ready", "Available"):
        if _is(conditions.get(kind), "False"):
            return f"{kind} False: {explain(conditions[kind])}"
    for kind, condition in conditions.items():
        if _is(condition, "False") and condition.get("reason"):
            return f"{kind} False: {explain(condition)}"
    message = _status(obj).get("message")
    return str(message) if message else ""


# ----- the rules ---------------------------------------------------------------------------------


def rollout(obj: KubeObject) -> Readiness:
    """Argo Rollouts' Rollout: ``status.phase`` (Healthy, Progressing, Paused, Degraded) since v1.0,
    replica counts before. Source: argo-rollouts pkg/apis/rollouts/v1alpha1/types.go (RolloutPhase,
    InvalidSpec and Progressing conditions), utils/conditions/conditions.go (RolloutAbortedReason,
    TimedOutReason), commit 9f8d111d8f8e3e88b6d7f8bbdf62fd3cd863ef9d; Argo CD argoproj.io/Rollout."""
    status, conditions = _status(obj), conditions_by_type(obj)
    stale = generation_behind(obj) or _workload_behind(obj)
    if stale:
        return Readiness.in_progress(stale)
    if _is(conditions.get("InvalidSpec"), "True"):
        return Readiness.failed(f"invalid spec: {explain(conditions['InvalidSpec'])}")
    progressing = conditions.get("Progressing") or {}
    if status.get("abort") or progressing.get("reason") == "RolloutAborted":
        return Readiness.failed(f"aborted: {explain(progressing) if progressing else status.get('message') or 'abort'}")
    if progressing.get("reason") == "ProgressDeadlineExceeded":
        return Readiness.failed(f"rollout failed: {explain(progressing)}")
    phase = status.get("phase")
    if phase == "Degraded":
        return Readiness.failed(f"Degraded: {status.get('message') or controller_reason(obj) or 'no message'}")
    if status.get("pauseConditions") or _spec(obj).get("paused") or phase == "Paused":
        why = ", ".join(str(p.get("reason")) for p in status.get("pauseConditions") or [] if isinstance(p, dict))
        return Readiness.in_progress(f"paused{': ' + why if why else ''} (waiting to be promoted or resumed)")
    if phase == "Healthy":
        return Readiness.current("Healthy")
    if phase == "Progressing":
        return Readiness.in_progress(f"Progressing: {status.get('message') or 'rollout in progress'}")
    return _rollout_by_replicas(obj)


def _workload_behind(obj: KubeObject) -> str | None:
    """A Rollout with ``spec.workloadRef`` also observes its Deployment's generation, which the
    controller records in an annotation and reports in ``status.workloadObservedGeneration``."""
    if not _spec(obj).get("workloadRef"):
        return None
    annotations = annotations_of(obj)
    wanted = _as_int(annotations.get("rollout.argoproj.io/workload-generation"))
    seen = _as_int(_status(obj).get("workloadObservedGeneration"))
    if wanted is None or wanted == seen:
        return None
    return f"waiting for the controller to observe generation {wanted} of the referenced workload (it has seen {seen})"


def _rollout_by_replicas(obj: KubeObject) -> Readiness:
    """Rollouts before v1.0 report no phase: the replica counts and the stable ReplicaSet say it."""
    status, spec = _status(obj), _spec(obj)
    replicas = spec.get("replicas")
    want = replicas if isinstance(replicas, int) else 1
    updated, available = status.get("updatedReplicas") or 0, status.get("availableReplicas") or 0
    if updated < want:
        return Readiness.in_progress(f"{updated}/{want} replicas updated")
    if available < updated:
        return Readiness.in_progress(f"{available}/{updated} updated replicas available")
    if (status.get("replicas") or 0) > updated:
        return Readiness.in_progress(f"{status['replicas'] - updated} old replicas pending termination")
    strategy, current = spec.get("strategy") or {}, status.get("currentPodHash")
    stable = status.get("stableRS") or (status.get("canary") or {}).get("stableRS")
    if "blueGreen" in strategy and (status.get("blueGreen") or {}).get("activeSelector") not in (None, current):
        return Readiness.in_progress("switching the active service to the new ReplicaSet")
    if "canary" in strategy and stable and current and stable != current:
        return Readiness.in_progress("canary steps not finished (the stable ReplicaSet is not the current one)")
    steps = ((spec.get("strategy") or {}).get("canary") or {}).get("steps")
    index = status.get("currentStepIndex")
    if isinstance(steps, list) and isinstance(index, int) and index < len(steps):
        return Readiness.in_progress(f"canary step {index + 1} of {len(steps)}")
    return Readiness.current(f"{available}/{want} replicas available")


# The reasons cert-manager's readiness controller writes Ready False with: the checks of its readiness
# policy chain, which are those of the trigger policy chain (the expiry check aside), whose violation
# makes the trigger controller set Issuing True and reissue. Ready False with one of them is a reissue
# on its way (a DNS name added: RequestChanged), not a failure. Source: cert-manager
# internal/controller/certificates/policies/policies.go (NewReadinessPolicyChain,
# NewTriggerPolicyChain), checks.go and constants.go, commit 2d0d7f7f74241a9cbf79f0e2a7bb247238ee09fd.
_CERT_REISSUE = frozenset({"DoesNotExist", "MissingData", "InvalidKeyPair", "InvalidCertificate",
                           "InvalidCertificateRequest", "SecretMismatch", "IncorrectIssuer", "IncorrectCertificate",
                           "RequestChanged", "Renewing", "Expired"})
# Ready reasons of cert-manager before v1.0 (and Argo CD's fixtures) for an issuance on its way.
_CERT_WAITING = _CERT_REISSUE | {"Pending", "InProgress", "Issuing"}


def certificate(obj: KubeObject) -> Readiness:
    """cert-manager's Certificate: ``Issuing`` True is in progress; Issuing False is a failed issuance
    (its reason is the CertificateRequest's: Failed, Denied, InvalidRequest...; cert-manager backs off
    for an hour), except ``Issued``, which its server-side-apply mode writes after a success. Then
    ``Ready`` decides: False with a reason of the readiness policy chain is a reissue on its way, any
    other reason (ConfigError of cert-manager < 1.0...) the controller refusing. A condition of an
    earlier generation (cert-manager records it per condition) is ignored. Source: cert-manager
    pkg/controller/certificates/issuing/issuing_controller.go (failIssueCertificate,
    updateOrApplyStatus), pkg/apis/certmanager/v1/types_certificate.go (CertificateConditionReady,
    CertificateConditionIssuing), commit 2d0d7f7f74241a9cbf79f0e2a7bb247238ee09fd; Argo CD
    cert-manager.io/Certificate."""
    conditions = conditions_by_type(obj)
    issuing, ready = conditions.get("Issuing"), conditions.get("Ready")
    if issuing is not None and _stale_condition(obj, issuing):
        issuing = None  # the outcome of an issuance for an earlier spec
    if _is(issuing, "True"):
        return Readiness.in_progress(f"Issuing: {explain(issuing)}{_also(ready)}")
    if _is(issuing, "False") and issuing.get("reason") != "Issued":
        return Readiness.failed(f"Issuing False: {explain(issuing)}{_also(ready)}")
    found = _ready_condition(obj, conditions, waiting_reasons=_CERT_WAITING)
    if found.status is Status.IN_PROGRESS and _is(ready, "False") and ready.get("reason") in _CERT_REISSUE:
        return Readiness.in_progress(f"{found.message} (cert-manager reissues the certificate on this reason)")
    return found


def _also(condition: Condition | None) -> str:
    return f"; Ready {condition.get('status')}: {explain(condition)}" if condition else ""


def issuer(obj: KubeObject) -> Readiness:
    """cert-manager's Issuer and ClusterIssuer: the ``Ready`` condition; False is the issuer's
    configuration or its CA refusing (ErrRegisterACMEAccount, ErrInitIssuer...). Source: cert-manager
    pkg/apis/certmanager/v1/types_issuer.go (IssuerConditionReady), pkg/issuer/*/setup.go, commit
    2d0d7f7f74241a9cbf79f0e2a7bb247238ee09fd; Argo CD cert-manager.io/Issuer."""
    return _ready_condition(obj, conditions_by_type(obj), waiting_reasons=("Pending",))


def _ready_condition(obj: KubeObject, conditions: dict[str, Condition],
                     waiting_reasons: Collection[str] = ()) -> Readiness:
    ready = conditions.get("Ready")
    if ready is None:
        return Readiness.in_progress("no Ready condition yet")
    if _stale_condition(obj, ready):
        return Readiness.in_progress(f"Ready is from generation {ready.get('observedGeneration')}")
    if _is(ready, "True"):
        return Readiness.current(f"Ready: {explain(ready)}")
    if _is(ready, "False") and ready.get("reason") not in waiting_reasons:
        return Readiness.failed(f"Ready False: {explain(ready)}")
    return Readiness.in_progress(f"Ready {ready.get('status')}: {explain(ready)}")


# CloudNativePG's phases that wait for a person: PhaseUnrecoverable, PhaseCannotCreateClusterObjects,
# PhaseImageCatalogError, PhaseUnknownPlugin, PhaseFailurePlugin (a plugin that keeps failing;
# the operator retries every 15 s, to no avail until the plugin is fixed), PhaseArchitectureBinaryMissing,
# PhaseWaitingForUser and PhaseDefinitionInvalid (the definition the webhook would have refused).
# Source: cloudnative-pg api/v1/cluster_types.go (Phase*), api/v1/cluster_funcs.go (SetAdmissionError),
# internal/controller/cluster_controller.go, commit a95a534dbe0854495b863bbc1b7651f74d310916.
_CNPG_STUCK = frozenset({
    "Cluster is unrecoverable and needs manual intervention",
    "Unable to create required cluster objects",
    "Cluster has incomplete or invalid image catalog",
    "Cluster cannot proceed to reconciliation due to an unknown plugin being required",
    "Cluster cannot proceed to reconciliation due to an error while interacting with plugins",
    "Invalid cluster definition",
    "Cluster cannot execute instance online upgrade due to missing architecture binary",
    "Waiting for user action",
})


def cnpg_cluster(obj: KubeObject) -> Readiness:
    """CloudNativePG's Cluster: ``Cluster in healthy state`` with Ready True is ready; a hibernated
    cluster or one whose reconciliation loop is disabled has nothing to wait for; the phases that
    need manual intervention fail. Source: cloudnative-pg api/v1/cluster_types.go (Phase*,
    ConditionClusterReady); Argo CD postgresql.cnpg.io/Cluster."""
    annotations = annotations_of(obj)
    if annotations.get("cnpg.io/reconciliationLoop") == "disabled":
        return Readiness.current("reconciliation loop disabled (cnpg.io/reconciliationLoop): nothing to wait for")
    status, conditions = _status(obj), conditions_by_type(obj)
    hibernation = conditions.get("cnpg.io/hibernation")
    if _is(hibernation, "True"):
        return Readiness.current(f"hibernated: {explain(hibernation)}")
    phase, why = status.get("phase") or "", status.get("phaseReason") or ""
    if phase in _CNPG_STUCK:
        return Readiness.failed(f"{phase}{': ' + why if why else ''}")
    if phase == "Cluster in healthy state" and _is(conditions.get("Ready"), "True"):
        return Readiness.current(phase)
    return Readiness.in_progress(f"{phase or 'no phase yet'}{': ' + why if why else ''}")


def strimzi(obj: KubeObject) -> Readiness:
    """Strimzi's Kafka (and its other operands): ``Ready`` True is ready; ``NotReady`` True with a reason
    other than Creating is the operator giving up (an exception it names). Source: strimzi api
    io.strimzi.api.kafka.model.common.Condition and its docs ("Checking the status of a custom
    resource"); Argo CD kafka.strimzi.io/Kafka."""
    stale = generation_behind(obj)
    if stale:
        return Readiness.in_progress(stale)
    conditions = conditions_by_type(obj)
    not_ready = conditions.get("NotReady")
    if _is(not_ready, "True") and not_ready.get("reason") != "Creating":
        return Readiness.failed(f"NotReady: {explain(not_ready)}")
    if _is(conditions.get("Ready"), "True"):
        return Readiness.current("Ready")
    return Readiness.in_progress(explain(not_ready) if not_ready else "no Ready condition yet")


def scaled_object(obj: KubeObject) -> Readiness:
    """KEDA's ScaledObject: ``Ready`` True is ready (Paused True too: nothing to wait for); Ready False
    is the ScaledObject refused (ScaledObjectCheckFailed, ScaledJobCheckFailed) or its scaling failing
    (TriggerError, ErrorGettingCurrentReplicas). Fallback True is not a failure to stop on: the scaler's
    source is unreachable and KEDA holds the fallback replicas. KEDA's conditions carry no generation and
    no transition time: a failure counts when the status was written after our apply (freshness).
    Source: keda apis/keda/v1alpha1/condition_types.go, controllers/keda/scaledobject_controller.go,
    pkg/scaling/executor/, commit 8b4f083ca8c8c2baf8477e322bd4d16ac4dfa09a; Argo CD keda.sh/ScaledObject."""
    conditions = conditions_by_type(obj)
    ready = conditions.get("Ready")
    if _is(ready, "False"):
        return Readiness.failed(f"Ready False: {explain(ready)}")
    if _is(ready, "True"):
        paused = " (paused)" if _is(conditions.get("Paused"), "True") else ""
        fallback = conditions.get("Fallback")
        if _is(fallback, "True"):
            return Readiness.current(f"Ready{paused}, but a trigger is falling back: {explain(fallback)}")
        return Readiness.current(f"Ready{paused}")
    return Readiness.in_progress("no Ready condition yet")


def knative_service(obj: KubeObject) -> Readiness:
    """Knative Serving's Service: ``Ready`` True for the current generation; False is a failed revision
    or route (RevisionFailed, ContainerMissing...), Unknown is a rollout in progress. Source: knative
    serving pkg/apis/serving/v1/service_lifecycle.go, commit 98e5ef90aa7033797aa0a61ef97f3ff7e49a3944;
    Argo CD serving.knative.dev/Service."""
    stale = generation_behind(obj)
    if stale:
        return Readiness.in_progress(stale)
    return _ready_condition(obj, conditions_by_type(obj))


def flux_object(obj: KubeObject) -> Readiness:
    """Flux's Kustomization and HelmRelease (and sources): kstatus, as Flux writes it. ``Stalled`` True
    fails; ``Ready`` False fails once the controller stopped reconciling (no ``Reconciling``), or when
    it retries after a failed attempt (``ProgressingWithRetry``); Ready True for the current generation
    is ready. Source: fluxcd/pkg apis/meta/conditions.go (ReadyCondition, StalledCondition,
    ReconcilingCondition, ProgressingWithRetryReason), commit e2cfd1a2d1815a81b3e77ef750e6528282ccccd6;
    Argo CD's Flux resource_customizations."""
    stale = generation_behind(obj)
    if stale:
        return Readiness.in_progress(stale)
    conditions = conditions_by_type(obj)
    stalled, ready, reconciling = conditions.get("Stalled"), conditions.get("Ready"), conditions.get("Reconciling")
    if _is(stalled, "True"):
        return Readiness.failed(f"Stalled: {explain(stalled)}")
    if ready is None:
        return Readiness.in_progress("no Ready condition yet")
    if _is(ready, "True") and not _stale_condition(obj, ready):
        return Readiness.current(f"Ready: {explain(ready)}")
    retrying = _is(reconciling, "True") and reconciling.get("reason") == "ProgressingWithRetry"
    if _is(ready, "False") and (retrying or not _is(reconciling, "True")):
        return Readiness.failed(f"Ready False: {explain(ready)}")
    return Readiness.in_progress(f"Ready {ready.get('status')}: {explain(ready)}")


def argocd_application(obj: KubeObject) -> Readiness:
    """Argo CD's Application: healthy and synced is ready; an operation (a sync) that ended Failed or
    Error fails, and so does an ``InvalidSpecError`` condition (a project that does not permit the
    destination or source: it never syncs). Degraded alone is not final: Argo CD reports it while pods
    restart. The Application reports no generation; ``application_reported`` says when the failure
    was. Source: argo-cd pkg/apis/application/v1alpha1/types.go (ApplicationStatus, OperationState,
    ApplicationConditionInvalidSpecError, health.HealthStatusCode), commit
    37ee0097cf851bc2dd7665fc081bbce61a7e836e."""
    status = _status(obj)
    operation = status.get("operationState") or {}
    if operation.get("phase") in ("Failed", "Error"):
        return Readiness.failed(f"sync {operation['phase']}: {operation.get('message') or 'no message'}")
    invalid = _invalid_spec(obj)
    if invalid is not None:
        return Readiness.failed(f"InvalidSpecError: {invalid.get('message') or 'no message'}")
    health = (status.get("health") or {}).get("status")
    sync = (status.get("sync") or {}).get("status")
    if health == "Healthy" and sync == "Synced":
        return Readiness.current("Healthy and Synced")
    running = f"; sync {operation['phase']}" if operation.get("phase") else ""
    return Readiness.in_progress(f"health {health or 'unknown'}, sync {sync or 'unknown'}{running}")


def _invalid_spec(obj: KubeObject) -> Condition | None:
    return next((c for c in conditions_of(obj) if c.get("type") == "InvalidSpecError"), None)


def application_reported(obj: KubeObject) -> datetime | None:
    """When an Application's failure was reported: the failed operation's start (a sync that started
    after our write synced what we applied), else the InvalidSpecError condition's last transition."""
    status = _status(obj)
    operation = status.get("operationState") or {}
    if operation.get("phase") in ("Failed", "Error"):
        return freshness.parse_time(operation.get("startedAt"))
    return freshness.parse_time((_invalid_spec(obj) or {}).get("lastTransitionTime"))


def gateway(obj: KubeObject) -> Readiness:
    """Gateway API's Gateway: ``Accepted`` and ``Programmed`` True for the current generation, every
    listener accepted with its references resolved. Accepted False (but Pending), Programmed False with
    reason Invalid or AddressNotUsable (an address of the spec), a listener refused, conflicted or invalid
    fail; NoResources and AddressNotAssigned wait. Source: gateway-api apis/v1/gateway_types.go
    (GatewayConditionType, ListenerConditionType and their reasons), commit
    4564255ac2c35d582249b3cdf261bdf51c8bca32; Argo CD gateway.networking.k8s.io."""
    status, conditions = _status(obj), conditions_by_type(obj)
    for kind in ("Accepted", "ResolvedRefs"):
        condition = conditions.get(kind)
        if _is(condition, "False") and condition.get("reason") != "Pending" and not _stale_condition(obj, condition):
            return Readiness.failed(f"{kind} False: {explain(condition)}")
    programmed = conditions.get("Programmed")
    if (_is(programmed, "False") and programmed.get("reason") in ("Invalid", "AddressNotUsable")
            and not _stale_condition(obj, programmed)):
        return Readiness.failed(f"Programmed False: {explain(programmed)}")
    for listener in status.get("listeners") or []:
        problem = _listener_problem(listener)
        if problem:
            return Readiness.failed(problem)
    for kind in ("Accepted", "Programmed"):
        condition = conditions.get(kind)
        if not _is(condition, "True") or _stale_condition(obj, condition):
            return Readiness.in_progress(f"{kind} {'is ' + explain(condition) if condition else 'not reported yet'}")
    return Readiness.current("Accepted and Programmed")


def _listener_problem(listener: object) -> str | None:
    if not isinstance(listener, dict):
        return None
    conditions = conditions_in(listener)
    for kind in ("Accepted", "ResolvedRefs"):
        if _is(conditions.get(kind), "False") and conditions[kind].get("reason") != "Pending":
            return f"listener {listener.get('name')}: {kind} False: {explain(conditions[kind])}"
    if _is(conditions.get("Conflicted"), "True"):
        return f"listener {listener.get('name')}: Conflicted: {explain(conditions['Conflicted'])}"
    if _is(conditions.get("Programmed"), "False") and conditions["Programmed"].get("reason") == "Invalid":
        return f"listener {listener.get('name')}: Programmed False: {explain(conditions['Programmed'])}"
    return None


def route(obj: KubeObject) -> Readiness:
    """Gateway API's routes (HTTPRoute, GRPCRoute...): each parent (Gateway) reports on its own in
    ``status.parents``; the route is ready when every parent it names accepted it, for the current
    generation, with its references resolved. Accepted False (but Pending) or ResolvedRefs False fail,
    except BackendNotFound: the Service may be on its way. Source: gateway-api apis/v1/shared_types.go
    (RouteParentStatus, RouteConditionType and reasons); Argo CD gateway.networking.k8s.io/HTTPRoute."""
    wanted = len(_spec(obj).get("parentRefs") or []) or 1
    current = [p for p in _status(obj).get("parents") or [] if isinstance(p, dict)
               and not any(_stale_condition(obj, c) for c in conditions_in(p).values())]
    programming = backend = None
    for parent in current:
        name = (parent.get("parentRef") or {}).get("name")
        conditions = conditions_in(parent)
        accepted, refs = conditions.get("Accepted"), conditions.get("ResolvedRefs")
        if _is(accepted, "False") and accepted.get("reason") != "Pending":
            return Readiness.failed(f"parent {name}: Accepted False: {explain(accepted)}")
        if _is(refs, "False"):
            if refs.get("reason") != "BackendNotFound":
                return Readiness.failed(f"parent {name}: ResolvedRefs False: {explain(refs)}")
            backend = f"parent {name}: waiting for the backend: {explain(refs)}"
        programmed = conditions.get("Programmed")  # some implementations report it per parent
        if programmed is not None and not _is(programmed, "True"):
            programming = f"parent {name}: Programmed {programmed.get('status')}: {explain(programmed)}"
    accepted_by = [p for p in current if _is(conditions_in(p).get("Accepted"), "True")
                   and not _is(conditions_in(p).get("ResolvedRefs"), "False")]
    if len(accepted_by) < wanted:
        return Readiness.in_progress(backend or f"accepted by {len(accepted_by)} of {wanted} parents")
    if programming:
        return Readiness.in_progress(programming)
    return Readiness.current(f"accepted by {len(accepted_by)} of {wanted} parents")


def crossplane(obj: KubeObject) -> Readiness:
    """Crossplane's claims, composite and managed resources: ``Ready`` and ``Synced`` True. Synced False
    with ReconcileError is the provider or composition refusing the spec; ReconcilePaused has nothing to
    wait for. Matched by shape (a custom resource with a Synced condition and a Ready condition or
    Crossplane's spec fields), as claims and composites live in the user's own API groups. Source: crossplane-runtime apis/common/v1/condition.go (TypeReady,
    TypeSynced, ReasonReconcileError, ReasonReconcilePaused); Argo CD _.crossplane.io, _.upbound.io."""
    conditions = conditions_by_type(obj)
    synced, ready = conditions.get("Synced"), conditions.get("Ready")
    if _is(synced, "False") and synced.get("reason") == "ReconcileError":
        return Readiness.failed(f"Synced False: {explain(synced)}")
    if synced is not None and synced.get("reason") == "ReconcilePaused":
        return Readiness.current("reconciliation paused (crossplane.io/paused): nothing to wait for")
    if _is(synced, "True") and _is(ready, "True"):
        return Readiness.current("Ready and Synced")
    for kind, condition in (("Synced", synced), ("Ready", ready)):
        if not _is(condition, "True"):
            return Readiness.in_progress(f"{kind} {'is ' + explain(condition) if condition else 'not reported yet'}")
    return Readiness.in_progress("not Ready")  # unreachable: one of the two is not True


def crossplane_package(obj: KubeObject) -> Readiness:
    """Crossplane's packages (Provider, Configuration, Function) and their revisions: ``Installed``
    and ``Healthy`` True (a revision: ``Healthy`` or ``RevisionHealthy``). An unhealthy package is not
    a stop: its runtime often turns healthy once its dependencies are installed. Source: crossplane
    apis/pkg/v1/ (TypeInstalled, TypeHealthy); Argo CD _.crossplane.io."""
    conditions = conditions_by_type(obj)
    wanted = ("Healthy",) if "Installed" not in conditions and "Healthy" in conditions else ("Installed", "Healthy")
    if "RevisionHealthy" in conditions:
        wanted = ("RevisionHealthy",)
    for kind in wanted:
        if not _is(conditions.get(kind), "True"):
            condition = conditions.get(kind)
            return Readiness.in_progress(f"{kind} {'is ' + explain(condition) if condition else 'not reported yet'}")
    return Readiness.current(" and ".join(wanted))


def horizontal_pod_autoscaler(obj: KubeObject) -> Readiness:
    """HorizontalPodAutoscaler: AbleToScale False is a target it cannot scale (FailedGetScale: no such
    workload, no scale subresource). Metrics not yet available are not waited for (a cluster may have no
    metrics server): the autoscaler scales once they are. Source: Kubernetes autoscaling/v2 types
    (HorizontalPodAutoscalerConditionType) and the HPA controller's reasons."""
    conditions = conditions_by_type(obj)
    able = conditions.get("AbleToScale")
    if _is(able, "False"):
        return Readiness.failed(f"AbleToScale False: {explain(able)}")
    if able is None:
        return Readiness.current("not evaluated yet (the autoscaler syncs every 15s)")
    active = conditions.get("ScalingActive")
    note = f"; ScalingActive {active.get('status')}: {explain(active)}" if active and not _is(active, "True") else ""
    return Readiness.current(f"able to scale{note}")


def ingress(obj: KubeObject) -> Readiness:
    """Ingress, with ``wait_rules.load_balancers``: ready once its controller published an address in
    ``status.loadBalancer.ingress``, as for a Service of type LoadBalancer. Source: Kubernetes
    networking/v1 IngressStatus; Argo CD's Ingress health."""
    found = ((_status(obj).get("loadBalancer") or {}).get("ingress")) or []
    addresses = [str(e.get("ip") or e.get("hostname")) for e in found
                 if isinstance(e, dict) and (e.get("ip") or e.get("hostname"))]
    if addresses:
        return Readiness.current(f"load balancer at {', '.join(addresses)}")
    return Readiness.in_progress("waiting for the ingress controller to publish an address")


# ----- the table --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One library rule: its name (shown as the member's readiness rule), whether an object without
    status is not ready yet, and the rule."""

    name: str
    needs_status: bool
    judge: Callable[[KubeObject], Readiness]
    load_balancers_only: bool = False  # judged only when wait_rules.load_balancers is on
    # When a failure was reported, for kinds whose controller reports no generation (freshness).
    reported: Callable[[KubeObject], datetime | None] = freshness.status_write


def _entry(group: str, kinds: tuple[str, ...], judge: Callable[[KubeObject], Readiness], needs_status: bool = True,
           **more: Any) -> dict[GroupKind, Entry]:
    return {GroupKind(group, kind): Entry(f"{kind}.{group}", needs_status, judge, **more) for kind in kinds}


LIBRARY: dict[GroupKind, Entry] = {
    **_entry("argoproj.io", ("Rollout",), rollout),
    **_entry("argoproj.io", ("Application",), argocd_application, reported=application_reported),
    **_entry("cert-manager.io", ("Certificate",), certificate),
    **_entry("cert-manager.io", ("Issuer", "ClusterIssuer"), issuer),
    **_entry("postgresql.cnpg.io", ("Cluster",), cnpg_cluster),
    **_entry("kafka.strimzi.io", ("Kafka", "KafkaTopic", "KafkaUser", "KafkaConnect", "KafkaNodePool"), strimzi),
    **_entry("keda.sh", ("ScaledObject", "ScaledJob"), scaled_object),
    **_entry("serving.knative.dev", ("Service",), knative_service),
    **_entry("gateway.networking.k8s.io", ("Gateway",), gateway),
    **_entry("gateway.networking.k8s.io", ("HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute"), route),
    **_entry("kustomize.toolkit.fluxcd.io", ("Kustomization",), flux_object),
    **_entry("helm.toolkit.fluxcd.io", ("HelmRelease",), flux_object),
    **_entry("source.toolkit.fluxcd.io", ("GitRepository", "OCIRepository", "HelmRepository", "HelmChart",
                                          "Bucket"), flux_object),
    **_entry("pkg.crossplane.io", ("Provider", "Configuration", "Function", "ProviderRevision",
                                   "ConfigurationRevision", "FunctionRevision"), crossplane_package),
    **_entry("autoscaling", ("HorizontalPodAutoscaler",), horizontal_pod_autoscaler, needs_status=False),
    **_entry("networking.k8s.io", ("Ingress",), ingress, needs_status=False, load_balancers_only=True),
    # The secrets operators and progressive delivery (wait/delivery_rules.py).
    **{key: entry for group, kinds, judge in delivery_rules.RULES for key, entry in _entry(group, kinds, judge).items()},
}

CROSSPLANE = Entry("crossplane (Ready and Synced)", True, crossplane)


def entry_for(group_kind: GroupKind, obj: KubeObject | None = None, *, custom: bool = True,
              load_balancers: bool = False) -> Entry | None:
    """The library entry that judges ``group_kind`` (and, for rules matched by shape, ``obj``), or None.

    ``custom``: the kind is a custom resource (only those are matched by shape).
    """
    entry = LIBRARY.get(group_kind)
    if entry is not None:
        return entry if load_balancers or not entry.load_balancers_only else None
    if custom and obj is not None and _looks_like_crossplane(obj):
        return CROSSPLANE
    return None


# The spec fields Crossplane adds to claims (resourceRef, compositeDeletePolicy), composites
# (compositionRef..., resourceRefs, crossplane in v2) and managed resources (forProvider, providerConfigRef).
_CROSSPLANE_SPEC = frozenset({"compositionRef", "compositionSelector", "compositionRevisionRef",
                              "compositionUpdatePolicy", "compositeDeletePolicy", "resourceRef", "resourceRefs",
                              "crossplane", "forProvider", "providerConfigRef"})


def _looks_like_crossplane(obj: KubeObject) -> bool:
    """Crossplane's objects report Synced (and Ready); a Synced condition alone, on an object without
    Crossplane's spec fields, is some other controller's and stays with the generic rule."""
    conditions = conditions_by_type(obj)
    crossplane_spec = bool(_CROSSPLANE_SPEC & set(_spec(obj)))
    if not conditions:
        # Not reported yet (or a manifest, for check mode's readiness_rule): the spec says whose it is.
        return crossplane_spec and ("compositionRef" in _spec(obj) or "resourceRef" in _spec(obj)
                                    or "forProvider" in _spec(obj) or "crossplane" in _spec(obj))
    if "Synced" not in conditions:
        return False
    return "Ready" in conditions or crossplane_spec
