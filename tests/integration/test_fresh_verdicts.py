"""Verdicts on fresh status only, and each project's own meaning of its conditions (issue 45), against
the real control plane with the projects' published CRDs (tests/integration/data/crds/, see its
README): cert-manager's Certificate, KEDA's ScaledObject, Argo CD's Application, CloudNativePG's
Cluster. No controller runs: the test writes each status as its controller would, in the order it
writes it. A controller reacts to a change only once the run is waiting for it: the test's
controller writes when the run opens its watch of the kind (so a run that decides on the previous
release's status has decided before the controller says anything), and the test measures when the
run ended against when the controller reported.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from ansible_cli import ansible_env, run_module

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.errors import ApplySetError, WaitTimeout  # noqa: E402
from applyset.history import revisions as history  # noqa: E402
from applyset.inputs import manifests  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402
from applyset.run.options import Options  # noqa: E402
from applyset.wait import watching  # noqa: E402

pytest.importorskip("celpy")

CRDS = Path(__file__).parent / "data" / "crds"
PUBLISHED = ("cert-manager.io_certificates.yaml", "keda.sh_scaledobjects.yaml", "application-crd.yaml",
             "postgresql.cnpg.io_clusters.yaml")
WAIT_TIMEOUT = 60
FAST = 20  # seconds: a verdict "at once" on a loaded two-core machine
FIELD_MANAGER = "test-fresh-verdicts"

# A kind of this test's own (no other test installs it), for the annotations.
GADGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.fresh.example.com"},
    "spec": {"group": "fresh.example.com", "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.fixture(scope="module")
def crds(kube):
    """The projects' CRDs and the Gadget CRD, applied (idempotently: another test may have) and Established."""
    docs = [yaml.safe_load((CRDS / name).read_text()) for name in PUBLISHED] + [GADGET_CRD]
    return kube.establish_crds(docs, FIELD_MANAGER)


# ----- the controller stand-in -------------------------------------------------------------------------


@pytest.fixture
def watches(monkeypatch):
    """Counts the watches the run opens, per resource plural: the moment a run waits for an object."""
    opened: dict = {}
    changed = threading.Condition()
    real = watching.open_watch

    def counting(client, req, **kwargs):
        with changed:
            plural = req.path.rstrip("/").rsplit("/", 1)[-1]
            opened[plural] = opened.get(plural, 0) + 1
            changed.notify_all()
        return real(client, req, **kwargs)

    monkeypatch.setattr(watching, "open_watch", counting)

    def wait_for(plural: str, count: int, deadline: float) -> bool:
        with changed:
            return changed.wait_for(lambda: opened.get(plural, 0) >= count, timeout=max(0.0, deadline - time.monotonic()))

    return wait_for


class Controller:
    """Writes statuses on one object as its controller would, each once the run has opened its
    ``nth`` watch of the kind (or once it exists), and remembers when it sent each (time.monotonic())."""

    def __init__(self, kube, path: str, subresource: bool = True):
        self.kube, self.path, self.subresource = kube, path, subresource
        self.written: list = []
        self.threads: list = []

    def write(self, status: dict) -> None:
        target = self.path + "/status" if self.subresource else self.path
        # Noted before it is sent: the run may see the change before this thread sees the answer.
        self.written.append(time.monotonic())
        code, body, _ = self.kube.request("PATCH", target, {"status": status},
                                          content_type="application/merge-patch+json")
        assert code == 200, body

    def on_watch(self, watches, plural: str, nth: int, *statuses) -> None:
        """Once the run opened its ``nth`` watch of ``plural``, write ``statuses`` one after the other
        (each a dict, or a callable of the live object giving one)."""
        def run():
            if watches(plural, nth, time.monotonic() + WAIT_TIMEOUT):
                for status in statuses:
                    self.write(status(self.kube.get(self.path)) if callable(status) else status)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)

    def when_applied(self, status: dict, generation: int = 1) -> None:
        """Write ``status`` once the object exists at ``generation``: a controller reacting to the apply."""
        def run():
            deadline = time.monotonic() + WAIT_TIMEOUT
            while time.monotonic() < deadline:
                live = self.kube.get(self.path)
                if live is not None and live["metadata"].get("generation", 0) >= generation:
                    self.write(status)
                    return
                time.sleep(0.05)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def next_second_after(kube, path: str) -> None:
    """Return once the clock is past the second the object was last written in: the API server's
    times have whole seconds, and a release follows the one before it by more than that."""
    live = kube.get(path)
    times = [e.get("time") for e in live["metadata"].get("managedFields") or []] + [
        live["metadata"]["creationTimestamp"]]
    latest = max(datetime.fromisoformat(t.replace("Z", "+00:00")) for t in times if t)
    deadline = time.monotonic() + 5
    while datetime.now(timezone.utc).replace(microsecond=0) <= latest:
        assert time.monotonic() < deadline, "the clock did not move"
        time.sleep(0.05)


