"""The bundled readiness library (wait/library.py) over the status documents the projects publish.

The fixtures under data/argocd/ are Argo CD's resource_customizations test data (see data/README.md):
status documents as each project's controller writes them. Each case says what our rule answers;
where that differs from Argo CD's health (Argo CD reports, we decide whether a deploy waits or stops),
the comment says why.
"""

from __future__ import annotations

import pathlib
import time

import pytest
import yaml

from applyset.spec import GroupKind
from applyset.wait import kind_rules, library, readiness
from applyset.wait.status import Status

DATA = pathlib.Path(__file__).parent / "data" / "argocd"

READY, PROGRESS, FAILED = Status.CURRENT, Status.IN_PROGRESS, Status.FAILED

CASES = {
    # Argo Rollouts
    "argoproj.io/Rollout/testdata/bluegreen/healthy_servingActiveService.yaml": READY,
    "argoproj.io/Rollout/testdata/bluegreen/progressing_addingMoreReplicas.yaml": PROGRESS,
    "argoproj.io/Rollout/testdata/bluegreen/progressing_waitingUntilAvailable.yaml": PROGRESS,
    "argoproj.io/Rollout/testdata/canary/healthy_emptyStepsList.yaml": READY,
    "argoproj.io/Rollout/testdata/canary/healthy_executedAllSteps.yaml": READY,
    "argoproj.io/Rollout/testdata/canary/healthy_executedAllStepsPreV0.8.yaml": READY,
    "argoproj.io/Rollout/testdata/canary/healthy_noSteps.yaml": READY,
    "argoproj.io/Rollout/testdata/canary/progressing_killingOldReplicas.yaml": PROGRESS,
    "argoproj.io/Rollout/testdata/canary/progressing_noSteps.yaml": PROGRESS,
    "argoproj.io/Rollout/testdata/canary/progressing_setWeightStep.yaml": PROGRESS,
    "argoproj.io/Rollout/testdata/degraded_abortedRollout.yaml": FAILED,
    "argoproj.io/Rollout/testdata/degraded_invalidSpec.yaml": FAILED,
    "argoproj.io/Rollout/testdata/degraded_rolloutTimeout.yaml": FAILED,
    "argoproj.io/Rollout/testdata/degraded_statusPhaseMessage.yaml": FAILED,
    "argoproj.io/Rollout/testdata/healthy_legacy_v0.9_observedGeneration.yaml": READY,
    "argoproj.io/Rollout/testdata/healthy_legacy_v0.9_observedGeneration_numeric.yaml": READY,
    "argoproj.io/Rollout/testdata/healthy_legacy_v1.0_newWorkloadGeneration.yaml": READY,
    "argoproj.io/Rollout/testdata/healthy_newWorkloadGeneration.yaml": READY,
    # A Rollout without status is not ready: its controller has not looked at it yet.
    "argoproj.io/Rollout/testdata/newRolloutWithoutStatus.yaml": PROGRESS,
    "argoproj.io/Rollout/testdata/progressing_newGeneration.yaml": PROGRESS,
    "argoproj.io/Rollout/testdata/progressing_newWorkloadGeneration.yaml": PROGRESS,
    # Argo CD: Suspended. A paused canary waits for promotion: in progress, never a failure.
    "argoproj.io/Rollout/testdata/suspended_controllerPause.yaml": PROGRESS,
    "argoproj.io/Rollout/testdata/suspended_userPause.yaml": PROGRESS,
    "argoproj.io/Rollout/testdata/suspended_v1.0_pausedRollout.yaml": PROGRESS,
    # cert-manager
    "cert-manager.io/Certificate/testdata/degraded_configError.yaml": FAILED,
    "cert-manager.io/Certificate/testdata/healthy_issued.yaml": READY,
    "cert-manager.io/Certificate/testdata/healthy_renewed.yaml": READY,
    "cert-manager.io/Certificate/testdata/progressing_issuing.yaml": PROGRESS,
    "cert-manager.io/Certificate/testdata/progressing_issuing_last.yaml": PROGRESS,
    "cert-manager.io/Certificate/testdata/progressing_noStatus.yaml": PROGRESS,
    "cert-manager.io/ClusterIssuer/testdata/degraded_acmeFailed.yaml": FAILED,
    "cert-manager.io/ClusterIssuer/testdata/healthy_registered.yaml": READY,
    "cert-manager.io/ClusterIssuer/testdata/progressing_noStatus.yaml": PROGRESS,
    "cert-manager.io/Issuer/testdata/degraded_acmeFailed.yaml": FAILED,
    "cert-manager.io/Issuer/testdata/healthy_registered.yaml": READY,
    "cert-manager.io/Issuer/testdata/progressing_noStatus.yaml": PROGRESS,
    # Gateway API
    "gateway.networking.k8s.io/Gateway/testdata/degraded_accepted.yaml": FAILED,
    "gateway.networking.k8s.io/Gateway/testdata/degraded_resolved_refs.yaml": FAILED,
    "gateway.networking.k8s.io/Gateway/testdata/healthy.yaml": READY,
    "gateway.networking.k8s.io/Gateway/testdata/listener_degraded.yaml": FAILED,
    "gateway.networking.k8s.io/Gateway/testdata/progressing.yaml": PROGRESS,
    "gateway.networking.k8s.io/HTTPRoute/testdata/degraded_accepted.yaml": FAILED,
    # Argo CD: Degraded. A Service named as a backend may be applied in the same run: we wait for it.
    "gateway.networking.k8s.io/HTTPRoute/testdata/degraded_resolved_refs.yaml": PROGRESS,
    "gateway.networking.k8s.io/HTTPRoute/testdata/healthy.yaml": READY,
    "gateway.networking.k8s.io/HTTPRoute/testdata/healthy_multiple_generations.yaml": READY,
    "gateway.networking.k8s.io/HTTPRoute/testdata/progressing.yaml": PROGRESS,
    # Flux
    "helm.toolkit.fluxcd.io/HelmRelease/testdata/degraded.yaml": FAILED,
    "helm.toolkit.fluxcd.io/HelmRelease/testdata/healthy.yaml": READY,
    "helm.toolkit.fluxcd.io/HelmRelease/testdata/progressing.yaml": PROGRESS,
    "kustomize.toolkit.fluxcd.io/Kustomization/testdata/degraded.yaml": FAILED,
    "kustomize.toolkit.fluxcd.io/Kustomization/testdata/healthy.yaml": READY,
    "kustomize.toolkit.fluxcd.io/Kustomization/testdata/progressing.yaml": PROGRESS,
    # Strimzi
    "kafka.strimzi.io/Kafka/testdata/degraded.yaml": FAILED,
    "kafka.strimzi.io/Kafka/testdata/healthy.yaml": READY,
    "kafka.strimzi.io/Kafka/testdata/progressing_noStatus.yaml": PROGRESS,
    # KEDA
    "keda.sh/ScaledObject/testdata/keda-degraded-1.yaml": FAILED,
    "keda.sh/ScaledObject/testdata/keda-degraded.yaml": FAILED,
    # Argo CD: Degraded. A trigger falling back still scales (to the fallback replicas): not a stop.
    "keda.sh/ScaledObject/testdata/keda-fallback.yaml": READY,
    "keda.sh/ScaledObject/testdata/keda-healthy.yaml": READY,
    "keda.sh/ScaledObject/testdata/keda-progressing.yaml": PROGRESS,
    "keda.sh/ScaledObject/testdata/keda-suspended.yaml": READY,
    # CloudNativePG. Argo CD: Degraded for a failover; it is the operator at work, so we wait.
    "postgresql.cnpg.io/Cluster/testdata/cluster_degraded.yaml": PROGRESS,
    "postgresql.cnpg.io/Cluster/testdata/cluster_healthy.yaml": READY,
    "postgresql.cnpg.io/Cluster/testdata/cluster_progressing.yaml": PROGRESS,
    "postgresql.cnpg.io/Cluster/testdata/cluster_reconcile_suspended.yaml": READY,
    "postgresql.cnpg.io/Cluster/testdata/cluster_suspended.yaml": READY,
    # Knative
    "serving.knative.dev/Service/testdata/degraded.yaml": FAILED,
    "serving.knative.dev/Service/testdata/healthy.yaml": READY,
    "serving.knative.dev/Service/testdata/progressing.yaml": PROGRESS,
    # Crossplane (a managed resource; the provider package waits while unhealthy)
    "_.upbound.io/_/testdata/managedresource_failedupdate_degraded.yaml": FAILED,
    "_.crossplane.io/_/testdata/configurationrevision_healthy.yaml": READY,
    "_.crossplane.io/_/testdata/provider_degraded.yaml": PROGRESS,
    # External Secrets (wait/delivery_rules.py). Argo CD: Healthy for Ready True with PartiallyReady True
    # (both written by releases around v0.9); PartiallyReady alone is namespaces that failed: a stop.
    "external-secrets.io/ExternalSecret/testdata/degraded.yaml": FAILED,
    "external-secrets.io/ExternalSecret/testdata/healthy.yaml": READY,
    "external-secrets.io/ExternalSecret/testdata/progressing.yaml": PROGRESS,
    "external-secrets.io/PushSecret/testdata/degraded.yaml": FAILED,
    "external-secrets.io/PushSecret/testdata/healthy.yaml": READY,
    "external-secrets.io/PushSecret/testdata/progressing.yaml": PROGRESS,
    "external-secrets.io/ClusterExternalSecret/testdata/healthy.yaml": READY,
    "external-secrets.io/ClusterExternalSecret/testdata/notready.yaml": FAILED,
    "external-secrets.io/ClusterExternalSecret/testdata/partiallyready-multiple-conditions.yaml": FAILED,
    "external-secrets.io/ClusterExternalSecret/testdata/partiallyready.yaml": FAILED,
    "external-secrets.io/ClusterExternalSecret/testdata/progressing.yaml": PROGRESS,
    # Sealed Secrets
    "bitnami.com/SealedSecret/testdata/degraded.yaml": FAILED,
    "bitnami.com/SealedSecret/testdata/healthy.yaml": READY,
    "bitnami.com/SealedSecret/testdata/progressing.yaml": PROGRESS,
    # Vault Secrets Operator before conditions. Argo CD: Degraded. The operator wrote lastGeneration
    # without a secretMAC: no success, but no reason either (its events have it), so we wait.
    "secrets.hashicorp.com/VaultStaticSecret/testdata/degraded.yaml": PROGRESS,
    "secrets.hashicorp.com/VaultStaticSecret/testdata/healthy.yaml": READY,
    # Argo Rollouts' analysis. Argo CD: Unknown for Inconclusive; the run is over and a person must
    # judge it, so a deploy that waits on it stops.
    "argoproj.io/AnalysisRun/testdata/errorAnalysisRun.yaml": FAILED,
    "argoproj.io/AnalysisRun/testdata/errorAnalysisRunWithStatusMessage.yaml": FAILED,
    "argoproj.io/AnalysisRun/testdata/failedAnalysisRun.yaml": FAILED,
    "argoproj.io/AnalysisRun/testdata/failedAnalysisRunWithStatusMessage.yaml": FAILED,
    "argoproj.io/AnalysisRun/testdata/inconclusiveAnalysisRun.yaml": FAILED,
    "argoproj.io/AnalysisRun/testdata/inconclusiveAnalysisRunWithStatusMessage.yaml": FAILED,
    "argoproj.io/AnalysisRun/testdata/noStatusAnalysisRun.yaml": PROGRESS,
    "argoproj.io/AnalysisRun/testdata/pendingAnalysisRun.yaml": PROGRESS,
    "argoproj.io/AnalysisRun/testdata/runningAnalysisRun.yaml": PROGRESS,
    "argoproj.io/AnalysisRun/testdata/successfulAnalysisRun.yaml": READY,
    "argoproj.io/AnalysisRun/testdata/terminatedAnalysisRun.yaml": READY,
    "argoproj.io/Experiment/testdata/errorExperiment.yaml": FAILED,
    "argoproj.io/Experiment/testdata/failedExperiment.yaml": FAILED,
    "argoproj.io/Experiment/testdata/noStatusExperiment.yaml": PROGRESS,
    "argoproj.io/Experiment/testdata/pendingExperiment.yaml": PROGRESS,
    "argoproj.io/Experiment/testdata/runningExperiment.yaml": PROGRESS,
    "argoproj.io/Experiment/testdata/successfulExperiment.yaml": READY,
    # Flagger
    "flagger.app/Canary/testdata/degraded.yaml": FAILED,
    "flagger.app/Canary/testdata/finalising.yaml": PROGRESS,
    "flagger.app/Canary/testdata/initialized.yaml": READY,
    "flagger.app/Canary/testdata/progressing.yaml": PROGRESS,
    "flagger.app/Canary/testdata/promoting.yaml": PROGRESS,
    "flagger.app/Canary/testdata/succeeded.yaml": READY,
}


