"""The parent: writes after a lost response (issue 19 point 6): our own write is recognised, a real
conflict is still a conflict, and a connection problem is reported as one; and the one parent
model (#12): ``inspect`` parses what a parent says, ``read`` judges it."""

from __future__ import annotations

import copy

import pytest
from stubclient import SECRET as LISTED_SECRET  # a Secret resource as discovery serves it
from stubclient import StubClient

from applyset.parent import read as parents
from applyset.parent import write as parent_write
from applyset.parent import model as parent_model
from applyset import spec
from applyset.errors import ApiError, ConflictError, ParentError
from applyset.kube.discovery import Resource
from applyset.kube.http_requests import Response

SECRET = Resource(group="", version="v1", kind="Secret", plural="secrets", namespaced=True)


class LostResponseClient:
    """The server applies the write, then the answer is lost; the retry meets a 409."""

    def __init__(self, live=None, error=None):
        self.live = live
        self.error = error
        self.gets = 0

    def apply(self, res, body, **kwargs):
        if self.error is not None:
            raise self.error
        # The write lands (as the server would merge it) and the answer is lost.
        meta = self.live["metadata"]
        meta["labels"].update(body["metadata"]["labels"])
        annotations = {k: v for k, v in meta["annotations"].items() if k != spec.ANNOTATION_CLAIM}
        annotations.update(body["metadata"]["annotations"])
        meta["annotations"] = annotations
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        raise ConflictError("the object has been modified", status=409, reason="Conflict")

    def get(self, res, name, namespace=None):
        self.gets += 1
        return copy.deepcopy(self.live)

    def merge_patch(self, *args, **kwargs):
        return Response(200, self.live, [])


def parent(claim=None):
    p = parent_model.Parent(resource=SECRET, name="shop", namespace="shop", id="applyset-x-v1", exists=True,
                       uid="u", resource_version="5", tooling=spec.tooling_value(), claim=claim)
    return p


def live_parent():
    return {"metadata": {"name": "shop", "namespace": "shop", "resourceVersion": "5", "labels": {},
                         "annotations": {}}}


def test_a_claim_write_whose_answer_was_lost_is_recognised_as_ours():
    client = LostResponseClient(live_parent())
    p = parent()
    claim = {"run": "host/1/abcd", "expires": 1234.5}
    parent_write.write(client, p, {spec.GroupKind("", "ConfigMap")}, {"shop"}, claim=claim)
    assert p.resource_version == "6" and p.claim == claim and client.gets == 1


def test_a_release_write_whose_answer_was_lost_is_recognised_as_ours():
    client = LostResponseClient(live_parent())
    p = parent(claim={"run": "host/1/abcd", "expires": 1234.5})
    parent_write.write(client, p, {spec.GroupKind("", "ConfigMap")}, {"shop"}, claim=None)
    assert p.resource_version == "6" and p.claim is None


def test_a_parent_another_run_changed_is_still_a_conflict():
    live = live_parent()
    live["metadata"]["annotations"][spec.ANNOTATION_CLAIM] = '{"expires":99,"run":"other/2/ffff"}'

    class SomeoneElse(LostResponseClient):
        def apply(self, res, body, **kwargs):
            raise ConflictError("the object has been modified", status=409, reason="Conflict")

    with pytest.raises(ParentError, match="changed by someone else"):
        parent_write.write(SomeoneElse(live), parent(), {spec.GroupKind("", "ConfigMap")}, {"shop"},
                      claim={"run": "host/1/abcd", "expires": 1234.5})


def test_no_answer_at_all_is_reported_as_a_connection_problem():
    client = LostResponseClient(live_parent(), error=ApiError("PATCH /api/v1/... failed: Connection refused"))
    with pytest.raises(ParentError) as caught:
        parent_write.write(client, parent(), set(), {"shop"}, claim=None)
    assert "a connection problem, not a conflict" in caught.value.fix
    assert "RBAC" not in caught.value.fix


# ----- one parent model: inspect parses, read judges ------------------------------------------------

NOW = 1000.0


