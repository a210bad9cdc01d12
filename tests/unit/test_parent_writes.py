"""Parent writes after a lost response (issue 19 point 6): our own write is recognised, a real
conflict is still a conflict, and a connection problem is reported as one."""

from __future__ import annotations

import copy

import pytest

from applyset import parent as parents
from applyset import spec
from applyset.errors import ApiError, ConflictError, ParentError
from applyset.kube import Resource, Response

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
    p = parents.Parent(resource=SECRET, name="shop", namespace="shop", id="applyset-x-v1", exists=True,
                       uid="u", resource_version="5", tooling=spec.tooling_value(), claim=claim)
    return p


def live_parent():
    return {"metadata": {"name": "shop", "namespace": "shop", "resourceVersion": "5", "labels": {},
                         "annotations": {}}}


def test_a_claim_write_whose_answer_was_lost_is_recognised_as_ours():
    client = LostResponseClient(live_parent())
    p = parent()
    claim = {"run": "host/1/abcd", "expires": 1234.5}
    parents.write(client, p, {spec.GroupKind("", "ConfigMap")}, {"shop"}, claim=claim)
    assert p.resource_version == "6" and p.claim == claim and client.gets == 1


def test_a_release_write_whose_answer_was_lost_is_recognised_as_ours():
    client = LostResponseClient(live_parent())
    p = parent(claim={"run": "host/1/abcd", "expires": 1234.5})
    parents.write(client, p, {spec.GroupKind("", "ConfigMap")}, {"shop"}, claim=None)
    assert p.resource_version == "6" and p.claim is None


def test_a_parent_another_run_changed_is_still_a_conflict():
    live = live_parent()
    live["metadata"]["annotations"][spec.ANNOTATION_CLAIM] = '{"expires":99,"run":"other/2/ffff"}'

    class SomeoneElse(LostResponseClient):
        def apply(self, res, body, **kwargs):
            raise ConflictError("the object has been modified", status=409, reason="Conflict")

    with pytest.raises(ParentError, match="changed by someone else"):
        parents.write(SomeoneElse(live), parent(), {spec.GroupKind("", "ConfigMap")}, {"shop"},
                      claim={"run": "host/1/abcd", "expires": 1234.5})


def test_no_answer_at_all_is_reported_as_a_connection_problem():
    client = LostResponseClient(live_parent(), error=ApiError("PATCH /api/v1/... failed: Connection refused"))
    with pytest.raises(ParentError) as caught:
        parents.write(client, parent(), set(), {"shop"}, claim=None)
    assert "a connection problem, not a conflict" in caught.value.fix
    assert "RBAC" not in caught.value.fix