def outcome(obj, **rules):
    found = readiness.verdict(obj, **rules)
    return found.status, found.message


def load(name):
    return yaml.safe_load((DATA / name).read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_published_status_document_gets_its_outcome(name):
    got, reason = outcome(load(name))
    assert got == CASES[name], reason
    if got == FAILED:
        assert str(reason).startswith("failed: ") and len(str(reason)) > len("failed: ") + 5


def test_every_fixture_is_a_case_and_the_library_covers_the_kinds_the_issue_names():
    assert {str(p.relative_to(DATA)) for p in DATA.rglob("*.yaml")} - set(CASES) == {
        "_.crossplane.io/_/testdata/composition_healthy.yaml",  # no status: the generic rule's
        "_.upbound.io/_/testdata/providerconfig_healthy.yaml"}
    named = {GroupKind("argoproj.io", "Rollout"), GroupKind("cert-manager.io", "Certificate"),
             GroupKind("cert-manager.io", "Issuer"), GroupKind("cert-manager.io", "ClusterIssuer"),
             GroupKind("postgresql.cnpg.io", "Cluster"), GroupKind("kafka.strimzi.io", "Kafka"),
             GroupKind("keda.sh", "ScaledObject"), GroupKind("serving.knative.dev", "Service"),
             GroupKind("gateway.networking.k8s.io", "Gateway"), GroupKind("gateway.networking.k8s.io", "HTTPRoute"),
             GroupKind("kustomize.toolkit.fluxcd.io", "Kustomization"),
             GroupKind("helm.toolkit.fluxcd.io", "HelmRelease"), GroupKind("argoproj.io", "Application"),
             GroupKind("autoscaling", "HorizontalPodAutoscaler"), GroupKind("networking.k8s.io", "Ingress"),
             # issue 49: the secrets operators and progressive delivery
             GroupKind("external-secrets.io", "ExternalSecret"), GroupKind("external-secrets.io", "PushSecret"),
             GroupKind("external-secrets.io", "ClusterExternalSecret"), GroupKind("bitnami.com", "SealedSecret"),
             GroupKind("secrets.hashicorp.com", "VaultStaticSecret"),
             GroupKind("secrets.hashicorp.com", "VaultDynamicSecret"),
             GroupKind("secrets.hashicorp.com", "VaultPKISecret"), GroupKind("argoproj.io", "AnalysisRun"),
             GroupKind("argoproj.io", "Experiment"), GroupKind("flagger.app", "Canary")}
    assert named <= set(library.LIBRARY)


def test_the_library_never_replaces_a_built_in_rule():
    assert not set(library.LIBRARY) & set(kind_rules.RULES)


def cr(api_version, kind, status=None, spec=None, generation=1, **meta):
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "generation": generation, **meta},
           "spec": spec or {}}
    if status is not None:
        obj["status"] = status
    return obj


