"""waiting.wait_for_crds: GET each pending CRD per round until it is Established, against a stub client."""

from __future__ import annotations

import pytest
from applyset.wait import waiting
from applyset.errors import ApplySetError
from applyset.kube.discovery import Resource

CRDS = Resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False)
OBJ = "ApplySet ns/shop"


def crd(name, *conditions):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name}, "status": {"conditions": list(conditions)}}


def established(status="True"):
    return {"type": "Established", "status": status}


class StubClient:
    """GET answers from a script: ``rounds[i][name]`` is the CRD round i sees (the last round repeats)."""

    def __init__(self, *rounds):
        self.rounds = list(rounds)
        self.gets = []

    def get(self, res, name, namespace=None):
        seen = sum(1 for _res, n in self.gets if n == name)
        self.gets.append((res, name))
        return self.rounds[min(seen, len(self.rounds) - 1)].get(name)


@pytest.fixture
def clock(monkeypatch):
    """A fake clock: sleeping advances it, and every sleep is recorded."""
    now, sleeps = [1000.0], []

    def sleep(seconds):
        sleeps.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(waiting.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(waiting.time, "sleep", sleep)
    return sleeps


def test_established_at_once_is_one_get_each_in_name_order_and_no_sleep(clock):
    client = StubClient({"b.example.com": crd("b.example.com", established()),
                         "a.example.com": crd("a.example.com", established())})
    assert waiting.wait_for_crds(client, CRDS, ["b.example.com", "a.example.com"], timeout=60, obj=OBJ) is None
    assert client.gets == [(CRDS, "a.example.com"), (CRDS, "b.example.com")]
    assert clock == []


def test_established_after_a_round_reads_only_what_is_pending_again(clock):
    client = StubClient({"a.example.com": crd("a.example.com", established()),
                         "b.example.com": crd("b.example.com", established("False"))},
                        {"b.example.com": crd("b.example.com", established())})
    waiting.wait_for_crds(client, CRDS, iter(["a.example.com", "b.example.com"]), timeout=60, obj=OBJ)
    assert [name for _res, name in client.gets] == ["a.example.com", "b.example.com", "b.example.com"]
    assert clock == [0.25]


def test_names_not_accepted_is_a_final_refusal_without_waiting(clock):
    refused = {"type": "NamesAccepted", "status": "False", "reason": "NameConflict", "message": "taken"}
    client = StubClient({"a.example.com": crd("a.example.com", refused)})
    with pytest.raises(ApplySetError) as caught:
        waiting.wait_for_crds(client, CRDS, ["a.example.com"], timeout=60, obj=OBJ)
    err = caught.value
    assert err.message == ("CustomResourceDefinition a.example.com will not become Established: "
                           "names not accepted: NameConflict: taken")
    assert err.obj == OBJ
    assert err.fix == "fix the CRD (kubectl describe crd a.example.com); its custom resources were not applied"
    assert clock == []


def test_timeout_names_every_crd_still_pending(clock):
    client = StubClient({"a.example.com": None, "c.example.com": crd("c.example.com"),
                         "b.example.com": crd("b.example.com", established())})
    with pytest.raises(ApplySetError) as caught:
        waiting.wait_for_crds(client, CRDS, ["c.example.com", "b.example.com", "a.example.com"], timeout=0, obj=OBJ)
    err = caught.value
    assert err.message == "CustomResourceDefinitions not Established after 0s: a.example.com, c.example.com"
    assert err.obj == OBJ
    assert err.fix == "check the CRDs' status conditions (kubectl describe crd NAME)"
    # With the clock frozen, time.monotonic() > deadline only after one sleep: a second round ran.
    assert [name for _res, name in client.gets] == ["a.example.com", "b.example.com", "c.example.com",
                                                    "a.example.com", "c.example.com"]
    assert clock == [0.25]


def test_a_target_is_one_object_id_and_is_listed_in_its_group():
    from applyset.spec import ObjectId

    deployments = Resource("apps", "v1", "Deployment", "deployments", True)
    target = waiting.normalised((deployments, "shop", "web"))
    assert target.id == ObjectId("apps", "Deployment", "shop", "web")
    assert target.listed_in == (deployments, "shop")
    crd = waiting.normalised((CRDS, "shop", "widgets.example.com"))  # cluster-scoped: the namespace goes
    assert crd.id == ObjectId("apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com")
    assert crd.listed_in == (CRDS, None)
