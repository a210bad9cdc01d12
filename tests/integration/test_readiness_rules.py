"""Readiness rules against the real control plane (issue 38, part A): the bundled library, Flux's
health_check_exprs, the ready-when / failed-when annotations and kstatus' Stalled, with the
projects' published CRDs (tests/integration/data/crds/, see its README). No controller runs: the
test writes each object's status through the status subresource, as its controller would, once
the run has created the object. A failed verdict must end the run within seconds, far before
its wait_timeout; a bad expression is refused before any request.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import yaml
from ansible_cli import ansible_env, run_playbook
from status_writer import apply_waiting, write_statuses

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.errors import ApplySetError, InputError, WaitTimeout  # noqa: E402
from applyset.inputs import manifests  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402
from applyset.run.options import Options  # noqa: E402

pytest.importorskip("celpy")

CRDS = Path(__file__).parent / "data" / "crds"
WAIT_TIMEOUT = 120  # every failing run below must end long before this
FAST = 20  # seconds: "within seconds" on a loaded two-core machine


@pytest.fixture(scope="module")
def crds(kube):
    """The projects' CRDs, and a Widget CRD of no project (for the generic rule), Established."""
    docs = [yaml.safe_load((CRDS / name).read_text()) for name in sorted(p.name for p in CRDS.glob("*.yaml"))]
    docs.append({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.rules.example.com"},
        "spec": {"group": "rules.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]}})
    return kube.establish_crds(docs, "test-readiness-rules")


def controller(kube, path, status, delay=0.0):
    """Write ``status`` on the object at ``path`` once it exists, as its controller would (a thread)."""
    return write_statuses(kube, path, [status], delay=delay)


def apply(cluster, namespace, objects, parent="rules", **options):
    options.setdefault("wait_timeout", WAIT_TIMEOUT)
    return apply_waiting(cluster, namespace, objects, parent, **options)


def obj(api_version, kind, name, spec=None, annotations=None):
    meta = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec or {}}


def cond(kind, status, reason, message=""):
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}


CERTIFICATE = ("cert-manager.io/v1", "Certificate", "certificates",
               {"secretName": "web-tls", "dnsNames": ["web.example.com"], "issuerRef": {"name": "ca"}})
SCALED_OBJECT = ("keda.sh/v1alpha1", "ScaledObject", "scaledobjects", {"scaleTargetRef": {"name": "web"}, "triggers": [
    {"type": "cpu", "metadata": {"value": "50"}}]})
KUSTOMIZATION = ("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "kustomizations", {
    "interval": "5m", "prune": True, "sourceRef": {"kind": "GitRepository", "name": "repo"}})
ROLLOUT = ("argoproj.io/v1alpha1", "Rollout", "rollouts", {
    "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "web:1"}]}},
    "strategy": {"canary": {"steps": [{"setWeight": 50}]}}})
WIDGET = ("rules.example.com/v1", "Widget", "widgets", {"size": 1})


def path_of(kind_spec, namespace, name):
    api_version, _kind, plural, _spec = kind_spec
    return f"/apis/{api_version}/namespaces/{namespace}/{plural}/{name}"


def member(kind_spec, name, **more):
    api_version, kind, _plural, spec = kind_spec
    return obj(api_version, kind, name, spec, **more)


def fails_fast(cluster, namespace, objects, **options):
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as caught:
        apply(cluster, namespace, objects, **options)
    elapsed = time.monotonic() - started
    assert elapsed < FAST, f"took {elapsed:.1f}s of a {WAIT_TIMEOUT}s wait_timeout: {caught.value}"
    assert "stopped waiting" in str(caught.value), str(caught.value)
    print(f"failed verdict ended the run after {elapsed:.2f}s (wait_timeout {WAIT_TIMEOUT}s)")
    return str(caught.value), elapsed


# ----- the bundled library: each kind's failure ends the wait at once ---------------------------------

LIBRARY_FAILURES = {
    "Certificate": (CERTIFICATE, {"conditions": [cond("Ready", "False", "ConfigError", "issuer ca not found")]},
                    "Ready False: ConfigError: issuer ca not found"),
    "ScaledObject": (SCALED_OBJECT, {"conditions": [cond("Ready", "False", "ScaledObjectCheckFailed",
                                                         "ScaledObject doesn't have correct triggers specification")]},
                     "ScaledObjectCheckFailed"),
    "Kustomization": (KUSTOMIZATION, {"observedGeneration": 1, "conditions": [
        cond("Ready", "False", "ArtifactFailed", 'GitRepository "repo" not found')]}, "ArtifactFailed"),
    "Rollout": (ROLLOUT, {"observedGeneration": "1", "phase": "Degraded", "message": "ProgressDeadlineExceeded: "
                          "ReplicaSet web-1 has timed out progressing"}, "Degraded: ProgressDeadlineExceeded"),
}


