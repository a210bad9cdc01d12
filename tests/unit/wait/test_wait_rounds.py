"""waiting.wait_ready and wait_gone, round by round against a fake client: lists, timeouts, final verdicts,
objects that go away."""

from __future__ import annotations

import pytest
from applyset.wait import waiting
from applyset.wait.status import Readiness, Status
from applyset.errors import ApplySetError, ApiError, InputError, WaitTimeout
from applyset.kube.discovery import Resource
from readiness_objects import condition, deployment, job, service

# ----- waiting, against a fake client -------------------------------------------------------

DEPLOYMENTS = Resource("apps", "v1", "Deployment", "deployments", True)
CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", True)
NAMESPACES = Resource("", "v1", "Namespace", "namespaces", False)
JOBS = Resource("batch", "v1", "Job", "jobs", True)


class FakeClient:
    """Serves LISTs from a script: ``states[i]`` is what round i sees (the last one repeats)."""

    def __init__(self, *states):
        self.states = list(states)
        self.calls = []
        self.rounds = 0

    def list(self, res, namespace=None, *, label_selector=None, metadata_only=True, page_size=500):
        self.calls.append((res.kind, namespace, metadata_only))
        state = self.states[min(self.rounds, len(self.states) - 1)]
        found = state.get((res.kind, namespace), [])
        if isinstance(found, Exception):
            raise found
        for item in found:
            yield {k: v for k, v in item.items() if k not in ("apiVersion", "kind")}  # as a LIST returns them

    def list_with_version(self, res, namespace=None, *, metadata_only=True):
        """kube.watch.list_with_version's answer; no resourceVersion, so the wait polls, round by round."""
        return list(self.list(res, namespace, metadata_only=metadata_only)), None

    def map(self, func, items):
        results = []
        for item in items:
            try:
                results.append(func(item))
            except Exception as err:  # same contract as KubeClient.map
                results.append(err)
        self.rounds += 1
        return results


