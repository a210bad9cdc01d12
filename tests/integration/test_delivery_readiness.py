"""The bundled rules for the secrets operators and progressive delivery (issue 49, wait/delivery_rules.py)
against the real control plane, with the projects' published CRDs (tests/integration/data/crds/delivery/,
see the README one folder up). No controller runs: a thread writes each object's status in the order
its controller writes it, once the run has created the object (through the status subresource, or,
for Argo Rollouts' AnalysisRun and Experiment whose CRDs have none, through the object as the
rollouts controller patches it). Every kind's ready status ends the wait, every kind's failure ends it
within seconds with the controller's reason, far before its wait_timeout.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import yaml
from status_writer import apply_waiting, write_statuses

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset.errors import WaitTimeout  # noqa: E402

CRDS = Path(__file__).parent / "data" / "crds" / "delivery"
WAIT_TIMEOUT = 120  # every failing run below must end long before this
FAST = 20  # seconds: "within seconds" on a loaded two-core machine


@pytest.fixture(scope="module")
def crds(kube):
    return kube.establish_crds([yaml.safe_load(path.read_text()) for path in sorted(CRDS.glob("*.yaml"))],
                               "test-delivery-readiness")


class Kind:
    """One kind of the rules: how to write it and where its controller writes its status."""

    def __init__(self, api_version, kind, plural, spec, status_subresource=True, cluster_scoped=False):
        self.api_version, self.kind, self.plural, self.spec = api_version, kind, plural, spec
        self.status_subresource, self.cluster_scoped = status_subresource, cluster_scoped

    def name(self, namespace, name):
        return f"{namespace}-{name}" if self.cluster_scoped else name

    def path(self, namespace, name):
        where = "" if self.cluster_scoped else f"namespaces/{namespace}/"
        return f"/apis/{self.api_version}/{where}{self.plural}/{self.name(namespace, name)}"

    def member(self, namespace, name):
        return {"apiVersion": self.api_version, "kind": self.kind,
                "metadata": {"name": self.name(namespace, name)}, "spec": self.spec}


STORE = {"name": "vault", "kind": "SecretStore"}
POD = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "web:1"}]}}
ES_SPEC = {"secretStoreRef": STORE, "target": {"name": "db"}, "data": [{"secretKey": "password", "remoteRef": {"key": "db"}}]}
KINDS = {
    "ExternalSecret": Kind("external-secrets.io/v1", "ExternalSecret", "externalsecrets", ES_SPEC),
    "ClusterExternalSecret": Kind("external-secrets.io/v1", "ClusterExternalSecret", "clusterexternalsecrets", {
        "externalSecretSpec": ES_SPEC, "namespaceSelectors": [{"matchLabels": {"team": "shop"}}]}, cluster_scoped=True),
    "PushSecret": Kind("external-secrets.io/v1alpha1", "PushSecret", "pushsecrets", {
        "secretStoreRefs": [STORE], "selector": {"secret": {"name": "db"}},
        "data": [{"match": {"secretKey": "password", "remoteRef": {"remoteKey": "db"}}}]}),
    "SealedSecret": Kind("bitnami.com/v1alpha1", "SealedSecret", "sealedsecrets", {"encryptedData": {"password": "AgBy3i4OJSWK"}}),
    "VaultStaticSecret": Kind("secrets.hashicorp.com/v1beta1", "VaultStaticSecret", "vaultstaticsecrets", {
        "type": "kv-v2", "mount": "kv", "path": "db", "destination": {"name": "db", "create": True}}),
    "VaultDynamicSecret": Kind("secrets.hashicorp.com/v1beta1", "VaultDynamicSecret", "vaultdynamicsecrets", {
        "mount": "db", "path": "creds/web", "destination": {"name": "db-creds", "create": True}}),
    "VaultPKISecret": Kind("secrets.hashicorp.com/v1beta1", "VaultPKISecret", "vaultpkisecrets", {
        "mount": "pki", "role": "web", "commonName": "web.example.com", "destination": {"name": "web-tls", "create": True}}),
    "AnalysisRun": Kind("argoproj.io/v1alpha1", "AnalysisRun", "analysisruns", {"metrics": [{
        "name": "errors", "successCondition": "result[0] < 0.05",
        "provider": {"prometheus": {"address": "http://prometheus:9090", "query": "errors"}}}]}, status_subresource=False),
    "Experiment": Kind("argoproj.io/v1alpha1", "Experiment", "experiments", {"duration": "5m", "templates": [{
        "name": "baseline", "selector": {"matchLabels": {"app": "web"}}, "template": POD}]}, status_subresource=False),
    "Canary": Kind("flagger.app/v1beta1", "Canary", "canaries", {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "service": {"port": 80},
        "analysis": {"interval": "1m", "threshold": 5, "maxWeight": 50, "stepWeight": 10}}),
}


def cond(kind, status, reason, message="", **more):
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z", **more}


def vso(synced, message, generation=1):
    """The Vault Secrets Operator's status after one attempt (controllers/common.go, updateStatus)."""
    healthy = "True" if synced == "True" else "False"
    return {"lastGeneration": generation, "conditions": [
        cond("SecretSynced", synced, "Synced", message, observedGeneration=generation),
        cond("Healthy", healthy, "Healthy" if synced == "True" else "Unhealthy", observedGeneration=generation),
        cond("Ready", healthy, "Ready", "Ready", observedGeneration=generation)]}