@pytest.mark.parametrize("kind", sorted(LIBRARY_FAILURES))
def test_a_library_kinds_failure_stops_the_wait_within_seconds(cluster, kube, namespace, crds, kind):
    kind_spec, status, said = LIBRARY_FAILURES[kind]
    controller(kube, path_of(kind_spec, namespace, "web"), status)
    message, _elapsed = fails_fast(cluster, namespace, [member(kind_spec, "web")])
    assert f"{kind} {namespace}/web: failed: " in message and said in message, message


def test_a_rollout_without_status_is_not_ready(cluster, kube, namespace, crds):
    with pytest.raises(WaitTimeout) as caught:
        apply(cluster, namespace, [member(ROLLOUT, "web")], wait_timeout=3)
    assert "no status reported yet (Rollout.argoproj.io needs its controller's status)" in str(caught.value)
    # Then its controller reports it healthy: the next run's wait ends at once.
    code, body, _ = kube.request("PATCH", path_of(ROLLOUT, namespace, "web") + "/status",
                                 {"status": {"observedGeneration": "1", "phase": "Healthy"}},
                                 content_type="application/merge-patch+json")
    assert code == 200, body
    report = apply(cluster, namespace, [member(ROLLOUT, "web")], wait_timeout=30)
    assert [o.readiness_rule for o in report.objects] == ["library Rollout.argoproj.io"]


# ----- Stalled, health_check_exprs, annotations -------------------------------------------------------


def test_stalled_on_a_custom_resource_stops_the_wait_with_the_controllers_reason(cluster, kube, namespace, crds):
    controller(kube, path_of(WIDGET, namespace, "w"),
               {"conditions": [cond("Stalled", "True", "InvalidSize", "size 1 is below the minimum of 3")]})
    # fail_closed: a Widget without status is not ready, so the wait sees what its controller reports.
    message, _ = fails_fast(cluster, namespace, [member(WIDGET, "w")], wait_rules={"fail_closed": True})
    assert f"Widget {namespace}/w: Stalled: InvalidSize: size 1 is below the minimum of 3" in message


FLUX_RULE = {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
             "current": "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')",
             "failed": "status.conditions.exists(e, e.type == 'Healthy' && e.status == 'False')"}


def test_a_failed_health_check_expression_stops_the_wait(cluster, kube, namespace, crds):
    # Ready Unknown alone is "in progress" to the library; only the user's failed expression fails it.
    controller(kube, path_of(KUSTOMIZATION, namespace, "app"), {"observedGeneration": 1, "conditions": [
        cond("Ready", "Unknown", "Progressing", "health check in progress"),
        cond("Healthy", "False", "HealthCheckFailed", "Deployment/web not ready")]})
    message, _ = fails_fast(cluster, namespace, [member(KUSTOMIZATION, "app")],
                            wait_rules={"health_check_exprs": [FLUX_RULE]})
    assert "failed: health_check_exprs[0] failed holds" in message and "HealthCheckFailed" in message, message


def test_health_check_exprs_wait_for_a_field_that_is_not_there_yet(cluster, kube, namespace, crds):
    # No status at first (Flux would call the expression an error); the controller reports 2s later.
    controller(kube, path_of(KUSTOMIZATION, namespace, "app"),
               {"observedGeneration": 1, "conditions": [cond("Ready", "True", "ReconciliationSucceeded")]}, delay=2)
    started = time.monotonic()
    report = apply(cluster, namespace, [member(KUSTOMIZATION, "app")], wait_rules={"health_check_exprs": [FLUX_RULE]})
    assert 2 <= time.monotonic() - started < FAST
    assert [o.readiness_rule for o in report.objects] == ["health_check_exprs[0]"]


def test_per_object_annotations_decide(cluster, kube, namespace, crds):
    ready_when = {"applyset.kubernetes.ansible/ready-when": "status.phase == 'Done'",
                  "applyset.kubernetes.ansible/failed-when": "status.phase == 'Broken'"}
    controller(kube, path_of(WIDGET, namespace, "ok"), {"phase": "Working"})
    controller(kube, path_of(WIDGET, namespace, "ok"), {"phase": "Done"}, delay=2)
    report = apply(cluster, namespace, [member(WIDGET, "ok", annotations=ready_when)])
    assert [o.readiness_rule for o in report.objects] == ["annotation"]
    controller(kube, path_of(WIDGET, namespace, "bad"), {"phase": "Broken"})
    message, _ = fails_fast(cluster, namespace, [member(WIDGET, "ok", annotations=ready_when),
                                                 member(WIDGET, "bad", annotations=ready_when)])
    assert f"Widget {namespace}/bad: failed: failed-when holds" in message


