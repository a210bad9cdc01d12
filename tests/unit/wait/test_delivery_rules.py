"""The rules of wait/delivery_rules.py on what the published fixtures (test_library.py) do not show:
a status for an earlier generation, the Vault Secrets Operator's conditions, the failing namespaces
of a ClusterExternalSecret, Flagger's approval gates, a failed metric's message. Each document is
written from the project's API types, named in each test."""

from __future__ import annotations

from applyset.wait import readiness
from applyset.wait.status import Status

READY, PROGRESS, FAILED = Status.CURRENT, Status.IN_PROGRESS, Status.FAILED


def cr(api_version, kind, status, generation=1, spec=None):
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "ns", "generation": generation},
            "spec": spec or {}, "status": status}


def cond(kind, status="True", reason="", message="", **more):
    return {"type": kind, "status": status, "reason": reason, "message": message, **more}


def outcome(obj):
    found = readiness.verdict(obj)
    return found.status, found.message


ES = "external-secrets.io/v1"


def test_an_external_secret_synced_for_an_earlier_generation_waits():
    # externalsecret_controller.go markAsDone: syncedResourceVersion = "<generation>-<hash>".
    synced = {"conditions": [cond("Ready", reason="SecretSynced", message="Secret was synced")],
              "syncedResourceVersion": "1-519a61da0dc68b2575b4f8efada70e42"}
    assert outcome(cr(ES, "ExternalSecret", synced, generation=2)) == (
        PROGRESS, "synced generation 1, waiting for generation 2")
    assert outcome(cr(ES, "ExternalSecret", synced, generation=1))[0] == READY
    assert outcome(cr("external-secrets.io/v1alpha1", "PushSecret", synced, generation=3))[0] == PROGRESS


def test_a_cluster_external_secret_names_each_failed_namespace():
    # clusterexternalsecret util.go NewClusterExternalSecretCondition; types: failedNamespaces.
    failed = {"conditions": [{"type": "Ready", "status": "False", "message": "one or more namespaces failed"}],
              "failedNamespaces": [{"namespace": "shop", "reason": "external secret already exists in namespace"},
                                   {"namespace": "web"}], "provisionedNamespaces": ["api"]}
    assert outcome(cr(ES, "ClusterExternalSecret", failed)) == (
        FAILED, "failed: Ready False: one or more namespaces failed in shop (external secret already exists "
                "in namespace), web (no reason)")
    ready = {"conditions": [{"type": "Ready", "status": "True"}], "provisionedNamespaces": ["api", "shop"]}
    assert outcome(cr(ES, "ClusterExternalSecret", ready)) == (READY, "Ready: in 2 namespaces")


VSO = "secrets.hashicorp.com/v1beta1"


def vso_conditions(synced, ready, generation=1, message="Secret synced"):
    # controllers/common.go: newSyncCondition (type SecretSynced, reason Synced), newHealthyCondition,
    # newReadyCondition; each with observedGeneration.
    return [cond("SecretSynced", synced, "Synced", message, observedGeneration=generation),
            cond("Healthy", ready, "Healthy" if ready == "True" else "Unhealthy", observedGeneration=generation),
            cond("Ready", ready, "Ready", "VaultStaticSecretReady", observedGeneration=generation)]


def test_vault_secrets_fail_with_the_operators_sync_error_and_wait_for_their_generation():
    error = "Failed to sync the secret, horizon=5s, err=Error making API request. Code: 403. permission denied"
    failed = {"lastGeneration": 2, "conditions": vso_conditions("False", "False", 2, error)}
    for kind in ("VaultStaticSecret", "VaultDynamicSecret", "VaultPKISecret"):
        assert outcome(cr(VSO, kind, failed, generation=2)) == (FAILED, f"failed: SecretSynced False: {error}")
    stale = {"lastGeneration": 1, "conditions": vso_conditions("True", "True", 1)}
    assert outcome(cr(VSO, "VaultStaticSecret", stale, generation=2))[0] == PROGRESS
    synced = {"lastGeneration": 2, "secretMAC": "abc", "conditions": vso_conditions("True", "True", 2)}
    assert outcome(cr(VSO, "VaultStaticSecret", synced, generation=2)) == (READY, "synced: Secret synced")


def test_vault_pki_secrets_before_conditions_fail_on_their_error():
    # api/v1beta1/vaultpkisecret_types.go: valid, error (a reason constant such as K8sClientError).
    invalid = {"lastGeneration": 1, "valid": False, "error": "K8sClientError"}
    assert outcome(cr(VSO, "VaultPKISecret", invalid)) == (FAILED, "failed: invalid: K8sClientError")
    assert outcome(cr(VSO, "VaultPKISecret", {"lastGeneration": 1, "valid": True, "serialNumber": "1a"}))[0] == READY
    lease = {"lastGeneration": 1, "lastRenewalTime": 1700000000, "secretLease": {"id": "db/creds/x/1"}}
    assert outcome(cr(VSO, "VaultDynamicSecret", lease))[0] == READY


def test_a_sealed_secret_unsealed_for_an_earlier_generation_waits():
    # sealed-secrets controller.go updateSealedSecretStatus: observedGeneration, Synced.
    status = {"observedGeneration": 1, "conditions": [{"type": "Synced", "status": "True"}]}
    assert outcome(cr("bitnami.com/v1alpha1", "SealedSecret", status, generation=2))[0] == PROGRESS


def test_an_analysis_run_names_its_failed_metric():
    # analysis_types.go AnalysisRunStatus.metricResults[].{name, phase, message}.
    status = {"phase": "Failed", "metricResults": [
        {"name": "latency", "phase": "Successful"},
        {"name": "errors", "phase": "Failed", "message": "value 0.2 over 0.05"}]}
    assert outcome(cr("argoproj.io/v1alpha1", "AnalysisRun", status)) == (
        FAILED, "failed: Failed: metric errors Failed: value 0.2 over 0.05")


def test_a_canary_waiting_for_its_approval_gate_waits():
    # flagger status.go: CanaryPhaseWaiting, CanaryPhaseWaitingPromotion.
    for phase, gate in (("Waiting", "confirm-rollout"), ("WaitingPromotion", "confirm-promotion")):
        found = outcome(cr("flagger.app/v1beta1", "Canary", {"phase": phase, "canaryWeight": 0}))
        assert found[0] == PROGRESS and gate in found[1], found


def test_each_new_kind_shows_its_library_rule():
    assert readiness.rule_for(cr(ES, "ExternalSecret", {})) == "library ExternalSecret.external-secrets.io"
    assert readiness.rule_for(cr(VSO, "VaultPKISecret", {})) == "library VaultPKISecret.secrets.hashicorp.com"
    assert readiness.rule_for(cr("flagger.app/v1beta1", "Canary", {})) == "library Canary.flagger.app"