ES_FAILED = cond("Ready", "False", "SecretSyncedError", "could not get secret data from provider")
NO_LEASE = {"id": "", "duration": 0, "renewable": False, "requestID": ""}  # the CRD requires these fields
VAULT_DENIED = "Failed to sync the secret, horizon=5s, err=Error making API request. Code: 403. permission denied"
# Per kind: the statuses its controller writes on the way to ready, then the failure it writes (and
# what the failure's message must say).
STORIES = {
    "ExternalSecret": ([{"conditions": [cond("Ready", "True", "SecretSynced", "Secret was synced")],
                         "refreshTime": "2026-01-01T00:00:00Z", "syncedResourceVersion": "1-519a61da0dc6"}],
                       {"conditions": [ES_FAILED]}, "Ready False: SecretSyncedError: could not get secret data"),
    "ClusterExternalSecret": ([{"externalSecretName": "ces", "provisionedNamespaces": ["shop"],
                                "conditions": [{"type": "Ready", "status": "True"}]}],
                              {"externalSecretName": "ces", "failedNamespaces": [
                                  {"namespace": "shop", "reason": "external secret already exists in namespace"}],
                               "conditions": [{"type": "Ready", "status": "False", "message": "one or more namespaces failed"}]},
                              "one or more namespaces failed in shop (external secret already exists"),
    "PushSecret": ([{"conditions": [cond("Ready", "True", "Synced", "PushSecret synced successfully")],
                     "syncedResourceVersion": "1-519a61da0dc6"}],
                   {"conditions": [cond("Ready", "False", "Errored", "set secret failed: could not write remote ref")]},
                   "Errored: set secret failed"),
    "SealedSecret": ([{"observedGeneration": 1, "conditions": [{"type": "Synced", "status": "True", "message": ""}]}],
                     {"observedGeneration": 1, "conditions": [
                         {"type": "Synced", "status": "False", "message": "no key could decrypt secret (password)"}]},
                     "Synced False: no key could decrypt secret (password)"),
    "VaultStaticSecret": ([vso("True", "Secret synced")], vso("False", VAULT_DENIED), "403. permission denied"),
    "VaultDynamicSecret": ([dict(vso("True", "Secret synced"), lastRenewalTime=1767225600, secretLease={
                               "id": "db/creds/web/x", "duration": 3600, "renewable": True, "requestID": "r1"})],
                           dict(vso("False", VAULT_DENIED), lastRenewalTime=0, secretLease=NO_LEASE),
                           "SecretSynced False: Failed to sync the secret"),
    "VaultPKISecret": ([dict(vso("True", "Secret synced"), valid=True, error="", lastRotation=1767225600,
                             serialNumber="1a:2b")],
                       dict(vso("False", VAULT_DENIED), valid=False, error="VaultClientError", lastRotation=0),
                       "permission denied"),
    "AnalysisRun": ([{"phase": "Pending"}, {"phase": "Running", "startedAt": "2026-01-01T00:00:00Z"},
                     {"phase": "Successful", "metricResults": [{"name": "errors", "phase": "Successful", "count": 1}]}],
                    {"phase": "Failed", "message": "Metric \"errors\" assessed Failed due to failed (1) > failureLimit (0)"},
                    "Failed: Metric \"errors\" assessed Failed"),
    "Experiment": ([{"phase": "Pending"}, {"phase": "Running"}, {"phase": "Successful"}],
                   {"phase": "Error", "message": "AnalysisTemplate verification failed for analysis 'errors'"},
                   "Error: AnalysisTemplate verification failed"),
    "Canary": ([{"phase": "Initializing", "canaryWeight": 0, "failedChecks": 0, "iterations": 0},
                {"phase": "Initialized", "canaryWeight": 0, "failedChecks": 0, "iterations": 0, "conditions": [
                    cond("Promoted", "True", "Initialized", "Deployment initialization completed.")]}],
               {"phase": "Failed", "canaryWeight": 0, "failedChecks": 5, "iterations": 0, "conditions": [
                   cond("Promoted", "False", "Failed", "Canary analysis failed, Deployment scaled to zero.")]},
               "Failed: Canary analysis failed, Deployment scaled to zero."),
}


def controller(kube, kind, path, statuses):
    """Write ``statuses`` on the object at ``path`` once it exists, as ``kind``'s controller would (a thread)."""
    return write_statuses(kube, path, statuses, subresource=kind.status_subresource)


def apply(cluster, namespace, objects, parent="delivery", **options):
    options.setdefault("wait_timeout", WAIT_TIMEOUT)
    return apply_waiting(cluster, namespace, objects, parent, **options)


def test_every_kind_is_ready_once_its_controller_says_so(cluster, kube, namespace, crds):
    threads = [controller(kube, KINDS[name], KINDS[name].path(namespace, "ok"), STORIES[name][0]) for name in KINDS]
    started = time.monotonic()
    report = apply(cluster, namespace, [KINDS[name].member(namespace, "ok") for name in KINDS], wait_timeout=60)
    print(f"ten kinds ready after {time.monotonic() - started:.2f}s")
    for thread in threads:
        thread.join(timeout=10)
    rules = {o.kind: o.readiness_rule for o in report.objects}
    assert rules == {name: f"library {name}.{KINDS[name].api_version.split('/')[0]}" for name in KINDS}, rules


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_kinds_failure_stops_the_wait_within_seconds(cluster, kube, namespace, crds, name):
    kind, (_ready, failed, said) = KINDS[name], STORIES[name]
    controller(kube, kind, kind.path(namespace, "bad"), [failed])
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as caught:
        apply(cluster, namespace, [kind.member(namespace, "bad")], parent=f"delivery-{name.lower()}")
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert elapsed < FAST, f"took {elapsed:.1f}s of a {WAIT_TIMEOUT}s wait_timeout: {message}"
    assert "stopped waiting" in message and f"{name} " in message and said in message, message
    print(f"{name}: failed verdict ended the run after {elapsed:.2f}s (wait_timeout {WAIT_TIMEOUT}s)")