def test_bad_expressions_are_refused_before_any_request(cluster, kube, namespace, crds):
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    bad_rule = dict(FLUX_RULE, current="status.conditions.exists(e, e.type == 'Ready'")
    with pytest.raises(InputError) as caught:
        engine.Engine(client, "rules", namespace, Options.from_settings(wait=True, wait_rules={"health_check_exprs": [bad_rule]}))
    assert "wait_rules.health_check_exprs[0] (kustomize.toolkit.fluxcd.io/v1/Kustomization) current does not parse" \
        in str(caught.value)
    assert (client.requests_sent, client.writes_sent) == (0, 0)
    annotated = member(WIDGET, "w", annotations={"applyset.kubernetes.ansible/ready-when": "status.phase =="})
    run = engine.Engine(client, "rules", namespace, Options.from_settings(wait=True))
    with pytest.raises(InputError) as caught:
        run.apply(manifests.load_definition([member(WIDGET, "first"), annotated]))
    assert "definition item 2 (Widget w)" in caught.value.obj, caught.value.obj
    assert "annotation applyset.kubernetes.ansible/ready-when does not parse" in str(caught.value)
    assert caught.value.report.requests["writes"] == 0 and client.writes_sent == 0
    assert kube.get(path_of(WIDGET, namespace, "first")) is None


def test_check_mode_shows_the_rule_of_each_member(cluster, kube, namespace, crds):
    objects = [member(CERTIFICATE, "web"), member(WIDGET, "w"), member(KUSTOMIZATION, "app"),
               member(WIDGET, "noted", annotations={"applyset.kubernetes.ansible/failed-when": "status.phase == 'x'"}),
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}},
               {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
                   "selector": {"matchLabels": {"app": "web"}}, "template": {
                       "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "w", "image": "w"}]}}}}]
    report = apply(cluster, namespace, objects, dry_run=True, wait=False,
                   wait_rules={"health_check_exprs": [FLUX_RULE]})
    shown = {o.name + "/" + o.kind: o.readiness_rule for o in report.objects}
    assert shown == {"web/Certificate": "library Certificate.cert-manager.io", "w/Widget": "generic",
                     "app/Kustomization": "health_check_exprs[0]",
                     "noted/Widget": "annotation failed-when, then generic", "settings/ConfigMap": "none",
                     "web/Deployment": "built-in"}


# ----- the module: on_failure rollback starts at once; info shows the rules ----------------------------


def test_rollback_starts_at_once_after_a_failed_verdict_and_info_shows_the_rules(cluster, kube, namespace, crds,
                                                                                tmp_path):
    common = {"parent": "shop", "namespace": namespace, "wait": True}
    good = [member(WIDGET, "w")]
    bad = [member(WIDGET, "w"), member(CERTIFICATE, "web")]
    controller(kube, path_of(CERTIFICATE, namespace, "web"),
               {"conditions": [cond("Ready", "False", "ConfigError", "issuer ca not found")]})
    out = tmp_path / "out.json"
    tasks = [
        {"name": "good", "applyset.kubernetes.applyset_apply": {**common, "definition": good}, "register": "good"},
        {"name": "bad", "applyset.kubernetes.applyset_apply": {
            **common, "definition": bad, "wait_timeout": WAIT_TIMEOUT, "on_failure": "rollback"},
         "register": "bad", "ignore_errors": True},
        {"name": "info", "applyset.kubernetes.applyset_info": {
            "parent": "shop", "namespace": namespace, "readiness": True,
            "wait_rules": {"health_check_exprs": [dict(WIDGET_RULE)]}}, "register": "info"},
        {"copy": {"content": "{{ {'good': good, 'bad': bad, 'info': info} | to_nice_json }}", "dest": str(out)}},
    ]
    book = tmp_path / "play.yml"
    book.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}], sort_keys=False))
    started = time.monotonic()
    proc = run_playbook(cluster, book, env=ansible_env(cluster))
    elapsed = time.monotonic() - started
    assert out.exists(), proc.stdout + proc.stderr
    results = json.loads(out.read_text())
    bad_result = results["bad"]
    assert bad_result["failed"] and bad_result["rolled_back_to"] == 1, bad_result
    assert "Ready False: ConfigError: issuer ca not found" in bad_result["msg"], bad_result["msg"]
    assert elapsed < 60, f"the playbook took {elapsed:.0f}s; the failed wait had {WAIT_TIMEOUT}s"
    assert kube.get(path_of(CERTIFICATE, namespace, "web")) is None  # rolled back: not a member of revision 1
    members = results["info"]["applysets"][0]["members"]
    assert [(m["kind"], m["readiness_rule"], m["ready"]) for m in members] == [
        ("Widget", "health_check_exprs[0]", False)], members


WIDGET_RULE = {"apiVersion": "rules.example.com/v1", "kind": "Widget", "current": "status.phase == 'Done'"}


def test_an_apply_error_still_names_the_rule(cluster, kube, namespace, crds):
    controller(kube, path_of(CERTIFICATE, namespace, "web"),
               {"conditions": [cond("Ready", "False", "ConfigError", "bad")]})
    with pytest.raises(ApplySetError) as caught:
        apply(cluster, namespace, [member(CERTIFICATE, "web")])
    rules = [o.readiness_rule for o in caught.value.report.objects]
    assert rules == ["library Certificate.cert-manager.io"]
