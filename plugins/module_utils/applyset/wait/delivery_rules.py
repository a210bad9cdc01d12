"""Bundled readiness rules for the secrets operators and progressive delivery.

What releases wait on most after their workloads: the Secret an operator writes (External Secrets'
ExternalSecret, ClusterExternalSecret and PushSecret, Bitnami's SealedSecret, the Vault Secrets
Operator's VaultStaticSecret, VaultDynamicSecret and VaultPKISecret) and the analysis a progressive
delivery controller runs (Argo Rollouts' AnalysisRun and Experiment, Flagger's Canary). The generic
rule misreads every one of them: a failed ExternalSecret says ``Ready False`` (the generic rule
waits out the timeout on it), a SealedSecret says ``Synced``, an AnalysisRun a ``phase``.

Each rule cites the controller code (or the docs) it reads, at the commit of the mirror it was
read from; tests/unit/wait/test_library.py runs them over the status documents the projects (and
Argo CD's resource_customizations) publish. ``library.LIBRARY`` registers them from ``RULES``;
a failure they answer goes through the same freshness check as the library's (``readiness``):
controllers that report no generation (External Secrets, Argo Rollouts' analysis, Flagger) fail
a wait only with a status written after the run's apply.
"""

from __future__ import annotations

from typing import Callable, TypeGuard

from ..object_meta import Condition, KubeObject, generation_of
from .freshness import as_int
from .status import Readiness
from .status_fields import ObjectStatus, conditions_by_type, explain, is_true, status_of


def _is_false(condition: Condition | None) -> TypeGuard[Condition]:
    return condition is not None and condition.get("status") == "False"


def _synced_generation(obj: KubeObject) -> int | None:
    """The generation External Secrets last synced: its ``status.syncedResourceVersion`` is
    ``<generation>-<hash of labels and annotations>`` (pkg/controllers/util/util.go,
    GetResourceVersion), written only with a successful sync."""
    synced = status_of(obj).get("syncedResourceVersion")
    if not isinstance(synced, str) or "-" not in synced:
        return None
    return as_int(synced.split("-", 1)[0])


def _ready_then_synced(obj: KubeObject, what: str) -> Readiness:
    """ExternalSecret and PushSecret: ``Ready`` False fails (the controller marks every failed
    attempt so and retries on its interval); Ready True is ready once the generation it synced is
    the current one."""
    ready = conditions_by_type(obj).get("Ready")
    if ready is None:
        return Readiness.in_progress(f"no Ready condition yet (the {what} has not been synced)")
    if _is_false(ready):
        return Readiness.failed(f"Ready False: {explain(ready)}")
    if not is_true(ready):
        return Readiness.in_progress(f"Ready {ready.get('status')}: {explain(ready)}")
    generation, synced = generation_of(obj), _synced_generation(obj)
    if generation is not None and synced is not None and synced < generation:
        return Readiness.in_progress(f"synced generation {synced}, waiting for generation {generation}")
    return Readiness.current(f"Ready: {explain(ready)}")


def external_secret(obj: KubeObject) -> Readiness:
    """External Secrets' ExternalSecret: ``Ready`` True (SecretSynced, SecretDeleted, SecretMissing
    as the deletion policy says) for the current generation; ``Ready`` False (SecretSyncedError:
    the provider refused, the store is not ready, the target Secret belongs to another owner) fails.
    Source: external-secrets apis/externalsecrets/v1/externalsecret_types.go (ExternalSecretReady,
    ConditionReasonSecretSynced*), pkg/controllers/externalsecret/externalsecret_controller.go
    (markAsDone, markAsFailed), commit cc5bfbc2234ace9cb0caff4ea89c435cf517b27b; Argo CD
    external-secrets.io/ExternalSecret."""
    return _ready_then_synced(obj, "secret")


def push_secret(obj: KubeObject) -> Readiness:
    """External Secrets' PushSecret: ``Ready`` True (Synced) for the current generation; ``Ready``
    False (Errored: the store refused the write, the source Secret is missing; SourceDeleted) fails.
    Source: external-secrets apis/externalsecrets/v1alpha1/pushsecret_types.go (PushSecretReady,
    ReasonSynced, ReasonErrored, ReasonSourceDeleted), pkg/controllers/pushsecret/
    pushsecret_controller.go (markAsFailed, markAsDone), commit cc5bfbc2234ace9cb0caff4ea89c435cf517b27b."""
    return _ready_then_synced(obj, "push")


