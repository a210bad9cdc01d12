"""Verdicts only on status that describes the applied spec (issue 45, items 1 and 2): the
generation for every rule source, the time of our apply for controllers that report no generation
(wait/freshness.py), and the library's reading of each project's transient and terminal states."""

from __future__ import annotations

import pytest

from applyset.wait import freshness, library, readiness
from applyset.wait.status import Status

READY, PROGRESS, FAILED = Status.CURRENT, Status.IN_PROGRESS, Status.FAILED
MANAGER = "applyset.kubernetes"


def outcome(obj, **rules):
    found = readiness.verdict(obj, **rules)
    return found.status, found.message


def written(applied_at, status_at, created="2026-11-28T10:00:00Z"):
    """managedFields as the API server records them: our apply, the controller's status write."""
    fields = [{"manager": MANAGER, "operation": "Apply", "time": applied_at, "apiVersion": "v1"}]
    if status_at:
        fields.append({"manager": "keda-operator", "operation": "Update", "subresource": "status",
                       "time": status_at, "apiVersion": "v1"})
    return {"name": "web", "namespace": "shop", "generation": 2, "creationTimestamp": created,
            "managedFields": fields}


def scaled_object(ready_status, reason, applied_at, status_at, created="2026-11-28T10:00:00Z"):
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": written(applied_at, status_at, created), "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": ready_status, "reason": reason,
                                       "message": "ScaledObject doesn't have correct triggers specification"}]}}


# ----- kinds without a generation: the time of our write -------------------------------------------


def test_a_keda_failure_from_before_our_apply_waits_and_one_after_it_fails():
    # A fix-forward: the failure was written at 10:00:05, our apply at 10:00:09.
    old = scaled_object("False", "ScaledObjectCheckFailed", "2026-11-28T10:00:09Z", "2026-11-28T10:00:05Z")
    got, reason = outcome(old, field_manager=MANAGER)
    assert got == PROGRESS, reason
    assert "ScaledObjectCheckFailed" in reason and "not after this run's change at 10:00:09Z" in reason
    new = scaled_object("False", "ScaledObjectCheckFailed", "2026-11-28T10:00:09Z", "2026-11-28T10:00:11Z")
    assert outcome(new, field_manager=MANAGER)[0] == FAILED
    # Ready is not held back: readiness of a kind without generation is as before.
    assert outcome(scaled_object("True", "ScaledObjectReady", "2026-11-28T10:00:09Z", "2026-11-28T10:00:05Z"),
                   field_manager=MANAGER)[0] == READY


def test_the_same_second_counts_only_for_the_write_that_created_the_object():
    created = scaled_object("False", "ScaledObjectCheckFailed", "2026-11-28T10:00:00Z", "2026-11-28T10:00:00Z")
    assert outcome(created, field_manager=MANAGER)[0] == FAILED
    # An automatic rollback applied in the same second as the failure it answers: not its failure.
    rolled_back = scaled_object("False", "ScaledObjectCheckFailed", "2026-11-28T10:00:07Z", "2026-11-28T10:00:07Z")
    assert outcome(rolled_back, field_manager=MANAGER)[0] == PROGRESS


def test_without_our_manager_or_any_time_a_failure_counts_as_before():
    old = scaled_object("False", "ScaledObjectCheckFailed", "2026-11-28T10:00:09Z", "2026-11-28T10:00:05Z")
    assert outcome(old)[0] == FAILED  # applyset_info, the published documents: no run to compare with
    assert outcome(old, field_manager="someone-else")[0] == FAILED
    no_status_time = scaled_object("False", "ScaledObjectCheckFailed", "2026-11-28T10:00:09Z", None)
    assert outcome(no_status_time, field_manager=MANAGER)[0] == FAILED


def test_a_controller_that_reports_its_generation_is_judged_by_it_not_by_time():
    obj = scaled_object("False", "ScaledObjectCheckFailed", "2026-11-28T10:00:09Z", "2026-11-28T10:00:05Z")
    obj["status"]["observedGeneration"] = 2
    assert freshness.reports_generation(obj)
    assert freshness.older_than_our_write(obj, MANAGER) is None
    obj["status"]["observedGeneration"] = 1
    assert "reported for generation 1, not 2" in freshness.older_than_our_write(obj, MANAGER)