@pytest.fixture
def clock(monkeypatch):
    """A fake clock: sleeping advances it, so waits run instantly and timeouts are exact."""
    now = [1000.0]
    monkeypatch.setattr(waiting.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(waiting.time, "sleep", lambda seconds: now.__setitem__(0, now[0] + seconds))
    monkeypatch.setattr(waiting.kube_watch, "list_with_version",
                        lambda client, res, ns, metadata_only: client.list_with_version(res, ns, metadata_only=metadata_only))
    return now


def named(d, name, namespace="shop"):
    d = dict(d, metadata=dict(d["metadata"], name=name, namespace=namespace))
    return d


def test_wait_ready_polls_until_ready_with_one_list_per_resource_and_namespace(clock):
    slow = named(deployment(3, replicas=3, updatedReplicas=3, availableReplicas=1, readyReplicas=1), "web")
    fast = named(deployment(1, replicas=1, updatedReplicas=1, availableReplicas=1, readyReplicas=1), "api")
    done = named(deployment(3, replicas=3, updatedReplicas=3, availableReplicas=3, readyReplicas=3), "web")
    client = FakeClient({("Deployment", "shop"): [slow, fast]}, {("Deployment", "shop"): [done, fast]})
    targets = [(DEPLOYMENTS, "shop", "web"), (DEPLOYMENTS, "shop", "api"), (DEPLOYMENTS, "shop", "web"),
               (CONFIGMAPS, "shop", "settings")]
    assert waiting.wait_ready(client, targets, timeout=10, interval=2) == {}
    # Two rounds, one full LIST each; the ConfigMap is never read.
    assert client.calls == [("Deployment", "shop", False), ("Deployment", "shop", False)]
    assert clock[0] == 1002.0


def test_wait_ready_times_out_listing_each_unready_object(clock):
    slow = named(deployment(3, replicas=3, updatedReplicas=3, availableReplicas=1), "web")
    client = FakeClient({("Deployment", "shop"): [slow], ("Namespace", None): []})
    targets = [(DEPLOYMENTS, "shop", "web"), (NAMESPACES, None, "shop"), (DEPLOYMENTS, "shop", "gone")]
    with pytest.raises(WaitTimeout) as caught:
        waiting.wait_ready(client, targets, timeout=5, interval=1)
    err = caught.value
    assert "3 of 3 objects not ready after 5s" in err.message
    assert "Deployment shop/web: 1/3 replicas available" in err.message
    assert "Namespace shop: not found" in err.message
    assert "Deployment shop/gone: not found" in err.message
    assert err.details["unready"][0] == {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop",
                                         "name": "web", "reason": "1/3 replicas available"}
    assert 1005.0 <= clock[0] <= 1006.0  # bounded: one last round at the deadline


def test_wait_ready_can_return_the_unready_list_instead_of_raising(clock):
    client = FakeClient({("Deployment", "shop"): []})
    unready = waiting.wait_ready(client, [(DEPLOYMENTS, "shop", "web")], timeout=0, raise_on_timeout=False)
    assert unready == {(DEPLOYMENTS, "shop", "web"): Readiness(Status.NOT_FOUND, "not found")}
    assert len(client.calls) == 1  # timeout 0: one look, no sleep


def test_wait_ready_stops_early_on_a_failed_job(clock):
    failed = named(job(conditions=[condition("Failed", reason="BackoffLimitExceeded")]), "migrate")
    client = FakeClient({("Job", "shop"): [failed]})
    with pytest.raises(WaitTimeout, match="cannot become ready: Job shop/migrate: failed: BackoffLimitExceeded"):
        waiting.wait_ready(client, [(JOBS, "shop", "migrate")], timeout=300)
    assert clock[0] == 1000.0


def test_wait_ready_passes_rule_options_and_rejects_unknown_ones(clock):
    w = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "shop"}}
    widgets = Resource("example.com", "v1", "Widget", "widgets", True)
    client = FakeClient({("Widget", "shop"): [w]})
    assert waiting.wait_ready(client, [(widgets, "shop", "w")], timeout=0) == {}
    with pytest.raises(WaitTimeout, match="no status reported yet"):
        waiting.wait_ready(client, [(widgets, "shop", "w")], timeout=0, fail_closed=True)
    with pytest.raises(WaitTimeout, match="override"):
        waiting.wait_ready(client, [(widgets, "shop", "w")], timeout=0, overrides={"Widget": "status.ok"})
    with pytest.raises(TypeError, match="fail_open"):
        waiting.wait_ready(client, [], timeout=0, fail_open=True)
    with pytest.raises(InputError):
        waiting.wait_ready(client, [], timeout=0, overrides={"Widget": "]["})


def test_wait_ready_reads_services_only_for_load_balancers(clock):
    services = Resource("", "v1", "Service", "services", True)
    lb = named(service(), "web")
    client = FakeClient({("Service", "shop"): [lb]})
    assert waiting.wait_ready(client, [(services, "shop", "web")], timeout=0) == {}
    assert client.calls == []
    with pytest.raises(WaitTimeout, match="Service shop/web: waiting for a load balancer address"):
        waiting.wait_ready(client, [(services, "shop", "web")], timeout=0, wait_for_load_balancers=True)


def test_wait_ready_stops_on_forbidden_and_keeps_polling_through_other_errors(clock):
    forbidden = ApiError("deployments is forbidden", status=403)
    client = FakeClient({("Deployment", "shop"): forbidden})
    with pytest.raises(ApplySetError, match="need list on deployments.apps"):
        waiting.wait_ready(client, [(DEPLOYMENTS, "shop", "web")], timeout=10)
    ok = named(deployment(1, replicas=1, updatedReplicas=1, availableReplicas=1, readyReplicas=1), "web")
    flaky = FakeClient({("Deployment", "shop"): ApiError("etcd timeout", status=500)}, {("Deployment", "shop"): [ok]})
    assert waiting.wait_ready(flaky, [(DEPLOYMENTS, "shop", "web")], timeout=10) == {}