def engine_for(cluster, namespace, parent="fresh", **options):
    options.setdefault("wait", True)
    options.setdefault("wait_timeout", WAIT_TIMEOUT)
    return engine.Engine(core_kube.connect({"kubeconfig": cluster.kubeconfig}), parent, namespace, Options.from_settings(**options))


def apply(cluster, namespace, objects, **options):
    return engine_for(cluster, namespace, **options).apply(manifests.load_definition(objects))


def timed_apply(cluster, namespace, objects, **options):
    started = time.monotonic()
    report = apply(cluster, namespace, objects, **options)
    return report, time.monotonic() - started, time.monotonic()


def fails_fast(cluster, namespace, objects, **options) -> str:
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as caught:
        apply(cluster, namespace, objects, **options)
    elapsed = time.monotonic() - started
    assert "stopped waiting" in str(caught.value), str(caught.value)
    assert elapsed < FAST, f"took {elapsed:.1f}s of a {options.get('wait_timeout', WAIT_TIMEOUT)}s wait_timeout"
    print(f"failed after {elapsed:.2f}s: {caught.value}")
    return str(caught.value)


def cond(kind, status, reason, message="", generation=None):
    found = {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": now()}
    if generation is not None:
        found["observedGeneration"] = generation
    return found


# ----- cert-manager ---------------------------------------------------------------------------------------


def certificate(dns_names, issuer="ca"):
    return {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "web"},
            "spec": {"secretName": "web-tls", "dnsNames": dns_names, "issuerRef": {"name": issuer}}}


def cert_path(namespace):
    return f"/apis/cert-manager.io/v1/namespaces/{namespace}/certificates/web"


def issued(generation):
    return {"conditions": [cond("Ready", "True", "Ready", "Certificate is up to date and has not expired", generation),
                           cond("Issuing", "False", "Issued", "The certificate has been successfully issued",
                                generation)]}


def test_a_certificates_reissue_after_a_new_dns_name_is_in_progress_until_ready(cluster, kube, namespace, crds,
                                                                                 watches):
    path = cert_path(namespace)
    first = Controller(kube, path)
    first.on_watch(watches, "certificates", 1, issued(1))
    apply(cluster, namespace, [certificate(["web.example.com"])])
    # A DNS name added: cert-manager's readiness controller says RequestChanged, the trigger
    # controller sets Issuing, the issuing controller issues (policies.go, trigger_controller.go).
    reissue = Controller(kube, path)
    reissue.on_watch(watches, "certificates", 2,
                     {"conditions": [cond("Ready", "False", "RequestChanged", "Fields on existing CertificateRequest "
                                          "resource not up to date: [spec.dnsNames]", 2)]},
                     {"conditions": [cond("Ready", "False", "RequestChanged", "Fields on existing CertificateRequest "
                                          "resource not up to date: [spec.dnsNames]", 2),
                                     cond("Issuing", "True", "RequestChanged", "Fields on existing CertificateRequest "
                                          "resource not up to date: [spec.dnsNames]", 2)]},
                     issued(2))
    report, elapsed, ended = timed_apply(cluster, namespace, [certificate(["web.example.com", "www.example.com"])])
    assert len(reissue.written) == 3 and ended >= reissue.written[-1], "the run ended before the certificate was issued"
    assert [o.readiness_rule for o in report.objects] == ["library Certificate.cert-manager.io"]
    print(f"reissue: ready {ended - reissue.written[-1]:.2f}s after cert-manager said Ready (run {elapsed:.2f}s)")