def cond(kind, status="True", reason="", message="", **more):
    return {"type": kind, "status": status, "reason": reason, "message": message, **more}


def test_argocd_application_is_ready_healthy_and_synced_and_fails_on_a_failed_sync():
    # argo-cd pkg/apis/application/v1alpha1/types.go: status.health.status, status.sync.status,
    # status.operationState.phase (Running, Succeeded, Failed, Error, Terminating).
    app = "argoproj.io/v1alpha1"
    assert outcome(cr(app, "Application"))[0] == PROGRESS
    healthy = {"health": {"status": "Healthy"}, "sync": {"status": "Synced"}}
    assert outcome(cr(app, "Application", healthy)) == (READY, "Healthy and Synced")
    assert outcome(cr(app, "Application", {"health": {"status": "Degraded"}, "sync": {"status": "Synced"}}))[0] == PROGRESS
    failed = {**healthy, "operationState": {"phase": "Failed", "message": "one or more objects failed to apply"}}
    assert outcome(cr(app, "Application", failed)) == (FAILED, "failed: sync Failed: one or more objects failed to apply")


def test_crossplane_claims_are_matched_by_shape_and_need_ready_and_synced():
    claim = {"compositionRef": {"name": "db"}, "resourceRef": {"name": "db-x"}}
    assert outcome(cr("example.org/v1", "Database", spec=claim))[0] == PROGRESS  # no status yet
    creating = {"conditions": [cond("Synced", reason="ReconcileSuccess"), cond("Ready", "False", "Creating")]}
    assert outcome(cr("example.org/v1", "Database", creating, spec=claim))[0] == PROGRESS
    done = {"conditions": [cond("Synced", reason="ReconcileSuccess"), cond("Ready", reason="Available")]}
    assert outcome(cr("example.org/v1", "Database", done, spec=claim)) == (READY, "Ready and Synced")
    error = {"conditions": [cond("Synced", "False", "ReconcileError", "cannot compose resources")]}
    assert outcome(cr("example.org/v1", "Database", error, spec=claim)) == (
        FAILED, "failed: Synced False: ReconcileError: cannot compose resources")
    assert readiness.rule_for(cr("example.org/v1", "Database", spec=claim)) == "library crossplane (Ready and Synced)"