def cluster_external_secret(obj: KubeObject) -> Readiness:
    """External Secrets' ClusterExternalSecret: ``Ready`` True once its ExternalSecret is in every
    selected namespace; ``Ready`` False ("one or more namespaces failed", each in
    ``status.failedNamespaces`` with its reason) fails, as do the ``NotReady`` and ``PartiallyReady``
    conditions of releases before v0.10. Ready says the ExternalSecrets were written, not synced:
    list them in the set to wait for their secrets. Source: external-secrets
    apis/externalsecrets/v1/clusterexternalsecret_types.go, pkg/controllers/clusterexternalsecret/
    util.go (NewClusterExternalSecretCondition), commit cc5bfbc2234ace9cb0caff4ea89c435cf517b27b;
    Argo CD external-secrets.io/ClusterExternalSecret."""
    conditions = conditions_by_type(obj)
    ready = conditions.get("Ready")
    if is_true(ready):
        provisioned = status_of(obj).get("provisionedNamespaces") or []
        return Readiness.current(f"Ready{f': in {len(provisioned)} namespaces' if provisioned else ''}")
    failing = [kind for kind in ("NotReady", "PartiallyReady") if is_true(conditions.get(kind))]
    if _is_false(ready) or failing:
        said = ready if _is_false(ready) else conditions[failing[0]]
        return Readiness.failed(f"{'Ready False' if said is ready else failing[0]}: "
                                f"{said.get('message') or 'no message'}{_failed_namespaces(obj)}")
    return Readiness.in_progress("no Ready condition yet")


def _failed_namespaces(obj: KubeObject) -> str:
    failed = [f"{entry.get('namespace')} ({entry.get('reason') or 'no reason'})"
              for entry in status_of(obj).get("failedNamespaces") or [] if isinstance(entry, dict)]
    return f" in {', '.join(failed)}" if failed else ""


def sealed_secret(obj: KubeObject) -> Readiness:
    """Bitnami's SealedSecret: ``Synced`` True for the current generation (``status.observedGeneration``)
    is unsealed; Synced False is the controller's unseal error (no key could decrypt, the Secret
    exists and is not managed by it). The controller writes status unless started with
    ``--update-status=false`` (default true): then nothing ever says ready. Source: sealed-secrets
    pkg/apis/sealedsecrets/v1alpha1/types.go (SealedSecretSynced), pkg/controller/controller.go
    (updateSealedSecretStatus), cmd/controller/main.go, commit 86671a8851be1e6c2dfef4e12e2d7c19ed24ac94;
    Argo CD bitnami.com/SealedSecret."""
    generation, observed = generation_of(obj), as_int(status_of(obj).get("observedGeneration"))
    if generation is not None and observed is not None and observed < generation:
        return Readiness.in_progress(f"waiting for the controller to unseal generation {generation} (it has seen {observed})")
    synced = conditions_by_type(obj).get("Synced")
    if _is_false(synced):
        return Readiness.failed(f"Synced False: {synced.get('message') or 'no message'}")
    if is_true(synced):
        return Readiness.current("unsealed (Synced True)")
    return Readiness.in_progress("waiting for the controller to unseal it")


def vault_secret(obj: KubeObject) -> Readiness:
    """The Vault Secrets Operator's VaultStaticSecret, VaultDynamicSecret and VaultPKISecret: since
    v0.8 its conditions (each with the generation it describes) decide: ``SecretSynced`` False fails
    with the operator's error (the message names the Vault error), ``Ready`` True is synced, Ready
    False fails. Without conditions (earlier releases), see ``_vault_without_conditions``.
    Source: vault-secrets-operator api/v1beta1/vault{static,dynamic,pki}secret_types.go,
    controllers/common.go (newSyncCondition, newReadyCondition), controllers/vaultstaticsecret_controller.go
    and vaultpkisecret_controller.go (updateStatus), consts/types.go, commit
    9b840a5a0c3455278d580418d6336f2011cf8574."""
    generation, conditions = generation_of(obj), conditions_by_type(obj)
    if conditions:
        seen = [as_int(c.get("observedGeneration")) for c in conditions.values()]
        behind = [g for g in seen if g is not None and generation is not None and g < generation]
        if behind:
            return Readiness.in_progress(f"conditions are from generation {max(behind)}, not {generation}")
        synced, ready = conditions.get("SecretSynced"), conditions.get("Ready")
        if _is_false(synced):
            return Readiness.failed(f"SecretSynced False: {synced.get('message') or 'no message'}")
        if _is_false(ready):
            return Readiness.failed(f"Ready False: {explain(ready)}")
        if ready is not None and is_true(ready):
            return Readiness.current(f"synced: {synced.get('message') if synced else explain(ready)}")
    return _vault_without_conditions(obj, generation)


def _vault_without_conditions(obj: KubeObject, generation: int | None) -> Readiness:
    """Before conditions, the operator wrote ``lastGeneration`` after every attempt, failed or not;
    a success leaves its mark: the data's MAC (static, unless ``hmacSecretData`` is off), a lease
    (dynamic), ``valid`` (PKI, whose ``error`` names a failure)."""
    status = status_of(obj)
    if status.get("valid") is False and status.get("error"):
        return Readiness.failed(f"invalid: {status['error']}")
    last = as_int(status.get("lastGeneration")) or 0
    if generation is not None and last < generation:
        return Readiness.in_progress(f"waiting for the operator to sync generation {generation} (it has synced {last or 'none'})")
    lease = status.get("secretLease") or {}
    if (status.get("secretMAC") or status.get("valid") is True or status.get("lastRenewalTime") or lease.get("id")
            or (obj.get("spec") or {}).get("hmacSecretData") is False):
        return Readiness.current(f"synced generation {last}")
    return Readiness.in_progress(f"generation {last} reconciled without a sync recorded (no secretMAC): "
                                 "the object's events say why")


