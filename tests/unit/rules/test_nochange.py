"""nochange: when a member's apply may be skipped. Every doubt must mean "apply"."""

from __future__ import annotations

import copy

import pytest
from applyset.rules import nochange
from applyset import spec

MANAGER = "applyset.kubernetes"
DIGEST = spec.ANNOTATION_APPLIED_DIGEST


def body(**data):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "shop", "labels": {spec.LABEL_PART_OF: "applyset-x-v1"}},
            "data": data or {"k": "v"}}


def applied(member, manager=MANAGER):
    """The live object a server-side apply of ``member`` leaves: the digest, server metadata, our entry."""
    sent = nochange.with_digest(member)
    live = copy.deepcopy(sent)
    live["metadata"].update(uid="u1", resourceVersion="7", creationTimestamp="2026-01-01T00:00:00Z",
                            managedFields=[{"manager": manager, "operation": "Apply", "apiVersion": "v1",
                                            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}])
    return live


# ----- request_digest ----------------------------------------------------------------------


def test_the_digest_is_versioned_unpadded_base64url_of_sha256():
    digest = nochange.request_digest(body())
    assert digest.startswith("v1:")
    assert len(digest) == 3 + 43 and "=" not in digest and "+" not in digest and "/" not in digest


def test_the_digest_ignores_key_order_and_its_own_annotation():
    a = body(x="1", y="2")
    b = {"data": {"y": "2", "x": "1"}, "metadata": dict(reversed(list(a["metadata"].items()))),
         "kind": "ConfigMap", "apiVersion": "v1"}
    stamped = nochange.with_digest(a)
    d = [nochange.request_digest(x) for x in (a, b, stamped)]
    assert d[0] == d[1] == d[2]


def test_the_digest_is_the_bodys_alone():
    # Not the request's options: a new field manager would otherwise conflict with the old one
    # over the annotation itself (found against the real server, tests/integration/test_fast_path.py).
    assert nochange.request_digest(body()) == nochange.request_digest(copy.deepcopy(body()))


def test_a_dropped_field_changes_the_digest():
    assert nochange.request_digest(body(k="v", gone="x")) != nochange.request_digest(body(k="v"))


def test_with_digest_leaves_the_body_alone_and_drops_an_empty_annotations_map():
    b = body()
    stamped = nochange.with_digest(b)
    assert "annotations" not in b["metadata"]
    assert set(stamped["metadata"]["annotations"]) == {DIGEST}
    assert "annotations" not in nochange._without_digest(stamped)["metadata"]


def test_with_digest_replaces_a_digest_the_manifest_brought():
    b = body()
    b["metadata"]["annotations"] = {DIGEST: "v1:forged", "keep": "me"}
    stamped = nochange.with_digest(b)
    assert stamped["metadata"]["annotations"]["keep"] == "me"
    assert stamped["metadata"]["annotations"][DIGEST] == nochange.request_digest(
        b) != "v1:forged"


# ----- contains ------------------------------------------------------------------------------


@pytest.mark.parametrize("desired, live", [
    ({"a": 1}, {"a": 1, "b": 2}),
    ({"a": {"b": "x"}}, {"a": {"b": "x", "c": "y"}}),
    ([{"name": "c", "image": "i"}], [{"name": "c", "image": "i", "imagePullPolicy": "Always"}]),
    (1, 1.0),
    (0.5, 0.5),
    (True, True),
    ("x", "x"),
    (None, None),
    ({}, {"anything": 1}),
    ([], []),
    ({"a": None}, {}),  # a null sets nothing: the server stores no key (creationTimestamp: null)
    ({"a": [], "b": {}}, {}),  # empty lists and maps are dropped (Go's omitempty)
])
def test_contained(desired, live):
    assert nochange.contains(desired, live)


@pytest.mark.parametrize("desired, live", [
    ({"a": 1}, {}),  # missing key
    ({"a": 1}, {"a": 2}),
    ([1, 2], [1, 2, 3]),  # lists compare with equal length
    ([1, 2, 3], [1, 2]),
    ([1, 2], [2, 1]),
    (True, 1),  # a bool is never a number
    (1, True),
    (False, 0),
    ("1", 1),  # a string is only a string
    (1, "1"),
    ("0.5", "500m"),  # strict here: why_apply compares the body in the form the server stores it
    (0.5, "500m"),
    ({"a": 1}, [1]),
    ([1], {"0": 1}),
    ("x", {"x": 1}),
    (None, 0),
    (None, ""),
    (0, None),
])
def test_not_contained(desired, live):
    assert not nochange.contains(desired, live)


def test_secret_string_data_is_never_contained_in_data():
    desired = {"stringData": {"p": "s"}}
    live = {"data": {"p": "cw=="}}
    assert not nochange.contains(desired, live)