def test_hpa_fails_on_a_target_it_cannot_scale_and_does_not_wait_for_metrics():
    hpa = "autoscaling/v2"
    assert outcome(cr(hpa, "HorizontalPodAutoscaler", {"currentReplicas": 0}))[0] == READY
    no_metrics = {"conditions": [cond("AbleToScale", reason="SucceededGetScale"),
                                 cond("ScalingActive", "False", "FailedGetResourceMetric")]}
    assert outcome(cr(hpa, "HorizontalPodAutoscaler", no_metrics))[0] == READY
    missing = {"conditions": [cond("AbleToScale", "False", "FailedGetScale", 'deployments/scale "web" not found')]}
    assert outcome(cr(hpa, "HorizontalPodAutoscaler", missing))[0] == FAILED


def test_ingress_waits_for_an_address_only_with_load_balancers():
    ing = cr("networking.k8s.io/v1", "Ingress", {"loadBalancer": {}})
    assert outcome(ing)[0] == READY  # as before the library: no address awaited
    assert readiness.rule_for(ing) == "generic"
    assert outcome(ing, wait_for_load_balancers=True)[0] == PROGRESS
    assert readiness.rule_for(ing, wait_for_load_balancers=True) == "library Ingress.networking.k8s.io"
    ing["status"]["loadBalancer"]["ingress"] = [{"ip": "10.0.0.9"}]
    assert outcome(ing, wait_for_load_balancers=True) == (READY, "load balancer at 10.0.0.9")