def test_a_denied_issuance_fails_at_once_naming_issuing(cluster, kube, namespace, crds, watches):
    denied = Controller(kube, cert_path(namespace))
    denied.on_watch(watches, "certificates", 1,
                    {"conditions": [cond("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist", 1),
                                    cond("Issuing", "True", "DoesNotExist", "Issuing certificate as Secret does not "
                                         "exist", 1)]},
                    {"failedIssuanceAttempts": 1, "lastFailureTime": now(), "conditions": [
                        cond("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist", 1),
                        cond("Issuing", "False", "Denied", "The certificate request has failed to complete and will "
                             "be retried: CertificateRequest denied by policy shop-policy", 1)]})
    message = fails_fast(cluster, namespace, [certificate(["web.example.com"])], wait_timeout=FAST + 5)
    assert "Issuing False: Denied: The certificate request has failed" in message, message
    assert "denied by policy shop-policy" in message


def test_an_automatic_rollback_passes_once_cert_manager_reports_the_old_spec_issued(cluster, kube, namespace, crds,
                                                                                    watches):
    path = cert_path(namespace)
    good, bad = [certificate(["web.example.com"])], [certificate(["web.example.com"], issuer="missing")]
    Controller(kube, path).on_watch(watches, "certificates", 1, issued(1))
    apply(cluster, namespace, good, history=history.Settings())  # revision 1, the one to roll back to
    failing = Controller(kube, path)
    failing.on_watch(watches, "certificates", 2,
                     {"conditions": [cond("Ready", "False", "IncorrectIssuer", "Issuing certificate as Secret was "
                                          "previously issued by Issuer.cert-manager.io/ca", 2),
                                     cond("Issuing", "False", "Failed", "The certificate request has failed to "
                                          "complete and will be retried: issuer missing not found", 2)]})
    healthy = Controller(kube, path)
    healthy.on_watch(watches, "certificates", 3, issued(3))
    opts = Options.from_settings(wait=True, wait_timeout=WAIT_TIMEOUT,
                   history=history.Settings(on_failure="rollback", rollback_timeout=WAIT_TIMEOUT))
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    started = time.monotonic()
    with pytest.raises(engine.RolledBack) as caught:
        engine.apply_or_roll_back(lambda o: engine.Engine(client, "fresh", namespace, o), opts,
                                    manifests.load_definition(bad))
    ended = time.monotonic()
    assert caught.value.revision == 1, str(caught.value)
    assert "issuer missing not found" in str(caught.value.cause), str(caught.value.cause)
    assert healthy.written and ended >= healthy.written[-1], "the rollback was judged before cert-manager reported"
    assert kube.get(path)["spec"]["issuerRef"]["name"] == "ca"
    print(f"rollback: passed {ended - healthy.written[-1]:.2f}s after cert-manager reported (run {ended - started:.2f}s)")


# ----- KEDA: no generation, no transition time --------------------------------------------------------------


def scaled_object(metric_type):
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"name": "web"},
                     "triggers": [{"type": "cpu", "metricType": metric_type, "metadata": {"value": "50"}}]}}


