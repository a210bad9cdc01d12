"""The fake API server (fakeapi.py) answers as the real one does where the engine's tests rely on it.

A fake that drifted from the server would make the engine's unit tests prove nothing. The same
requests, sent with KubeClient to kube-apiserver v1.34.4 (the local control plane), gave these
answers: 201 then the same resourceVersion for a no-op apply, removal of what one manager left
out, 409 for a stale resourceVersion (apply and merge patch) and a wrong UID precondition, an apply
naming a resourceVersion that creates a missing object but one naming a uid that does not (409, and
422 for another object's uid), nothing stored by a dry run, 404 `namespaces "x" not found`, and paged metadata-only LISTs.
"""

import pytest
from applyset.kube import discovery
from applyset.errors import ApiError, ConflictError

from fakeapi import FakeApi, client, parse_selector

CONFIGMAPS = discovery.Resource("", "v1", "ConfigMap", "configmaps", True)


@pytest.fixture
def api():
    fake = FakeApi()
    fake.add_namespace("shop")
    return fake


def body(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "shop"}, "data": data}


@pytest.mark.parametrize("selector, labels, matches", [
    ("a=b", {"a": "b"}, True), ("a==b", {"a": "c"}, False), ("a!=b", {}, True),
    ("a in (x, y)", {"a": "y"}, True), ("a in (x,y),b", {"a": "x"}, False), ("a notin (x)", {"a": "x"}, False),
    ("!a", {}, True), ("a,!b", {"a": "1", "b": "2"}, False), ("", {"any": "thing"}, True),
])
def test_label_selectors(selector, labels, matches):
    assert parse_selector(selector)(labels) is matches


def test_apply_creates_then_updates_and_moves_the_resource_version_only_on_change(api):
    c = client(api)
    created = c.apply(CONFIGMAPS, body("a", k="1"), field_manager="m")
    assert created.status == 201 and created.body["metadata"]["uid"]
    same = c.apply(CONFIGMAPS, body("a", k="1"), field_manager="m")
    assert same.status == 200 and same.body["metadata"]["resourceVersion"] == created.body["metadata"]["resourceVersion"]
    changed = c.apply(CONFIGMAPS, body("a", k="2"), field_manager="m")
    assert changed.body["metadata"]["resourceVersion"] != created.body["metadata"]["resourceVersion"]
    assert changed.body["metadata"]["uid"] == created.body["metadata"]["uid"]


def test_apply_removes_what_the_same_manager_applied_before_and_left_out(api):
    c = client(api)
    c.apply(CONFIGMAPS, body("a", k="1", gone="x"), field_manager="m")
    c.apply(CONFIGMAPS, body("a", other="y"), field_manager="other")
    after = c.apply(CONFIGMAPS, body("a", k="1"), field_manager="m").body
    assert after["data"] == {"k": "1", "other": "y"}


def test_dry_runs_write_nothing(api):
    c = client(api)
    c.apply(CONFIGMAPS, body("a"), field_manager="m", dry_run=True)
    c.create(CONFIGMAPS, body("b"), field_manager="m", dry_run=True)
    assert api.object("v1", "ConfigMap", "a", "shop") is None and api.object("v1", "ConfigMap", "b", "shop") is None
    c.apply(CONFIGMAPS, body("a"), field_manager="m")
    c.delete(CONFIGMAPS, "a", "shop", dry_run=True)
    assert api.object("v1", "ConfigMap", "a", "shop") is not None


def test_preconditions_and_missing_objects(api):
    c = client(api)
    uid = c.apply(CONFIGMAPS, body("a"), field_manager="m").body["metadata"]["uid"]
    stale = body("a")
    stale["metadata"]["resourceVersion"] = "1"
    with pytest.raises(ConflictError):
        c.apply(CONFIGMAPS, stale, field_manager="m")
    with pytest.raises(ConflictError):
        c.merge_patch(CONFIGMAPS, "a", "shop", {"metadata": {"resourceVersion": "1"}}, field_manager="m")
    with pytest.raises(ConflictError):
        c.delete(CONFIGMAPS, "a", "shop", uid="another-uid")
    c.delete(CONFIGMAPS, "a", "shop", uid=uid)
    with pytest.raises(ApiError) as missing:
        c.delete(CONFIGMAPS, "a", "shop", uid=uid)
    assert missing.value.status == 404
    assert c.get(CONFIGMAPS, "a", "shop") is None
    with pytest.raises(ApiError, match='namespaces "nowhere" not found'):
        c.apply(CONFIGMAPS, {**body("x"), "metadata": {"name": "x", "namespace": "nowhere"}}, field_manager="m")


def test_lists_page_and_carry_metadata_only(api):
    c = client(api)
    for name in "abc":
        c.apply(CONFIGMAPS, body(name, k=name), field_manager="m")
    api.page_limit = 2
    items = list(c.list(CONFIGMAPS, "shop"))
    assert [i["metadata"]["name"] for i in items] == ["a", "b", "c"]
    assert all("data" not in i for i in items)
    assert [r.query.get("continue") for r in api.sent("GET", "/api/v1/namespaces/shop/configmaps")] == [None, "2"]
    full = list(c.list(CONFIGMAPS, "shop", metadata_only=False))
    assert full[0]["data"] == {"k": "a"}


def test_injected_failures_answer_once_or_always(api):
    c = client(api)
    api.fail("GET", "/api/v1/namespaces/shop/configmaps/a", 403, "no", reason="Forbidden")
    with pytest.raises(ApiError) as refused:
        c.get(CONFIGMAPS, "a", "shop")
    assert (refused.value.status, refused.value.reason) == (403, "Forbidden")
    assert c.get(CONFIGMAPS, "a", "shop") is None
    api.fail("GET", "/api/v1/namespaces/shop/configmaps/a", 403, "no", times=None)
    for _ in range(2):
        with pytest.raises(ApiError):
            c.get(CONFIGMAPS, "a", "shop")


def test_an_apply_naming_a_uid_never_creates_but_a_resource_version_alone_does(api):
    # What kube-apiserver v1.34.4 answered: the reason conditional updates carry the uid.
    c = client(api)
    first = c.apply(CONFIGMAPS, body("a"), field_manager="m").body["metadata"]
    c.delete(CONFIGMAPS, "a", "shop")
    by_uid = body("a")
    by_uid["metadata"].update(uid=first["uid"], resourceVersion=first["resourceVersion"])
    with pytest.raises(ConflictError) as refused:
        c.apply(CONFIGMAPS, by_uid, field_manager="m")
    assert "uid mismatch" in str(refused.value) and api.object("v1", "ConfigMap", "a", "shop") is None
    by_version = body("a")
    by_version["metadata"]["resourceVersion"] = first["resourceVersion"]
    assert c.apply(CONFIGMAPS, by_version, field_manager="m").status == 201
    with pytest.raises(ApiError) as other_uid:
        c.apply(CONFIGMAPS, by_uid, field_manager="m")
    assert other_uid.value.status == 422
