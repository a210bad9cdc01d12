"""Immutable changes through the engine (fakeapi.py): the refused field and the way out named, and
``recreate_on_immutable``: delete with the UID precondition, apply again; never a protected kind,
nothing deleted when the replacement would be refused."""

import pytest
from applyset.errors import InputError, InputErrors

from fakeapi import deployed, load, run
from engine_objects import immutable_refusal, job


def test_an_immutable_change_names_the_field_and_the_way_out(api):
    deployed(api, job("busybox:1"))
    immutable_refusal(api, "/apis/batch/v1/namespaces/shop/jobs/mig")
    report, error = run(api, "apply", load(job("busybox:2")))
    assert error is not None
    (result,) = report.objects
    assert result.action == "failed" and "spec.template: field is immutable" in result.reason
    assert "recreate_on_immutable" in result.reason
    assert not any(r.method == "DELETE" for r in api.requests)


def test_an_immutable_change_is_recreated_when_asked(api):
    deployed(api, job("busybox:1"))
    old_uid = api.object("batch/v1", "Job", "mig", "shop")["metadata"]["uid"]
    immutable_refusal(api, "/apis/batch/v1/namespaces/shop/jobs/mig")
    report, error = run(api, "apply", load(job("busybox:2")), recreate_on_immutable=frozenset({"Job"}))
    assert error is None
    (result,) = report.objects
    assert result.action == "replaced"
    (delete,) = [r for r in api.requests if r.method == "DELETE"]
    assert delete.body["preconditions"] == {"uid": old_uid}
    live = api.object("batch/v1", "Job", "mig", "shop")
    assert live["metadata"]["uid"] != old_uid
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:2"


def test_a_recreate_whose_replacement_would_be_refused_deletes_nothing(api):
    deployed(api, job("busybox:1"))
    immutable_refusal(api, "/apis/batch/v1/namespaces/shop/jobs/mig")
    api.fail("POST", "/apis/batch/v1/namespaces/shop/jobs", 422, "invalid replacement", reason="Invalid")
    report, error = run(api, "apply", load(job("busybox:2")), recreate_on_immutable=frozenset({"Job"}))
    assert error is not None
    (result,) = report.objects
    assert result.action == "failed" and "was not deleted" in result.reason
    assert not any(r.method == "DELETE" for r in api.requests)


@pytest.mark.parametrize("status, expected", [
    (409, "replaced by someone else meanwhile"), (403, "deleting it to recreate it failed")])
def test_a_recreate_whose_delete_fails_keeps_the_object(api, status, expected):
    deployed(api, job("busybox:1"))
    immutable_refusal(api, "/apis/batch/v1/namespaces/shop/jobs/mig")
    api.fail("DELETE", "/apis/batch/v1/namespaces/shop/jobs/mig", status, "no", reason="Conflict")
    report, error = run(api, "apply", load(job("busybox:2")), recreate_on_immutable=frozenset({"Job"}))
    (result,) = report.objects
    assert result.action == "failed" and expected in result.reason
    assert api.object("batch/v1", "Job", "mig", "shop") is not None


def test_a_recreate_whose_new_apply_fails_says_the_next_run_creates_it(api):
    deployed(api, job("busybox:1"))
    immutable_refusal(api, "/apis/batch/v1/namespaces/shop/jobs/mig")
    api.fail("PATCH", "/apis/batch/v1/namespaces/shop/jobs/mig", 500, "etcd down", times=None,
             when=lambda r: len([x for x in api.requests if x.method == "DELETE"]) > 0)
    report, error = run(api, "apply", load(job("busybox:2")), recreate_on_immutable=frozenset({"Job"}))
    (result,) = report.objects
    assert result.action == "failed" and "the next run creates it" in result.reason


def test_recreate_of_a_protected_kind_is_refused_before_any_write(api):
    report, error = run(api, "apply", load({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                            "metadata": {"name": "data"}, "spec": {}}),
                        recreate_on_immutable=frozenset({"PersistentVolumeClaim"}))
    assert isinstance(error, (InputError, InputErrors))
    assert api.writes() == []


def test_an_immutable_change_of_a_protected_kind_is_never_recreated(api):
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
           "spec": {"storageClassName": "a"}}
    deployed(api, pvc)
    immutable_refusal(api, "/api/v1/namespaces/shop/persistentvolumeclaims/data")
    report, error = run(api, "apply", load({**pvc, "spec": {"storageClassName": "b"}}))
    (result,) = report.objects
    assert result.action == "failed" and "protected kind" in result.reason
    assert not any(r.method == "DELETE" for r in api.requests)