def test_a_keda_fix_forward_is_not_failed_on_the_previous_releases_status(cluster, kube, namespace, crds, watches):
    path = f"/apis/keda.sh/v1alpha1/namespaces/{namespace}/scaledobjects/web"
    Controller(kube, path).on_watch(watches, "scaledobjects", 1, {"conditions": [
        {"type": "Ready", "status": "False", "reason": "ScaledObjectCheckFailed",
         "message": "ScaledObject doesn't have correct triggers specification"},
        {"type": "Active", "status": "False", "reason": "ScaledObjectCheckFailed", "message": ""}]})
    message = fails_fast(cluster, namespace, [scaled_object("Value")])
    assert "ScaledObjectCheckFailed" in message
    next_second_after(kube, path)
    fixed = Controller(kube, path)
    fixed.on_watch(watches, "scaledobjects", 2, {"conditions": [
        {"type": "Ready", "status": "True", "reason": "ScaledObjectReady", "message": "ScaledObject is defined correctly"
         " and is ready for scaling"},
        {"type": "Active", "status": "False", "reason": "ScalerNotActive", "message": ""}]})
    report, elapsed, ended = timed_apply(cluster, namespace, [scaled_object("Utilization")])
    assert fixed.written and ended >= fixed.written[-1], "the fix-forward was judged on the previous release's status"
    assert [o.readiness_rule for o in report.objects] == ["library ScaledObject.keda.sh"]
    print(f"KEDA fix-forward: ready {ended - fixed.written[-1]:.2f}s after KEDA reported (run {elapsed:.2f}s)")


# ----- Argo CD: the last sync's operationState --------------------------------------------------------------


def application(revision):
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "shop"},
            "spec": {"project": "default", "destination": {"server": "https://kubernetes.default.svc",
                                                           "namespace": "shop"},
                     "source": {"repoURL": "https://example.com/shop.git", "path": "deploy",
                                "targetRevision": revision},
                     "syncPolicy": {"automated": {}}}}


def sync(phase, health, sync_status, message):
    started = now()
    return {"health": {"status": health}, "sync": {"status": sync_status}, "reconciledAt": started,
            "operationState": {"phase": phase, "message": message, "startedAt": started,
                               **({"finishedAt": started} if phase != "Running" else {}),
                               "operation": {"sync": {"revision": "abc"}}}}


def test_an_argocd_fix_forward_waits_for_the_sync_it_starts(cluster, kube, namespace, crds, watches):
    path = f"/apis/argoproj.io/v1alpha1/namespaces/{namespace}/applications/shop"
    # Argo CD's Application has no status subresource: its controller patches the object itself.
    Controller(kube, path, subresource=False).on_watch(
        watches, "applications", 1, lambda live: sync("Failed", "Degraded", "OutOfSync",
                                                      "one or more objects failed to apply"))
    message = fails_fast(cluster, namespace, [application("v1")])
    assert "sync Failed: one or more objects failed to apply" in message
    next_second_after(kube, path)
    fixed = Controller(kube, path, subresource=False)
    fixed.on_watch(watches, "applications", 2,
                   lambda live: sync("Running", "Progressing", "OutOfSync", "waiting for healthy state"),
                   lambda live: sync("Succeeded", "Healthy", "Synced", "successfully synced (all tasks run)"))
    report, elapsed, ended = timed_apply(cluster, namespace, [application("v2")])
    assert len(fixed.written) == 2 and ended >= fixed.written[-1], "the fix-forward was failed on the old sync"
    print(f"Argo CD fix-forward: ready {ended - fixed.written[-1]:.2f}s after the sync succeeded (run {elapsed:.2f}s)")


# ----- CloudNativePG: the phases that wait for a person -------------------------------------------------------


@pytest.mark.parametrize("phase, reason", [
    ("Invalid cluster definition", "spec.instances: Invalid value: 0: must be at least 1"),
    ("Cluster cannot proceed to reconciliation due to an error while interacting with plugins",
     "Encountered an error while interacting with plugins: barman-cloud: connection refused"),
])
def test_cloudnativepg_phases_that_need_a_person_fail_at_once(cluster, kube, namespace, crds, phase, reason):
    path = f"/apis/postgresql.cnpg.io/v1/namespaces/{namespace}/clusters/db"
    Controller(kube, path).when_applied({"phase": phase, "phaseReason": reason, "conditions": [
        {"type": "Ready", "status": "False", "reason": "ClusterIsNotReady", "message": "Cluster Is Not Ready",
         "lastTransitionTime": now()}]})
    db = {"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": {"name": "db"},
          "spec": {"instances": 1, "storage": {"size": "1Gi"}}}
    message = fails_fast(cluster, namespace, [db], wait_timeout=FAST + 5)
    assert f"Cluster {namespace}/db: failed: {phase}: {reason}" in message, message


