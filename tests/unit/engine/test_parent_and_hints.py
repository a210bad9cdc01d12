"""The parent through the engine (fakeapi.py): its id, tooling and takeover, custom resource parents
and bad references, and the group-kinds hint it records (legacy, unserved or unlistable kinds)."""

import pytest
from applyset import spec
from applyset.errors import InputError, ParentError

from fakeapi import ID, actions, cm, deploy, deployed, load, make_engine, outcome, parent_annotations, run
from engine_objects import existing_parent, crd


# ----- the parent: id, tooling, takeover -----------------------------------------------------


def test_a_parent_with_a_wrong_id_is_refused_before_any_write(api):
    existing_parent(api, labels={spec.LABEL_ID: "applyset-forged-v1"})
    report, error = run(api, "apply", load(cm("a")), takeover=True)
    assert isinstance(error, ParentError) and "incorrect value for label" in str(error)
    assert "impersonation" in error.fix
    assert api.writes() == []


def test_a_parent_of_another_tool_is_refused_unless_taken_over(api):
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: "kubectl/v1.30.0",
                                      spec.ANNOTATION_GROUP_KINDS: "ConfigMap"})
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and 'managed by tooling "kubectl"' in str(error)
    assert "takeover" in error.fix and api.writes() == []
    report, error = run(api, "apply", load(cm("a")), takeover=True)
    assert error is None
    assert parent_annotations(api)[spec.ANNOTATION_TOOLING] == spec.tooling_value()
    assert report.applyset["tooling"] == spec.tooling_value()


def test_a_parent_without_tooling_or_id_is_refused(api):
    existing_parent(api, annotations={spec.ANNOTATION_GROUP_KINDS: "ConfigMap"})
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "missing required annotation" in str(error)
    api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"].update(
        labels={}, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value()}))
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "does not have required label" in str(error)
    assert api.writes() == []


def test_a_parent_without_the_group_kinds_hint_is_refused_unless_taken_over(api):
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value()})
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "contains-group-kinds" in str(error)
    assert api.writes() == []
    report, error = run(api, "apply", load(cm("a")), takeover=True)
    assert error is None


def test_a_parent_that_is_also_a_member_is_refused(api):
    report, error = run(api, "apply", load(cm("shop")))
    assert isinstance(error, InputError) and "cannot be a member" in str(error)
    assert api.writes() == []

# ----- custom resource parents and bad references --------------------------------------------


def custom_parent_kind(api, labelled=True):
    from fakeapi import DEFAULT_KINDS, Kind
    api.kinds = list(DEFAULT_KINDS) + [Kind("example.com", "v1", "ApplySet", "applysets", False)]
    api.add(crd("applysets", "ApplySet", scope="Cluster",
                labels={spec.LABEL_PARENT_TYPE: "true"} if labelled else None))


def test_a_custom_resource_parent_is_created_from_its_definition(api):
    custom_parent_kind(api)
    definition = {"apiVersion": "example.com/v1", "kind": "ApplySet", "metadata": {"name": "shop"}, "spec": {}}
    report, error = outcome(make_engine(api, parent=definition, namespace="shop"), "apply", load(cm("a")))
    assert error is None
    live = api.object("example.com/v1", "ApplySet", "shop")
    assert live["metadata"]["labels"][spec.LABEL_ID] == spec.compute_id("shop", "", "ApplySet", "example.com")
    assert live["metadata"]["annotations"][spec.ANNOTATION_ADDITIONAL_NAMESPACES] == "shop"


def test_a_custom_resource_parent_needs_its_definition_and_a_labelled_crd(api):
    custom_parent_kind(api)
    report, error = outcome(make_engine(api, parent="applysets.example.com/shop", namespace="shop"), "apply",
                            load(cm("a")))
    assert isinstance(error, ParentError) and "cannot be created automatically" in str(error)
    custom_parent_kind(api, labelled=False)
    report, error = outcome(make_engine(api, parent="applysets.example.com/shop", namespace="shop"), "apply",
                            load(cm("a")))
    assert isinstance(error, ParentError) and "not permitted as an ApplySet parent" in str(error)
    assert "kubectl label crd applysets.example.com" in error.fix
    assert api.writes() == []


@pytest.mark.parametrize("parent, expected", [
    ("nosuchthings/shop", 'the server has no resource "nosuchthings"'),
    ({"kind": "Gadget", "name": "x"}, "does not serve the parent kind Gadget"),
    ({"kind": "Secret"}, "the parent has no name"),
    (42, "parent must be a string or a dict"),
    ("deployments.apps/shop", "not permitted as an ApplySet parent"),
])
def test_a_bad_parent_reference_is_an_input_error(api, parent, expected):
    report, error = outcome(make_engine(api, parent=parent), "apply", load(cm("a")))
    assert error is not None and expected in str(error)
    assert api.writes() == []


def test_a_namespaced_parent_needs_a_namespace_and_a_cluster_one_none(api):
    report, error = outcome(make_engine(api, parent="configmaps/shop", namespace=None), "apply",
                            load(cm("a", "shop")))
    assert isinstance(error, InputError) and "namespace is required" in str(error)
    custom_parent_kind(api)
    report, error = outcome(make_engine(api, parent={"apiVersion": "example.com/v1", "kind": "ApplySet",
                                                     "name": "x", "namespace": "shop"}), "apply", load(cm("a")))
    assert isinstance(error, InputError) and "cluster-scoped" in str(error)

# ----- the group-kinds hint ------------------------------------------------------------------


def test_legacy_group_resources_hint_is_read_and_dropped(api):
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value(),
                                      spec.ANNOTATION_GROUP_RESOURCES: "configmaps,deployments.apps"})
    api.add(cm("b", "shop", meta={"labels": {spec.LABEL_PART_OF: ID}}))
    api.add({**deploy("old"), "metadata": {"name": "old", "namespace": "shop", "labels": {spec.LABEL_PART_OF: ID}}})
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert error is None
    assert actions(report)["Deployment shop/old"] == "pruned"
    annotations = parent_annotations(api)
    assert spec.ANNOTATION_GROUP_RESOURCES not in annotations
    assert annotations[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_a_recorded_kind_no_one_serves_any_more_leaves_the_hint(api):
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value(),
                                      spec.ANNOTATION_GROUP_KINDS: "ConfigMap,Widget.example.com"})
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert any("no CRD or APIService defines any more" in w for w in report.warnings)
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_a_recorded_kind_whose_crd_still_exists_stays_in_the_hint(api):
    api.add(crd("widgets", "Widget", served=False))
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value(),
                                      spec.ANNOTATION_GROUP_KINDS: "ConfigMap,Widget.example.com"})
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert any("does not serve right now" in w for w in report.warnings)
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Widget.example.com"
    report, error = run(api, "uninstall")
    assert error is not None and "cannot be listed" in str(error)
    assert api.object("v1", "ConfigMap", "shop", "shop") is not None


def test_a_recorded_kind_that_cannot_be_listed_stays_in_the_hint(api):
    from fakeapi import DEFAULT_KINDS, Kind
    api.kinds = list(DEFAULT_KINDS) + [Kind("example.com", "v1", "Gadget", "gadgets", True, verbs=("get", "patch"))]
    deployed(api, cm("a"))
    api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(
        {spec.ANNOTATION_GROUP_KINDS: "ConfigMap,Gadget.example.com"}))
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert any("Gadget.example.com cannot be listed" in w for w in report.warnings)
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Gadget.example.com"
