"""The parent's reads and writes (parent.py) as a run meets them, against the fake (fakeapi.py).

What a parent says decides what a run may prune, so each refusal here is checked to come before
any write. tests/integration/test_parent*.py prove the same against a real API server.
"""

import json

import pytest
from applyset import spec
from applyset.errors import ApplySetError, ParentError

from fakeapi import (ID, PARENT_PATH, FakeApi, Kind, DEFAULT_KINDS, actions, cm, deployed, load, make_engine,
                     member_writes, outcome, parent_annotations, run)


@pytest.fixture
def api():
    fake = FakeApi()
    fake.add_namespace("shop")
    return fake


def existing_parent(api, **annotations):
    api.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "shop", "namespace": "shop", "labels": {spec.LABEL_ID: ID},
        "annotations": {spec.ANNOTATION_TOOLING: spec.tooling_value(), **annotations}}})


def crd(plural, kind, group="example.com", labels=None, scope="Namespaced"):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}", **({"labels": labels} if labels else {})},
            "spec": {"group": group, "scope": scope, "names": {"plural": plural, "kind": kind},
                     "versions": [{"name": "v1", "served": False}]}}


# ----- reading -------------------------------------------------------------------------------------


def test_a_parent_that_cannot_be_read_stops_the_run(api):
    api.fail("GET", PARENT_PATH, 403, "configmaps is forbidden", reason="Forbidden")
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "failed to fetch ApplySet parent object" in str(error)
    assert "get on the parent" in error.fix and api.writes() == []