# ----- why_apply -----------------------------------------------------------------------------


def test_a_live_object_as_last_applied_may_be_skipped():
    assert nochange.why_apply(body(), applied(body()), MANAGER) is None


def test_the_member_body_may_already_carry_its_digest():
    stamped = nochange.with_digest(body())
    assert nochange.why_apply(stamped, applied(body()), MANAGER) is None


def test_not_found_is_applied():
    assert nochange.why_apply(body(), None, MANAGER) == "not found"


def test_metadata_only_is_never_enough():
    live = {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": applied(body())["metadata"]}
    assert nochange.why_apply(body(), live, MANAGER) is not None


def test_an_object_being_deleted_is_applied():
    live = applied(body())
    live["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert nochange.why_apply(body(), live, MANAGER) == "being deleted"


def test_no_digest_is_applied():
    live = applied(body())
    del live["metadata"]["annotations"][DIGEST]
    assert nochange.why_apply(body(), live, MANAGER) == "no applied digest recorded"


def test_a_field_dropped_from_the_manifest_is_applied_although_live_contains_the_rest():
    live = applied(body(k="v", gone="x"))
    assert nochange.why_apply(body(k="v"), live, MANAGER) is not None


def test_another_field_manager_is_applied_it_has_no_apply_entry_yet():
    assert "no Apply entry" in nochange.why_apply(body(), applied(body()), "other-manager")


def test_force_and_field_validation_do_not_matter_once_every_value_is_in_place():
    # With every value already there, an apply conflicts with nobody and sends no unknown field.
    assert nochange.why_apply(body(), applied(body()), MANAGER) is None


def test_a_removed_apply_entry_is_applied():
    live = applied(body())
    live["metadata"]["managedFields"] = [{"manager": MANAGER, "operation": "Update", "apiVersion": "v1"}]
    assert "no Apply entry" in nochange.why_apply(body(), live, MANAGER)


def test_an_apply_entry_of_a_subresource_does_not_count():
    live = applied(body())
    live["metadata"]["managedFields"][0]["subresource"] = "status"
    assert nochange.why_apply(body(), live, MANAGER) is not None


@pytest.mark.parametrize("drift", [
    lambda o: o["data"].update(k="edited"),  # kubectl edit / patch
    lambda o: o["data"].pop("k"),  # a field we set removed
    lambda o: o["metadata"]["labels"].pop(spec.LABEL_PART_OF),  # lost its part-of label
    lambda o: o["metadata"]["labels"].update({spec.LABEL_PART_OF: "applyset-other-v1"}),
    lambda o: o["metadata"]["annotations"].update({DIGEST: "v1:other"}),
])
def test_drift_of_anything_we_set_is_applied(drift):
    live = applied(body())
    drift(live)
    assert nochange.why_apply(body(), live, MANAGER) is not None


def test_values_others_added_do_not_force_a_write():
    live = applied(body())
    live["data"]["added-by-someone"] = "x"
    live["metadata"]["labels"]["team"] = "a"
    live["metadata"]["annotations"]["note"] = "b"
    assert nochange.why_apply(body(), live, MANAGER) is None


def test_replica_drift_by_the_scale_subresource_is_applied():
    member = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
              "spec": {"replicas": 2}}
    live = applied(member)
    live["spec"]["replicas"] = 5
    assert nochange.why_apply(member, live, MANAGER) is not None


def test_a_normalised_quantity_or_string_data_is_compared_as_the_server_stores_it():
    member = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop"},
              "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 0.5}}}]}}
    live = applied(member)
    live["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m"
    assert nochange.why_apply(member, live, MANAGER) is None
    live["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "750m"
    assert nochange.why_apply(member, live, MANAGER) == "the live object differs from the manifest"
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "shop"},
              "stringData": {"p": "s"}}
    live = applied(secret)
    live["data"] = {"p": "cw=="}
    del live["stringData"]
    assert nochange.why_apply(secret, live, MANAGER) is None
    live["data"] = {"p": "eA=="}
    assert nochange.why_apply(secret, live, MANAGER) == "the live object differs from the manifest"


def test_fields_of_client_side_tools_are_applied_so_that_they_are_taken_over():
    live = applied(body())
    live["metadata"]["managedFields"].append({"manager": "kubectl-client-side-apply", "operation": "Update",
                                              "apiVersion": "v1", "fieldsType": "FieldsV1",
                                              "fieldsV1": {"f:data": {"f:k": {}}}})
    live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
    assert nochange.why_apply(body(), live, MANAGER) is not None


# ----- Secrets: values stay out of the digest, and a change of one is still written -------------


def secret(**data):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "shop"},
            "type": "Opaque", "data": data}