def test_wait_gone_waits_for_objects_to_disappear_reading_metadata_only(clock):
    dying = named(deployment(1), "web")
    dying["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    dying["metadata"]["finalizers"] = ["example.com/cleanup"]
    client = FakeClient({("Deployment", "shop"): [dying]}, {("Deployment", "shop"): []})
    assert waiting.wait_gone(client, [(DEPLOYMENTS, "shop", "web")], timeout=10) == {}
    assert client.calls[0] == ("Deployment", "shop", True)

    stuck = FakeClient({("Deployment", "shop"): [dying]})
    with pytest.raises(WaitTimeout) as caught:
        waiting.wait_gone(stuck, [(DEPLOYMENTS, "shop", "web")], timeout=3)
    assert "1 of 1 objects not gone after 3s: Deployment shop/web: being deleted; finalizers: example.com/cleanup" \
        in caught.value.message
    assert "finalizer named is removed by the controller that set it" in caught.value.fix


def test_wait_gone_treats_a_kind_no_longer_served_as_gone(clock):
    client = FakeClient({("Deployment", "shop"): ApiError("not found", status=404)})
    assert waiting.wait_gone(client, [(DEPLOYMENTS, "shop", "web")], timeout=0) == {}


def test_many_unready_objects_are_summarised_in_the_message(clock):
    client = FakeClient({("Deployment", "shop"): []})
    targets = [(DEPLOYMENTS, "shop", f"web-{i:02d}") for i in range(25)]
    with pytest.raises(WaitTimeout) as caught:
        waiting.wait_ready(client, targets, timeout=0)
    assert "and 5 more" in caught.value.message
    assert len(caught.value.details["unready"]) == 25


# ----- objects that go away by design (a Job removed by its TTL) or under the wait -------------


class EventsClient(FakeClient):
    """FakeClient that also serves the Events recorded on an object, by UID."""

    def __init__(self, *states, events=None):
        super().__init__(*states)
        self.events = events if events is not None else {}
        self.event_queries = []

    def request(self, method, path, *, query=None, **_):
        self.event_queries.append((method, path, query))
        uid = query["fieldSelector"].split("=", 1)[1]
        found = self.events.get(uid, [])
        if isinstance(found, Exception):
            raise found

        class Response:
            body = {"items": found}
        return Response()


def applied_job(name="migrate", uid="uid-1", ttl=0):
    spec = {"template": {}} if ttl is None else {"ttlSecondsAfterFinished": ttl, "template": {}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "shop", "uid": uid}, "spec": spec}


def event(reason, message="", when="2026-01-01T00:00:01Z"):
    return {"reason": reason, "message": message, "lastTimestamp": when}


def test_a_job_removed_by_its_ttl_after_completing_counts_as_complete(clock):
    client = EventsClient({("Job", "shop"): []}, events={"uid-1": [
        event("SuccessfulCreate", when="2026-01-01T00:00:00Z"), event("Completed", "Job completed")]})
    target = (JOBS, "shop", "migrate")
    assert waiting.wait_ready(client, [target], timeout=120, applied={target: applied_job()}) == {}
    assert clock[0] == 1000.0, "no waiting out the timeout"
    assert client.event_queries == [("GET", "/api/v1/namespaces/shop/events",
                                     {"fieldSelector": "involvedObject.uid=uid-1"})]


def test_a_job_removed_by_its_ttl_after_failing_is_a_failure_at_once(clock):
    client = EventsClient({("Job", "shop"): []}, events={"uid-1": [
        event("DeadlineExceeded", "Job was active longer than specified deadline")]})
    target = (JOBS, "shop", "migrate")
    with pytest.raises(WaitTimeout, match="cannot become ready: Job shop/migrate: failed: DeadlineExceeded: "
                                          "Job was active longer than specified deadline, then removed by its "
                                          r"ttlSecondsAfterFinished \(0s\)"):
        waiting.wait_ready(client, [target], timeout=120, applied={target: applied_job()})
    assert clock[0] == 1000.0


