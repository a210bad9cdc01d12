"""Namespaces through the engine (fakeapi.py): missing or deleting ones found before any write, the
parent's namespace made with ``create_namespace``, a namespace of the set created before the parent,
refusals named with their way out, and members in several namespaces."""

import pytest
from applyset import spec
from applyset.errors import NamespaceMissingError

from fakeapi import ID, FakeApi, actions, cm, deployed, load, parent_annotations, run


def test_a_missing_namespace_is_found_before_any_write(api):
    report, error = run(api, "apply", load(cm("a", "nowhere"), cm("b")))
    assert isinstance(error, NamespaceMissingError)
    assert 'namespaces "nowhere" not found' in str(error) and "ConfigMap nowhere/a" in str(error)
    assert api.writes() == []


def test_a_missing_parent_namespace_suggests_create_namespace():
    api = FakeApi()
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, NamespaceMissingError)
    assert "the parent configmaps./shop" in str(error) and "create_namespace: true" in error.fix
    assert api.writes() == []


def test_a_namespace_being_deleted_is_refused(api):
    api.add({"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "old", "deletionTimestamp": "2026-01-01T00:00:00Z"}})
    report, error = run(api, "apply", load(cm("a", "old")))
    assert isinstance(error, NamespaceMissingError) and "namespace old is being deleted" in str(error)
    assert api.writes() == []


def test_a_namespace_gone_after_the_check_is_named_on_the_object(api):
    api.add_namespace("gone")
    api.before("PATCH", "/api/v1/namespaces/gone/configmaps/a",
               lambda _r: api.remove("v1", "Namespace", "gone"))
    report, error = run(api, "apply", load(cm("a", "gone")))
    assert error is not None
    (result,) = report.objects
    assert result.action == "failed" and "namespace gone does not exist" in result.reason
    assert "add a Namespace object for gone" in result.reason

# ----- creating namespaces -------------------------------------------------------------------


def test_create_namespace_makes_the_parents_namespace_outside_the_set():
    api = FakeApi()
    report, error = run(api, "apply", load(cm("a")), create_namespace=True)
    assert error is None
    assert actions(report) == {"Namespace shop": "created", "ConfigMap shop/a": "created"}
    assert spec.LABEL_PART_OF not in (api.object("v1", "Namespace", "shop")["metadata"].get("labels") or {})
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_create_namespace_that_fails_stops_the_run():
    api = FakeApi()
    api.fail("PATCH", "/api/v1/namespaces/shop", 403, "forbidden", reason="Forbidden")
    report, error = run(api, "apply", load(cm("a")), create_namespace=True)
    assert error is not None and "could not create namespace shop" in str(error)
    assert "create on namespaces" in error.fix
    assert [r.path for r in api.writes()] == ["/api/v1/namespaces/shop"]


def test_a_namespace_of_the_set_is_created_before_the_parent_in_it():
    api = FakeApi()
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    report, error = run(api, "apply", load(ns, cm("a")))
    assert error is None
    assert actions(report) == {"Namespace shop": "created", "ConfigMap shop/a": "created"}
    assert [r.path for r in api.writes()][0] == "/api/v1/namespaces/shop"
    assert api.object("v1", "Namespace", "shop")["metadata"]["labels"] == {spec.LABEL_PART_OF: ID}


def test_a_namespace_of_the_set_that_cannot_be_created_stops_before_the_parent():
    api = FakeApi()
    api.fail("PATCH", "/api/v1/namespaces/shop", 403, "forbidden", reason="Forbidden")
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    report, error = run(api, "apply", load(ns, cm("a")))
    assert error is not None and "could not create namespace shop for the parent" in str(error)
    assert [r.path for r in api.writes()] == ["/api/v1/namespaces/shop"]


@pytest.mark.parametrize("status, message, fix", [
    (403, 'namespaces "shop" is forbidden: ValidatingAdmissionPolicy \'no-shops\' with binding \'b\' denied request: '
          'no shops here', "admission webhook or policy"),
    (400, 'admission webhook "ns.policy.example.com" denied the request: namespace names need a team prefix',
     "admission webhook or policy"),
    (403, 'namespaces is forbidden: User "tenant" cannot create resource "namespaces"', "credentials need create"),
    (500, "etcdserver: request timed out", "fix what the server said"),
])
def test_a_refused_namespace_of_the_set_names_the_refusal_and_its_way_out(status, message, fix):
    api = FakeApi()
    api.fail("PATCH", "/api/v1/namespaces/shop", status, message, reason="Forbidden" if status == 403 else "Invalid",
             times=None)
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    _report, error = run(api, "apply", load(ns, cm("a")))
    assert str(error).startswith(f"ApplySet ConfigMap shop/shop: could not create namespace shop for the parent: {message}")
    assert fix in error.fix and "nothing else was changed" in error.fix
    assert [r.path for r in api.writes()] == ["/api/v1/namespaces/shop"]

# ----- several namespaces --------------------------------------------------------------------


def test_members_in_other_namespaces_are_recorded_and_pruned_there(api):
    api.add_namespace("other")
    deployed(api, cm("a"), cm("b", "other"), cm("c", "other"))
    assert parent_annotations(api)[spec.ANNOTATION_ADDITIONAL_NAMESPACES] == "other"
    report, error = run(api, "apply", load(cm("a"), cm("b", "other")))
    assert error is None and actions(report)["ConfigMap other/c"] == "pruned"
    report, error = run(api, "apply", load(cm("a")))
    assert error is None and actions(report)["ConfigMap other/b"] == "pruned"
    assert parent_annotations(api)[spec.ANNOTATION_ADDITIONAL_NAMESPACES] == ""
    assert api.names("v1", "ConfigMap") == ["a", "shop"]