# ----- annotations: the generation -------------------------------------------------------------------------


def gadget(size):
    return {"apiVersion": "fresh.example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "annotations": {
        "applyset.kubernetes.ansible/ready-when": "status.phase == 'Done'",
        "applyset.kubernetes.ansible/failed-when": "status.phase == 'Broken'"}}, "spec": {"size": size}}


def test_ready_when_waits_for_the_controller_to_observe_the_change(cluster, kube, namespace, crds, watches):
    path = f"/apis/fresh.example.com/v1/namespaces/{namespace}/gadgets/g"
    Controller(kube, path).on_watch(watches, "gadgets", 1, {"phase": "Done", "observedGeneration": 1})
    apply(cluster, namespace, [gadget(1)])
    controller = Controller(kube, path)
    controller.on_watch(watches, "gadgets", 2, {"phase": "Done", "observedGeneration": 2})
    report, elapsed, ended = timed_apply(cluster, namespace, [gadget(2)])
    assert controller.written and ended >= controller.written[-1], "called ready on the previous generation's status"
    assert [o.readiness_rule for o in report.objects] == ["annotation"]


def test_an_automatic_rollback_is_judged_on_its_own_generation(cluster, kube, namespace, crds, watches):
    path = f"/apis/fresh.example.com/v1/namespaces/{namespace}/gadgets/g"
    Controller(kube, path).on_watch(watches, "gadgets", 1, {"phase": "Done", "observedGeneration": 1})
    apply(cluster, namespace, [gadget(1)], history=history.Settings())  # revision 1
    Controller(kube, path).on_watch(watches, "gadgets", 2, {"phase": "Broken", "observedGeneration": 2})
    healthy = Controller(kube, path)
    healthy.on_watch(watches, "gadgets", 3, {"phase": "Done", "observedGeneration": 3})
    opts = Options.from_settings(wait=True, wait_timeout=WAIT_TIMEOUT,
                   history=history.Settings(on_failure="rollback", rollback_timeout=WAIT_TIMEOUT))
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    with pytest.raises(engine.RolledBack) as caught:
        engine.apply_or_roll_back(lambda o: engine.Engine(client, "fresh", namespace, o), opts,
                                    manifests.load_definition([gadget(2)]))
    assert caught.value.revision == 1 and "failed-when holds" in str(caught.value.cause), str(caught.value)
    assert healthy.written, "the rollback was judged before the controller saw it"
    assert kube.get(path)["spec"]["size"] == 1


# ----- a bad CEL annotation: refused before any request ----------------------------------------------------


class _Counting(BaseHTTPRequestHandler):
    seen: list = []

    def _any(self):
        self.seen.append(f"{self.command} {self.path}")
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

    def log_message(self, *args):
        pass


def test_a_bad_cel_annotation_is_refused_before_any_request_naming_its_object_once(cluster, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    _Counting.seen = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
        bad = gadget(1)
        bad["metadata"]["annotations"]["applyset.kubernetes.ansible/ready-when"] = \
            "status.conditions.exist(c, c.type == 'Ready')"
        rc, result, output = run_module(cluster, "applyset_apply", {
            "parent": "fresh", "namespace": "default", "kubeconfig": str(kubeconfig), "definition": [bad],
            "wait": True}, env=ansible_env(cluster))
    finally:
        server.shutdown()
    assert rc != 0 and result.get("error"), output
    message = result.get("msg", "")
    assert "calls exist(), which CEL does not have; did you mean exists()?" in message, message
    assert message.count("definition item 1") == 1, message
    assert _Counting.seen == [], f"requests sent before the refusal: {_Counting.seen}"