# The phases after which an analysis never changes: argo-rollouts pkg/apis/rollouts/v1alpha1/
# analysis_types.go (AnalysisPhase, Completed); Inconclusive pauses a Rollout for a person's decision.
_ANALYSIS_FAILED = frozenset({"Failed", "Error", "Inconclusive"})


def analysis_run(obj: KubeObject) -> Readiness:
    """Argo Rollouts' AnalysisRun (and Experiment): ``phase`` Successful is done (a terminated run
    too: Successful, "run terminated"); Failed, Error and Inconclusive are final, with
    ``status.message`` or the failing metric's message; Pending and Running wait. An Experiment
    without ``spec.duration`` runs until it is terminated. Source: argo-rollouts
    pkg/apis/rollouts/v1alpha1/analysis_types.go (AnalysisPhase, MetricResult), experiment_types.go
    (ExperimentStatus), commit 9f8d111d8f8e3e88b6d7f8bbdf62fd3cd863ef9d; Argo CD
    argoproj.io/AnalysisRun and argoproj.io/Experiment."""
    status = status_of(obj)
    phase = status.get("phase") or "Pending"
    if phase == "Successful":
        return Readiness.current(f"Successful{': ' + status['message'] if status.get('message') else ''}")
    if phase in _ANALYSIS_FAILED:
        return Readiness.failed(f"{phase}: {status.get('message') or _failed_metric(status) or 'no message'}")
    return Readiness.in_progress(f"{phase}{': ' + status['message'] if status.get('message') else ''}")


def _failed_metric(status: ObjectStatus) -> str:
    for metric in status.get("metricResults") or []:
        if isinstance(metric, dict) and metric.get("phase") in _ANALYSIS_FAILED:
            return f"metric {metric.get('name')} {metric['phase']}{': ' + metric['message'] if metric.get('message') else ''}"
    return ""


# Flagger's phases in which the canary waits for a person (a confirm-rollout or confirm-promotion webhook).
_CANARY_GATED = {"Waiting": "the confirm-rollout gate", "WaitingPromotion": "the confirm-promotion gate"}


def flagger_canary(obj: KubeObject) -> Readiness:
    """Flagger's Canary: ``phase`` Initialized (the primary is set up) or Succeeded (the analysis
    promoted the canary) is ready; Failed (the analysis rolled back and scaled the canary to zero) is
    final, with the ``Promoted`` condition's message; the other phases wait, naming the canary weight.
    Flagger reports no generation and watches the target workload, not the Canary: a Canary that
    failed on an earlier release, whose target this run changed, fails the wait until Flagger starts
    the new analysis (its ``analysis.interval``). Source: flagger pkg/apis/flagger/v1beta1/status.go
    (CanaryPhase, PromotedType), pkg/canary/status.go (MakeStatusConditions), commit
    15bd6ad555e6c935da55f0ab95977be74c149bd6; Argo CD flagger.app/Canary."""
    status = status_of(obj)
    phase = status.get("phase") or "Initializing"
    promoted = conditions_by_type(obj).get("Promoted") or {}
    said = f": {promoted['message']}" if promoted.get("message") else ""
    if phase in ("Initialized", "Succeeded"):
        return Readiness.current(f"{phase}{said}")
    if phase == "Failed":
        return Readiness.failed(f"Failed{said or ': canary analysis failed'}")
    if phase in _CANARY_GATED:
        return Readiness.in_progress(f"{phase}: waiting for {_CANARY_GATED[phase]}{said}")
    weight = as_int(status.get("canaryWeight"))
    return Readiness.in_progress(f"{phase}{f' (canary weight {weight}%)' if weight else ''}{said}")


# (group, kinds, rule) for library.LIBRARY; every one needs its controller's status.
RULES: tuple[tuple[str, tuple[str, ...], Callable[[KubeObject], Readiness]], ...] = (
    ("external-secrets.io", ("ExternalSecret",), external_secret),
    ("external-secrets.io", ("ClusterExternalSecret",), cluster_external_secret),
    ("external-secrets.io", ("PushSecret",), push_secret),
    ("bitnami.com", ("SealedSecret",), sealed_secret),
    ("secrets.hashicorp.com", ("VaultStaticSecret", "VaultDynamicSecret", "VaultPKISecret"), vault_secret),
    ("argoproj.io", ("AnalysisRun", "Experiment"), analysis_run),
    ("flagger.app", ("Canary",), flagger_canary),
)