def test_a_secrets_values_are_not_in_its_digest_but_its_keys_are():
    assert nochange.request_digest(secret(p="YWRtaW4=")) == nochange.request_digest(secret(p="c2VjcmV0"))
    assert nochange.request_digest(secret(p="YWRtaW4=", q="eA==")) != nochange.request_digest(secret(p="YWRtaW4="))


def test_a_changed_secret_value_is_still_applied():
    live = applied(secret(p="YWRtaW4="))
    assert nochange.why_apply(secret(p="YWRtaW4="), live, MANAGER) is None
    assert nochange.why_apply(secret(p="c2VjcmV0"), live, MANAGER) == \
        "the live object differs from the manifest"


def test_a_secret_key_dropped_from_the_manifest_is_applied():
    live = applied(secret(p="YWRtaW4=", q="eA=="))
    assert nochange.why_apply(secret(p="YWRtaW4="), live, MANAGER) is not None


# ----- updates in place, without the claim ---------------------------------------------------------------

SET_ID = "applyset-abc-v1"


def listed(**meta):
    base = {"name": "a", "namespace": "shop", "uid": "u-1", "resourceVersion": "7",
            "labels": {spec.LABEL_PART_OF: SET_ID}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {**base, **meta}, "data": {"k": "v"}}


@pytest.mark.parametrize("live, reason", [
    (None, "not found"),
    ({"kind": "PartialObjectMetadata", "metadata": {"name": "a"}}, "only its metadata was listed"),
    (listed(deletionTimestamp="2026-01-01T00:00:00Z"), "being deleted"),
    (listed(uid=None), "no uid or resourceVersion"),
    (listed(resourceVersion=""), "no uid or resourceVersion"),
    (listed(labels={}), "not yet a member of this set"),
    (listed(labels={spec.LABEL_PART_OF: "applyset-other-v1"}), "not yet a member of this set"),
    (listed(managedFields=[{"manager": "kubectl-client-side-apply", "operation": "Update",
                            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}]),
     "client-side tools"),
])
def test_what_cannot_be_updated_in_place(live, reason):
    assert reason in nochange.in_place_blocker(live, "applyset.kubernetes", SET_ID)


def test_a_listed_member_of_the_set_can_be_updated_in_place():
    assert nochange.in_place_blocker(listed(), "applyset.kubernetes", SET_ID) is None


def test_a_conditional_update_names_the_listed_uid_and_version_and_keeps_the_digest():
    body = nochange.with_digest({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "a", "namespace": "shop"}, "data": {"k": "new"}})
    sent = nochange.conditional(body, listed())
    assert (sent["metadata"]["uid"], sent["metadata"]["resourceVersion"]) == ("u-1", "7")
    assert "uid" not in body["metadata"]  # the member's body is left as it is
    digest = sent["metadata"]["annotations"][spec.ANNOTATION_APPLIED_DIGEST]
    assert digest == body["metadata"]["annotations"][spec.ANNOTATION_APPLIED_DIGEST]


def test_a_digested_body_is_trusted_as_digested_and_gives_the_same_answers():
    member = body(k="v")
    stamped = nochange.with_digest(member)
    for live in (applied(member), applied(body(k="other")), None):
        assert nochange.why_apply(stamped, live, MANAGER, digested=True) == nochange.why_apply(member, live, MANAGER)


# ----- a rollback and the field managers of the set's other releases ---------------------------------------


def test_a_rollback_applies_a_member_where_another_release_manager_owns_a_field_of_its_own():
    live = applied(body())
    live["metadata"]["managedFields"].append({"manager": "release-b", "operation": "Apply", "apiVersion": "v1",
                                              "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:only-b": {}}}})
    assert nochange.why_apply(body(), live, MANAGER) is None  # not a rollback: another tool's field
    assert "earlier releases" in nochange.why_apply(body(), live, MANAGER, set_managers={MANAGER, "release-b"})


def test_a_rollback_skips_a_member_whose_other_release_managers_only_share_its_fields():
    live = applied(body())
    live["metadata"]["managedFields"].append({"manager": "release-b", "operation": "Apply", "apiVersion": "v1",
                                              "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}})
    assert nochange.why_apply(body(), live, MANAGER, set_managers={MANAGER, "release-b"}) is None


def test_a_rollback_that_takes_fields_over_first_is_no_update_in_place():
    live = listed(managedFields=[{"manager": "release-b", "operation": "Apply", "apiVersion": "v1",
                                  "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}])
    assert nochange.in_place_blocker(live, MANAGER, SET_ID) is None
    assert "earlier releases" in nochange.in_place_blocker(live, MANAGER, SET_ID, {MANAGER, "release-b"})