def test_a_failure_in_conditions_of_an_earlier_generation_waits_whatever_the_rule():
    # Crossplane's conditions record their generation; its rule reads Synced without it.
    managed = {"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket",
               "metadata": {"name": "b", "generation": 3}, "spec": {"forProvider": {"region": "eu-west-1"}},
               "status": {"conditions": [
                   {"type": "Synced", "status": "False", "reason": "ReconcileError", "message": "bucket name taken",
                    "observedGeneration": 2},
                   {"type": "Ready", "status": "False", "reason": "Creating", "observedGeneration": 2}]}}
    got, reason = outcome(managed, field_manager=MANAGER)
    assert got == PROGRESS and "bucket name taken" in reason and "generation 2, not 3" in reason
    managed["status"]["conditions"][0]["observedGeneration"] = 3
    assert outcome(managed, field_manager=MANAGER)[0] == FAILED


def application(phase, started, applied_at):
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {**written(applied_at, None), "generation": 7}, "spec": {},
            "status": {"health": {"status": "Degraded"}, "sync": {"status": "OutOfSync"},
                       "reconciledAt": "2026-11-28T10:00:10Z",
                       "operationState": {"phase": phase, "message": "one or more objects failed to apply",
                                          "startedAt": started, "finishedAt": started}}}


def test_an_argocd_sync_that_failed_before_our_apply_waits_for_the_next_sync():
    old = application("Failed", "2026-11-28T10:00:02Z", "2026-11-28T10:00:09Z")
    got, reason = outcome(old, field_manager=MANAGER)
    assert got == PROGRESS and "sync Failed" in reason, reason
    assert outcome(application("Running", "2026-11-28T10:00:10Z", "2026-11-28T10:00:09Z"),
                   field_manager=MANAGER)[0] == PROGRESS
    assert outcome(application("Failed", "2026-11-28T10:00:10Z", "2026-11-28T10:00:09Z"),
                   field_manager=MANAGER)[0] == FAILED


def test_an_argocd_invalid_spec_condition_fails():
    app = application("Succeeded", "2026-11-28T10:00:02Z", "2026-11-28T10:00:09Z")
    app["status"]["conditions"] = [{"type": "InvalidSpecError", "lastTransitionTime": "2026-11-28T10:00:10Z",
                                    "message": "application destination is not permitted in project 'shop'"}]
    got, reason = outcome(app, field_manager=MANAGER)
    assert got == FAILED and "not permitted in project" in reason


@pytest.mark.parametrize("phase", [
    "Invalid cluster definition",
    "Cluster cannot proceed to reconciliation due to an error while interacting with plugins",
    "Cluster cannot proceed to reconciliation due to an unknown plugin being required",
])
def test_cloudnativepg_phases_that_wait_for_a_person_fail(phase):
    cluster = {"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": {"name": "db"},
               "spec": {}, "status": {"phase": phase, "phaseReason": "spec.instances: must be at least 1"}}
    got, reason = outcome(cluster)
    assert got == FAILED and phase in reason


# ----- generation for every rule source ------------------------------------------------------------


def widget(phase, generation, observed):
    return {"apiVersion": "rules.example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "generation": generation, "annotations": {
                "applyset.kubernetes.ansible/ready-when": "status.phase == 'Done'",
                "applyset.kubernetes.ansible/failed-when": "status.phase == 'Broken'"}},
            "status": {"phase": phase, "observedGeneration": observed}}


def test_annotations_wait_while_the_status_is_behind_the_generation():
    got, reason = outcome(widget("Done", 3, 2))
    assert got == PROGRESS and "observe generation 3" in reason
    assert outcome(widget("Broken", 3, 2))[0] == PROGRESS
    assert outcome(widget("Done", 3, 3))[0] == READY
    assert outcome(widget("Broken", 3, 3))[0] == FAILED
    only_failed = widget("Broken", 3, 2)
    del only_failed["metadata"]["annotations"]["applyset.kubernetes.ansible/ready-when"]
    assert outcome(only_failed)[0] == PROGRESS  # the generic rule, also stale


# ----- cert-manager: its own meaning of Issuing and Ready -----------------------------------------