def test_flux_sources_and_stalled_fail_and_a_stale_generation_waits():
    repo = "source.toolkit.fluxcd.io/v1"
    stalled = {"observedGeneration": 1, "conditions": [cond("Stalled", reason="InvalidURL", message="bad url")]}
    assert outcome(cr(repo, "GitRepository", stalled)) == (FAILED, "failed: Stalled: InvalidURL: bad url")
    stale = {"observedGeneration": 1, "conditions": [cond("Ready")]}
    assert outcome(cr(repo, "GitRepository", stale, generation=2))[0] == PROGRESS


def test_stalled_on_any_custom_resource_is_final_with_the_controllers_reason():
    widget = cr("example.com/v1", "Widget", {"conditions": [cond("Stalled", reason="BadSpec", message="no port")]})
    found = readiness.verdict(widget)
    assert (found.status, found.message) == (Status.FAILED, "Stalled: BadSpec: no port")


def test_rule_shown_for_each_kind_of_rule():
    assert readiness.rule_for(cr("apps/v1", "Deployment")) == "built-in"
    assert readiness.rule_for(cr("v1", "ConfigMap")) == "none"
    assert readiness.rule_for(cr("argoproj.io/v1alpha1", "Rollout")) == "library Rollout.argoproj.io"
    assert readiness.rule_for(cr("example.com/v1", "Widget")) == "generic"
    assert readiness.rule_for(cr("example.com/v1", "Widget"), overrides={"Widget": "status.ok"}) == "override Widget"


def test_library_cost_per_object_is_microseconds():
    """The figure for the docs: the library's cost per object (a Certificate, a Rollout, a Gateway)."""
    objs = [load("cert-manager.io/Certificate/testdata/healthy_issued.yaml"),
            load("argoproj.io/Rollout/testdata/healthy_newWorkloadGeneration.yaml"),
            load("gateway.networking.k8s.io/Gateway/testdata/healthy.yaml")]
    rounds = 2000
    started = time.perf_counter()
    for _ in range(rounds):
        for obj in objs:
            readiness.verdict(obj)
    per_object = (time.perf_counter() - started) / (rounds * len(objs))
    print(f"library verdict: {per_object * 1e6:.1f} us per object")
    assert per_object < 0.001  # generous for a loaded machine; measured about 5 us