def test_a_custom_parent_kind_that_cannot_be_checked_stops_the_run(api):
    api.kinds = list(DEFAULT_KINDS) + [Kind("example.com", "v1", "ApplySet", "applysets", False)]
    api.fail("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/applysets.example.com", 403,
             "forbidden", reason="Forbidden")
    report, error = outcome(make_engine(api, parent="applysets.example.com/shop"), "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "identifying allowed custom resource parent types" in str(error)
    assert "get on customresourcedefinitions" in error.fix


def test_a_built_in_kind_of_a_named_group_is_no_parent(api):
    report, error = outcome(make_engine(api, parent={"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}),
                            "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "not permitted as an ApplySet parent" in str(error)
    assert api.writes() == []


@pytest.mark.parametrize("claim", ['{"run": "other", "expires": "soon"}', "not json", '["a list"]'])
def test_an_unreadable_claim_protects_nothing(api, claim):
    existing_parent(api, **{spec.ANNOTATION_GROUP_KINDS: "ConfigMap", spec.ANNOTATION_CLAIM: claim})
    report, error = run(api, "apply", load(cm("a")), claim_wait=0)
    assert error is None and actions(report) == {"ConfigMap shop/a": "created"}
    assert spec.ANNOTATION_CLAIM not in parent_annotations(api)


def test_a_legacy_entry_whose_crd_exists_is_kept_under_its_kind(api):
    api.add(crd("widgets", "Widget"))
    existing_parent(api, **{spec.ANNOTATION_GROUP_RESOURCES: "configmaps,widgets.example.com"})
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Widget.example.com"


def test_a_legacy_entry_nothing_defines_is_dropped(api):
    existing_parent(api, **{spec.ANNOTATION_GROUP_RESOURCES: "configmaps,gadgets.example.com"})
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert any("names gadgets.example.com; no CRD or APIService defines it" in w for w in report.warnings)
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_a_legacy_entry_of_an_aggregated_api_that_is_down_stops_the_run(api):
    api.add({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.example.com"},
             "spec": {"group": "example.com", "version": "v1", "service": {"name": "x", "namespace": "y"}}})
    existing_parent(api, **{spec.ANNOTATION_GROUP_RESOURCES: "configmaps,gadgets.example.com"})
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "its kind cannot be known" in str(error)
    assert api.writes() == []


# ----- writing -------------------------------------------------------------------------------------


def test_a_parent_created_by_someone_else_meanwhile_starts_the_run_over_on_it(api):
    """Two first deploys: the other run's POST of the parent came first. This run's 409 is a
    race lost before anything was written: it reads the parent again and deploys on it."""
    def someone_else_creates_it(_request):
        existing_parent(api, **{spec.ANNOTATION_GROUP_KINDS: ""})

    api.before("POST", PARENT_PATH.rpartition("/")[0], someone_else_creates_it)
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "created"}
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_a_parent_created_and_claimed_by_another_run_meanwhile_is_waited_for(api):
    """The other run created the parent and holds its claim: this run waits for it (here
    ``claim_wait: 0``), and says so, instead of reporting a conflict; nothing is written."""
    claim = json.dumps({"run": "elsewhere/1/abcd", "expires": 4102444800.0})

    def another_run_creates_and_claims_it(_request):
        existing_parent(api, **{spec.ANNOTATION_GROUP_KINDS: "", spec.ANNOTATION_CLAIM: claim})

    api.before("POST", PARENT_PATH.rpartition("/")[0], another_run_creates_and_claims_it)
    report, error = run(api, "apply", load(cm("a")), claim_wait=0)
    assert isinstance(error, ApplySetError) and "another run (elsewhere/1/abcd)" in str(error)
    assert member_writes(api) == []


def test_a_parent_write_that_landed_before_the_connection_dropped_is_recognised(api):
    """The client retries an apply; the retry meets our own write (409, the resourceVersion moved).
    The parent then says what we wrote, so the run goes on."""
    deployed(api, cm("a"))

    def the_write_lands_then_the_answer_is_lost(request):
        api.request("PATCH", "https://fake.k8s.test:6443" + PARENT_PATH + "?fieldManager=" + spec.PARENT_FIELD_MANAGER,
                    body=json.dumps(request.body), headers={"Content-Type": request.content_type})
        api.fail("PATCH", PARENT_PATH, 409, "the object has been modified", reason="Conflict")

    api.before("PATCH", PARENT_PATH, the_write_lands_then_the_answer_is_lost)
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert error is None and actions(report)["ConfigMap shop/b"] == "created"
    claim, landed = api.sent("PATCH", PARENT_PATH)[:2]  # the hook's write is recorded after the claim's
    assert (claim.status, landed.status) == (409, 200)
    reread = api.requests[api.requests.index(landed) + 1]
    assert (reread.method, reread.path) == ("GET", PARENT_PATH)
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_a_parent_that_cannot_be_read_after_a_conflict_stops_the_run(api):
    deployed(api, cm("a"))
    api.fail("PATCH", PARENT_PATH, 409, "the object has been modified", reason="Conflict")
    api.fail("GET", PARENT_PATH, 403, "forbidden", reason="Forbidden", when=lambda r: len(api.sent("PATCH")) > 0)
    # A change with reapply: always takes the claim (with changed, an update needs none).
    report, error = run(api, "apply", load(cm("a", k="changed")), reapply="always")
    assert isinstance(error, ParentError) and "failed to update ApplySet: forbidden" in str(error)
    assert member_writes(api) == []


def test_the_final_parent_write_failing_is_an_error_and_the_union_stays(api):
    from fakeapi import deploy
    deployed(api, cm("a"), deploy("web"))
    api.fail("PATCH", PARENT_PATH, 500, "etcdserver: request timed out", when=lambda r: len(
        [x for x in api.sent("PATCH", PARENT_PATH)]) > 1)
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "etcdserver: request timed out" in str(error)
    assert actions(report)["Deployment shop/web"] == "pruned"
    annotations = parent_annotations(api)
    assert annotations[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Deployment.apps"


def test_a_parent_namespace_the_check_could_not_read_is_named_when_the_create_fails(api):
    api.fail("GET", "/api/v1/namespaces/nowhere", 403, "forbidden", reason="Forbidden")
    report, error = outcome(make_engine(api, namespace="nowhere"), "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "namespace nowhere does not exist" in str(error)
    assert "create_namespace: true" in error.fix


def test_a_namespaced_custom_parent_is_created_in_its_namespace(api):
    api.kinds = list(DEFAULT_KINDS) + [Kind("example.com", "v1", "ApplySet", "applysets", True)]
    api.add(crd("applysets", "ApplySet", labels={spec.LABEL_PARENT_TYPE: "true"}))
    definition = {"apiVersion": "example.com/v1", "kind": "ApplySet", "metadata": {"name": "shop"},
                  "spec": {"owner": "team-a"}}
    report, error = outcome(make_engine(api, parent=definition), "apply", load(cm("a")))
    assert error is None
    live = api.object("example.com/v1", "ApplySet", "shop", "shop")
    assert live["metadata"]["namespace"] == "shop" and live["spec"] == {"owner": "team-a"}
    assert live["metadata"]["labels"][spec.LABEL_ID] == spec.compute_id("shop", "shop", "ApplySet", "example.com")