def certificate(*conditions, generation=2):
    return {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": "web", "generation": generation}, "spec": {},
            "status": {"conditions": [{"type": t, "status": s, "reason": r, "message": m, "observedGeneration": g}
                                      for t, s, r, m, g in conditions]}}


@pytest.mark.parametrize("reason", sorted(library._CERT_REISSUE))
def test_ready_false_with_a_reason_of_the_reissue_chain_is_in_progress(reason):
    got, why = outcome(certificate(("Ready", "False", reason, "Fields on existing CertificateRequest not up to date", 2)))
    assert got == PROGRESS and reason in why and "reissues" in why


def test_the_reissue_sequence_is_in_progress_until_ready():
    sequence = [
        [("Ready", "True", "Ready", "Certificate is up to date and has not expired", 1)],  # before the change
        [("Ready", "True", "Ready", "up to date", 1), ("Issuing", "True", "RequestChanged", "Fields changed", 2)],
        [("Ready", "False", "RequestChanged", "Fields changed", 2), ("Issuing", "True", "RequestChanged", "", 2)],
        [("Ready", "False", "RequestChanged", "Fields changed", 2)],
    ]
    for conditions in sequence:
        assert outcome(certificate(*conditions))[0] == PROGRESS, conditions
    assert outcome(certificate(("Ready", "True", "Ready", "up to date", 2),
                               ("Issuing", "False", "Issued", "The certificate has been successfully issued", 2)))[0] == READY


@pytest.mark.parametrize("reason", ["Failed", "Denied", "InvalidRequest", "UnsupportedKeyType"])
def test_a_failed_issuance_of_this_generation_fails_at_once_with_its_reason(reason):
    got, why = outcome(certificate(("Ready", "False", "DoesNotExist", "Secret does not exist", 2),
                                   ("Issuing", "False", reason, "The certificate request has failed to complete "
                                    "and will be retried: denied by policy", 2)))
    assert got == FAILED and f"Issuing False: {reason}" in why and "denied by policy" in why


def test_a_failed_issuance_of_an_earlier_generation_does_not_fail_a_rollback():
    got, why = outcome(certificate(("Ready", "False", "DoesNotExist", "Secret does not exist", 2),
                                   ("Issuing", "False", "Failed", "issuer not ready", 2), generation=3))
    assert got == PROGRESS and "generation 2" in why


def test_an_issuance_in_progress_names_issuing_and_ready():
    got, why = outcome(certificate(("Ready", "False", "DoesNotExist", "Secret does not exist", 2),
                                   ("Issuing", "True", "DoesNotExist", "Issuing certificate as Secret does not exist", 2)))
    assert got == PROGRESS
    assert why == ("Issuing: DoesNotExist: Issuing certificate as Secret does not exist; "
                   "Ready False: DoesNotExist: Secret does not exist")


def test_entries_say_when_a_failure_was_reported():
    app = library.LIBRARY[readiness.group_kind_of({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application"})]
    assert app.reported is library.application_reported
    keda = library.LIBRARY[readiness.group_kind_of({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject"})]
    assert keda.reported is freshness.status_write


# ----- Gateway API: the Programmed reasons that need the spec changed ------------------------------------


def gateway(programmed_reason, generation=1, observed=1, listener=None):
    status = {"conditions": [
        {"type": "Accepted", "status": "True", "reason": "Accepted", "observedGeneration": observed},
        {"type": "Programmed", "status": "False", "reason": programmed_reason, "message": "10.0.0.9 is in use",
         "observedGeneration": observed}]}
    if listener:
        status["listeners"] = [{"name": "https", "conditions": [listener]}]
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "gw", "generation": generation}, "spec": {}, "status": status}


def test_a_gateway_address_that_cannot_be_used_fails_and_one_not_yet_assigned_waits():
    assert outcome(gateway("AddressNotUsable"))[0] == FAILED
    assert outcome(gateway("AddressNotAssigned"))[0] == PROGRESS
    assert outcome(gateway("NoResources"))[0] == PROGRESS
    assert outcome(gateway("AddressNotUsable", generation=2, observed=1))[0] == PROGRESS
    invalid = {"type": "Programmed", "status": "False", "reason": "Invalid", "message": "no TLS certificate"}
    got, reason = outcome(gateway("Pending", listener=invalid))
    assert got == FAILED and "listener https: Programmed False: Invalid" in reason