def test_a_ttl_job_gone_without_any_event_is_taken_as_finished_after_a_few_rounds(clock):
    client = EventsClient({("Job", "shop"): []}, events={"uid-1": ApiError("forbidden", status=403)})
    target = (JOBS, "shop", "migrate")
    assert waiting.wait_ready(client, [target], timeout=120, interval=1, applied={target: applied_job()}) == {}
    assert len(client.event_queries) == 3  # the event may land just after the deletion
    assert clock[0] == 1002.0


def test_a_ttl_job_seen_running_then_gone_uses_the_ttl_of_the_live_object(clock):
    running = named(job(spec={"ttlSecondsAfterFinished": 30}, active=1), "migrate")
    running["metadata"]["uid"] = "uid-1"
    client = EventsClient({("Job", "shop"): [running]}, {("Job", "shop"): []},
                          events={"uid-1": [event("Completed")]})
    target = (JOBS, "shop", "migrate")
    as_applied = applied_job(ttl=None)  # e.g. a mutating webhook set the TTL
    assert waiting.wait_ready(client, [target], timeout=120, interval=1, applied={target: as_applied}) == {}


def test_a_job_without_ttl_deleted_while_waiting_is_reported_as_such(clock):
    client = EventsClient({("Job", "shop"): []})
    target = (JOBS, "shop", "migrate")
    with pytest.raises(WaitTimeout, match="Job shop/migrate: deleted while waiting: the object applied "
                                          r"\(uid uid-1\) is gone"):
        waiting.wait_ready(client, [target], timeout=120, applied={target: applied_job(ttl=None)})
    assert clock[0] == 1000.0
    assert client.event_queries == []


def test_any_applied_object_deleted_or_replaced_while_waiting_is_final(clock):
    web = named(deployment(1), "web")
    web["metadata"]["uid"] = "uid-new"
    client = EventsClient({("Deployment", "shop"): [web]})
    target = (DEPLOYMENTS, "shop", "web")
    mine = {"metadata": {"name": "web", "namespace": "shop", "uid": "uid-old"}, "spec": {}}
    with pytest.raises(WaitTimeout, match=r"deleted while waiting \(a new object with uid uid-new took its name\)"):
        waiting.wait_ready(client, [target], timeout=120, applied={target: mine})
    assert clock[0] == 1000.0


def test_without_a_known_uid_a_missing_object_is_still_waited_for(clock):
    client = EventsClient({("Job", "shop"): []})
    target = (JOBS, "shop", "migrate")
    with pytest.raises(WaitTimeout, match="not ready after 3s: Job shop/migrate: not found"):
        waiting.wait_ready(client, [target], timeout=3, applied={target: applied_job(uid=None)})


def test_wait_gone_ignores_a_new_object_that_took_the_name(clock):
    reinstalled = named(deployment(1), "web")
    reinstalled["metadata"]["uid"] = "uid-new"
    client = FakeClient({("Deployment", "shop"): [reinstalled]})
    target = (DEPLOYMENTS, "shop", "web")
    assert waiting.wait_gone(client, [target], timeout=10, uids={target: "uid-old"}) == {}
    with pytest.raises(WaitTimeout, match="still exists"):
        waiting.wait_gone(client, [target], timeout=0, uids={target: "uid-new"})


def test_unreadable_events_are_no_hint_but_a_bug_is_not_hidden():
    class Refusing:
        def request(self, *args, **kwargs):
            raise ApiError("events is forbidden", status=403)

    class Broken:
        def request(self, *args, **kwargs):
            raise TypeError("a bug in the caller")

    assert waiting.job_outcome_events(Refusing(), "ns", "uid-1") == []
    with pytest.raises(TypeError):
        waiting.job_outcome_events(Broken(), "ns", "uid-1")