@pytest.mark.parametrize("claim, other_than, holds", [
    (None, None, False),
    ({}, None, False),
    ({"run": "a/1/x", "expires": NOW + 5}, None, True),
    ({"run": "a/1/x", "expires": NOW - 5}, None, False),
    ({"run": "a/1/x", "expires": "soon"}, None, False),  # unreadable: protects nothing
    ({"run": "a/1/x", "expires": [1]}, None, False),
    ({"run": "a/1/x", "expires": NOW + 5}, "a/1/x", False),  # the asking run's own claim
    ({"run": "a/1/x", "expires": NOW + 5}, "b/2/y", True),
])
def test_claim_holds(claim, other_than, holds):
    assert parent_model.claim_holds(claim, NOW, other_than=other_than) is holds


def _stub_parent(**kwargs):
    client = StubClient()
    client.parent(LISTED_SECRET, "shop", "shop", **kwargs)
    return client


def test_read_and_inspect_say_the_same_of_one_parent():
    claim = {"run": "other/2/ffff", "expires": NOW + 60}
    client = _stub_parent(kinds="Service", namespaces="extra", contains_group_resources="configmaps")
    obj = client.objects[0][1]
    obj["metadata"]["annotations"][spec.ANNOTATION_CLAIM] = '{"expires":1060.0,"run":"other/2/ffff"}'
    live = parent_model.inspect(LISTED_SECRET, obj, client.discovery)
    parent, warnings = parents.read(client, client.discovery, LISTED_SECRET, "shop", "shop")
    assert warnings == []
    assert live.claim == parent.claim == claim
    assert live.claimed(NOW) and parent.claimed_by_other("me/1/aaaa", NOW)
    assert not parent.claimed_by_other("other/2/ffff", NOW)
    # Both hint annotations are read, by both: the wider scope.
    assert live.group_kinds == parent.recorded_group_kinds == {spec.GroupKind("", "Service"),
                                                               spec.GroupKind("", "ConfigMap")}
    assert live.namespaces == parent.namespaces == {"shop", "extra"}
    assert parent.legacy_annotation and live.legacy_annotation
    assert (parent.id, parent.uid, parent.resource_version, parent.tooling) == (
        live.expected_id, live.uid, live.resource_version, live.tooling)


def test_read_refuses_a_forged_id_that_inspect_only_reports():
    client = _stub_parent(kinds="ConfigMap", live_id="applyset-someone-else-v1")
    live = parent_model.inspect(LISTED_SECRET, client.objects[0][1], client.discovery)
    assert not live.id_matches
    with pytest.raises(ParentError, match="incorrect value for label"):
        parents.read(client, client.discovery, LISTED_SECRET, "shop", "shop", takeover=True)


def test_read_refuses_another_tools_set_unless_taken_over():
    client = _stub_parent(kinds="ConfigMap", tooling="kubectl/v1.33.0")
    with pytest.raises(ParentError, match='managed by tooling "kubectl"'):
        parents.read(client, client.discovery, LISTED_SECRET, "shop", "shop")
    parent, _warnings = parents.read(client, client.discovery, LISTED_SECRET, "shop", "shop", takeover=True)
    assert parent.exists and parent.tooling == "kubectl/v1.33.0"


def test_read_refuses_a_parent_without_a_hint_unless_taken_over():
    client = _stub_parent(kinds=None)
    assert parent_model.inspect(LISTED_SECRET, client.objects[0][1], client.discovery).hint_source is None
    with pytest.raises(ParentError, match="must be set on all ApplySet parent objects"):
        parents.read(client, client.discovery, LISTED_SECRET, "shop", "shop")
    parent, _warnings = parents.read(client, client.discovery, LISTED_SECRET, "shop", "shop", takeover=True)
    assert parent.recorded_group_kinds == set()


def test_a_parent_that_does_not_exist_yet_is_read_as_empty():
    client = StubClient()
    parent, warnings = parents.read(client, client.discovery, LISTED_SECRET, "shop", "shop")
    assert not parent.exists and parent.namespaces == {"shop"} and parent.claim is None and warnings == []
    assert parent.id == spec.compute_id("shop", "shop", "Secret", "")
