"""Readiness rules (pure predicates) and the polling loop, against a fake client."""

from __future__ import annotations

import builtins

import pytest
from applyset.wait import readiness, waiting
from applyset import spec
from applyset.errors import ApplySetError, ApiError, InputError, WaitTimeout
from applyset.kube.discovery import Resource

# ----- object builders ----------------------------------------------------------------------


def obj(api_version, kind, name="x", namespace="ns", generation=1, spec=None, status=None, **meta):
    metadata = {"name": name, "namespace": namespace, "generation": generation, **meta}
    result = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    if spec is not None:
        result["spec"] = spec
    if status is not None:
        result["status"] = status
    return result


def deployment(want=3, **status):
    status.setdefault("observedGeneration", 1)
    return obj("apps/v1", "Deployment", name="web", spec={"replicas": want}, status=status)


def condition(kind, value="True", **extra):
    return {"type": kind, "status": value, **extra}


# ----- Deployment ---------------------------------------------------------------------------


def test_deployment_ready_when_all_replicas_updated_available_and_ready():
    d = deployment(3, replicas=3, updatedReplicas=3, readyReplicas=3, availableReplicas=3)
    assert readiness.is_ready(d) == (True, "3/3 replicas available")


def test_deployment_not_ready_before_the_controller_observed_it():
    d = obj("apps/v1", "Deployment", generation=2, spec={"replicas": 1}, status={"observedGeneration": 1})
    ready, reason = readiness.is_ready(d)
    assert not ready and "observe generation 2" in reason
    fresh = obj("apps/v1", "Deployment", spec={"replicas": 1})  # no status at all yet
    assert readiness.is_ready(fresh)[0] is False


@pytest.mark.parametrize("status, reason", [
    ({"replicas": 3, "updatedReplicas": 1}, "1/3 replicas updated"),
    ({"replicas": 4, "updatedReplicas": 3}, "1 old replicas pending termination"),
    ({"replicas": 3, "updatedReplicas": 3, "availableReplicas": 1, "readyReplicas": 3}, "1/3 replicas available"),
    ({"replicas": 3, "updatedReplicas": 3}, "0/3 replicas available"),
    ({"replicas": 3, "updatedReplicas": 3, "availableReplicas": 3, "readyReplicas": 2}, "2/3 replicas ready"),
])
def test_deployment_reasons(status, reason):
    assert readiness.is_ready(deployment(3, **status)) == (False, reason)


def test_deployment_replicas_default_to_one_and_zero_replicas_is_ready():
    d = obj("apps/v1", "Deployment", spec={}, status={"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                                                     "availableReplicas": 1, "readyReplicas": 1})
    assert readiness.is_ready(d) == (True, "1/1 replicas available")
    assert readiness.is_ready(deployment(0))[0] is True


def test_deployment_past_its_progress_deadline_is_final():
    d = deployment(3, replicas=3, updatedReplicas=3, conditions=[
        condition("Progressing", "False", reason="ProgressDeadlineExceeded", message="too slow")])
    ready, reason = readiness.deployment_ready(d)
    assert not ready and isinstance(reason, readiness.Final)
    assert reason == "rollout failed: ProgressDeadlineExceeded: too slow"
    # Callers of is_ready get a plain str (module results are serialised by exact type).
    assert type(readiness.is_ready(d)[1]) is str


# ----- StatefulSet, DaemonSet, ReplicaSet ------------------------------------------------------


def statefulset(want=2, strategy=None, **status):
    status.setdefault("observedGeneration", 1)
    spec = {"replicas": want}
    if strategy:
        spec["updateStrategy"] = strategy
    return obj("apps/v1", "StatefulSet", spec=spec, status=status)


def test_statefulset_rules():
    done = dict(readyReplicas=2, availableReplicas=2, updatedReplicas=2, currentRevision="a", updateRevision="a")
    assert readiness.is_ready(statefulset(**done)) == (True, "2/2 replicas available")
    assert readiness.is_ready(statefulset(readyReplicas=1)) == (False, "1/2 replicas ready")
    assert readiness.is_ready(statefulset(**{**done, "availableReplicas": 1})) == (False, "1/2 replicas available")
    assert readiness.is_ready(statefulset(**{**done, "updatedReplicas": 1})) == (False, "1/2 replicas updated")
    rolling = {**done, "currentRevision": "a", "updateRevision": "b"}
    assert readiness.is_ready(statefulset(**rolling)) == (False, "rolling update to revision b in progress")
    # Servers before 1.22 report no availableReplicas: ready replicas stand in.
    assert readiness.is_ready(statefulset(readyReplicas=2, updatedReplicas=2))[0] is True


def test_statefulset_partition_and_on_delete_limit_what_must_be_updated():
    partitioned = statefulset(4, {"type": "RollingUpdate", "rollingUpdate": {"partition": 3}},
                              readyReplicas=4, updatedReplicas=1, currentRevision="a", updateRevision="b")
    assert readiness.is_ready(partitioned)[0] is True
    on_delete = statefulset(2, {"type": "OnDelete"}, readyReplicas=2, updatedReplicas=0)
    assert readiness.is_ready(on_delete)[0] is True


def test_daemonset_rules():
    def ds(**status):
        status.setdefault("observedGeneration", 1)
        return obj("apps/v1", "DaemonSet", status=status)

    full = dict(desiredNumberScheduled=2, updatedNumberScheduled=2, numberAvailable=2, numberReady=2)
    assert readiness.is_ready(ds(**full)) == (True, "2/2 pods available")
    assert readiness.is_ready(ds(**{**full, "updatedNumberScheduled": 1})) == (False, "1/2 pods updated")
    assert readiness.is_ready(ds(**{**full, "numberAvailable": 0})) == (False, "0/2 pods available")
    assert readiness.is_ready(ds(**{**full, "numberReady": 1})) == (False, "1/2 pods ready")
    assert readiness.is_ready(ds())[0] is True  # no node to run on: nothing to wait for
    assert readiness.is_ready(obj("apps/v1", "DaemonSet"))[0] is False  # not observed yet


def test_replicaset_rules():
    rs = obj("apps/v1", "ReplicaSet", spec={"replicas": 2},
             status={"observedGeneration": 1, "availableReplicas": 2, "readyReplicas": 2})
    assert readiness.is_ready(rs) == (True, "2/2 replicas available")
    rs["status"]["availableReplicas"] = 1
    assert readiness.is_ready(rs) == (False, "1/2 replicas available")


# ----- Job, Pod, PVC, CRD, Namespace, Service --------------------------------------------------


def job(spec=None, **status):
    return obj("batch/v1", "Job", spec={"completions": 2} if spec is None else spec, status=status)


def test_job_rules():
    assert readiness.is_ready(job(conditions=[condition("Complete")])) == (True, "complete")
    failed = job(conditions=[condition("Failed", reason="BackoffLimitExceeded", message="too many retries")])
    ready, reason = readiness.job_ready(failed)
    assert not ready and isinstance(reason, readiness.Final)
    assert reason == "failed: BackoffLimitExceeded: too many retries"
    assert isinstance(readiness.job_ready(job(conditions=[condition("FailureTarget")]))[1], readiness.Final)
    assert readiness.is_ready(job(succeeded=1, active=1)) == (False, "running: 1/2 completions, 1 active")
    assert readiness.is_ready(job({}, active=1)) == (False, "running: 0 succeeded, 1 active")
    assert readiness.is_ready(job({"suspend": True})) == (True, "suspended: runs once resumed, nothing to wait for")


def pod(**status):
    return obj("v1", "Pod", status=status)


def test_pod_rules():
    assert readiness.is_ready(pod(phase="Running", conditions=[condition("Ready")])) == (True, "ready")
    assert readiness.is_ready(pod(phase="Succeeded")) == (True, "succeeded")
    ready, reason = readiness.pod_ready(pod(phase="Failed", reason="Evicted"))
    assert (ready, reason) == (False, "failed: Evicted") and isinstance(reason, readiness.Final)
    unscheduled = pod(phase="Pending", conditions=[
        condition("PodScheduled", "False", reason="Unschedulable", message="0/1 nodes are available")])
    assert readiness.is_ready(unscheduled) == (False, "not scheduled: Unschedulable: 0/1 nodes are available")
    pulling = pod(phase="Pending", containerStatuses=[
        {"name": "web", "state": {"waiting": {"reason": "ImagePullBackOff"}}}])
    assert readiness.is_ready(pulling) == (False, "container web waiting: ImagePullBackOff")
    assert readiness.is_ready(pod(phase="Running")) == (False, "not ready (phase Running)")
    assert readiness.is_ready(pod()) == (False, "not ready (phase unknown)")


def test_pvc_crd_namespace_rules():
    assert readiness.is_ready(obj("v1", "PersistentVolumeClaim", status={"phase": "Bound"})) == (True, "Bound")
    assert readiness.is_ready(obj("v1", "PersistentVolumeClaim", status={"phase": "Pending"}))[0] is False
    assert readiness.is_ready(obj("v1", "PersistentVolumeClaim"))[1] == "phase Pending, not Bound"
    assert isinstance(readiness.pvc_ready(obj("v1", "PersistentVolumeClaim", status={"phase": "Lost"}))[1], readiness.Final)

    def crd(*conditions):
        return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", status={"conditions": list(conditions)})

    assert readiness.is_ready(crd(condition("Established"))) == (True, "Established")
    assert readiness.is_ready(crd(condition("Established", "False"))) == (False, "not Established yet")
    ready, reason = readiness.crd_ready(crd(condition("NamesAccepted", "False", reason="NameConflict")))
    assert not ready and isinstance(reason, readiness.Final) and "NameConflict" in reason

    assert readiness.is_ready(obj("v1", "Namespace", status={"phase": "Active"})) == (True, "Active")
    assert readiness.is_ready(obj("v1", "Namespace", status={"phase": "Terminating"})) == (
        False, "phase Terminating, not Active")


def service(service_type="LoadBalancer", ingress=None):
    status = {"loadBalancer": {"ingress": ingress}} if ingress is not None else {}
    return obj("v1", "Service", spec={"type": service_type}, status=status)


def test_services_are_ready_unless_load_balancers_are_awaited():
    assert readiness.is_ready(service())[0] is True
    assert readiness.is_ready(service(), wait_for_load_balancers=True) == (False, "waiting for a load balancer address")
    assert readiness.is_ready(service(ingress=[{"ip": "10.0.0.7"}]), wait_for_load_balancers=True) == (
        True, "load balancer at 10.0.0.7")
    assert readiness.is_ready(service(ingress=[{"hostname": "lb.example"}]), wait_for_load_balancers=True)[0]
    assert readiness.is_ready(service("ClusterIP"), wait_for_load_balancers=True) == (True, "type ClusterIP")


# ----- generic rule, fail_closed, deletion ------------------------------------------------------


def widget(status=None, generation=1):
    return obj("example.com/v1", "Widget", generation=generation, status=status)


def test_generic_rule_uses_ready_then_available_conditions():
    assert readiness.is_ready(widget({"conditions": [condition("Ready")]})) == (True, "Ready")
    assert readiness.is_ready(widget({"conditions": [condition("Available")]})) == (True, "Available")
    ready, reason = readiness.is_ready(widget({"conditions": [condition("Ready", "False", reason="Waiting",
                                                                      message="db down")]}))
    assert (ready, reason) == (False, "Ready is False: Waiting: db down")
    assert readiness.is_ready(widget({"conditions": [condition("Synced")]})) == (True, "no Ready or Available condition")


def test_generic_rule_needs_the_current_generation():
    stale = widget({"observedGeneration": 1, "conditions": [condition("Ready")]}, generation=2)
    assert readiness.is_ready(stale)[0] is False
    stale_condition = widget({"conditions": [condition("Ready", observedGeneration=1)]}, generation=2)
    assert readiness.is_ready(stale_condition) == (False, "condition Ready is from generation 1, not 2")
    current = widget({"observedGeneration": 2, "conditions": [condition("Ready", observedGeneration=2)]},
                     generation=2)
    assert readiness.is_ready(current)[0] is True


def test_generic_rule_honours_stalled_and_reconciling():
    stalled = widget({"conditions": [condition("Ready"), condition("Stalled", reason="BadSpec")]})
    assert readiness.is_ready(stalled) == (False, "Stalled: BadSpec")
    assert readiness.is_ready(widget({"conditions": [condition("Reconciling")]}))[0] is False


def test_no_status_is_ready_unless_fail_closed_on_custom_resources():
    assert readiness.is_ready(widget()) == (True, "no status to check")
    assert readiness.is_ready(widget(), fail_closed=True) == (False, "no status reported yet (fail_closed)")
    assert readiness.is_ready(widget({}), fail_closed=True)[0] is False
    # Built-in kinds never fail closed: a ConfigMap has no status by design.
    assert readiness.is_ready(obj("v1", "ConfigMap"), fail_closed=True)[0] is True
    # A custom resource in a *.k8s.io group (Gateway API) is still custom.
    gateway = obj("gateway.networking.k8s.io/v1", "Gateway")
    assert readiness.is_ready(gateway, fail_closed=True)[0] is False
    assert readiness.is_ready(widget({"conditions": [condition("Ready")]}), fail_closed=True)[0] is True


def test_objects_being_deleted_are_not_ready():
    d = deployment(0)
    d["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert readiness.is_ready(d) == (False, "being deleted")


def test_rules_table_keys_match_their_predicates():
    assert readiness.RULES[spec.GroupKind("apps", "Deployment")] is readiness.deployment_ready
    assert not (set(readiness.RULES) & readiness.ALWAYS_READY)


# ----- overrides ----------------------------------------------------------------------------


def test_override_replaces_the_rule_and_uses_python_truthiness():
    w = widget({"phase": "Done", "count": 0})
    assert readiness.is_ready(w, overrides={"Widget.example.com": "status.phase == 'Done'"}) == (
        True, "override `status.phase == 'Done'` holds")
    assert readiness.is_ready(w, overrides={"Widget": "status.count"}) == (False, "override `status.count` is 0")
    assert readiness.is_ready(w, overrides={"Widget": "status.missing"}) == (False, "override `status.missing` is null")
    # A Deployment can be declared ready on any condition the user prefers.
    d = deployment(3, replicas=3, updatedReplicas=3, availableReplicas=1)
    assert readiness.is_ready(d, overrides={"Deployment": "status.availableReplicas >= `1`"})[0] is True


def test_override_by_kind_and_group_wins_over_bare_kind():
    w = widget({"a": True, "b": False})
    overrides = {"Widget": "status.b", "Widget.example.com": "status.a"}
    assert readiness.is_ready(w, overrides=overrides)[0] is True
    other_group = obj("other.io/v1", "Widget", status={"a": True, "b": False})
    assert readiness.is_ready(other_group, overrides=overrides)[0] is False


def test_invalid_overrides_are_input_errors():
    with pytest.raises(InputError, match="invalid JMESPath"):
        readiness.check_overrides({"Widget": "status.["})
    with pytest.raises(InputError, match="mapping"):
        readiness.check_overrides(["Widget"])
    with pytest.raises(InputError, match="expected a Kind"):
        readiness.check_overrides({"Widget": ""})
    readiness.check_overrides(None)
    readiness.check_overrides({"Widget": "status.ready"})


def test_missing_jmespath_is_a_clear_error(monkeypatch):
    real_import = builtins.__import__

    def no_jmespath(name, *args, **kwargs):
        if name == "jmespath":
            raise ImportError("No module named 'jmespath'")
        return real_import(name, *args, **kwargs)

    readiness._compile.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_jmespath)
    try:
        with pytest.raises(InputError, match="need the Python package 'jmespath'") as caught:
            readiness.is_ready(widget(), overrides={"Widget": "status.never_compiled_before"})
        assert "pip install jmespath" in str(caught.value)
    finally:
        readiness._compile.cache_clear()


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
    assert waiting.wait_ready(client, targets, timeout=10, interval=2) == []
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
    assert unready == [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "web",
                        "reason": "not found"}]
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
    assert waiting.wait_ready(client, [(widgets, "shop", "w")], timeout=0) == []
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
    assert waiting.wait_ready(client, [(services, "shop", "web")], timeout=0) == []
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
    assert waiting.wait_ready(flaky, [(DEPLOYMENTS, "shop", "web")], timeout=10) == []


def test_wait_gone_waits_for_objects_to_disappear_reading_metadata_only(clock):
    dying = named(deployment(1), "web")
    dying["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    dying["metadata"]["finalizers"] = ["example.com/cleanup"]
    client = FakeClient({("Deployment", "shop"): [dying]}, {("Deployment", "shop"): []})
    assert waiting.wait_gone(client, [(DEPLOYMENTS, "shop", "web")], timeout=10) == []
    assert client.calls[0] == ("Deployment", "shop", True)

    stuck = FakeClient({("Deployment", "shop"): [dying]})
    with pytest.raises(WaitTimeout) as caught:
        waiting.wait_gone(stuck, [(DEPLOYMENTS, "shop", "web")], timeout=3)
    assert "1 of 1 objects not gone after 3s: Deployment shop/web: being deleted; finalizers: example.com/cleanup" \
        in caught.value.message
    assert "finalizer named is removed by the controller that set it" in caught.value.fix


def test_wait_gone_treats_a_kind_no_longer_served_as_gone(clock):
    client = FakeClient({("Deployment", "shop"): ApiError("not found", status=404)})
    assert waiting.wait_gone(client, [(DEPLOYMENTS, "shop", "web")], timeout=0) == []


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
    assert waiting.wait_ready(client, [target], timeout=120, applied={target: applied_job()}) == []
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
    assert waiting.wait_ready(client, [target], timeout=120, interval=1, applied={target: applied_job()}) == []
    assert len(client.event_queries) == 3  # the event may land just after the deletion
    assert clock[0] == 1002.0


def test_a_ttl_job_seen_running_then_gone_uses_the_ttl_of_the_live_object(clock):
    running = named(job(spec={"ttlSecondsAfterFinished": 30}, active=1), "migrate")
    running["metadata"]["uid"] = "uid-1"
    client = EventsClient({("Job", "shop"): [running]}, {("Job", "shop"): []},
                          events={"uid-1": [event("Completed")]})
    target = (JOBS, "shop", "migrate")
    as_applied = applied_job(ttl=None)  # e.g. a mutating webhook set the TTL
    assert waiting.wait_ready(client, [target], timeout=120, interval=1, applied={target: as_applied}) == []


def test_a_finished_job_being_deleted_by_its_ttl_keeps_its_verdict():
    done = job(conditions=[condition("Complete")])
    done["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert readiness.is_ready(done) == (True, "complete")
    running = job(active=1)
    running["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert readiness.is_ready(running) == (False, "being deleted")


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
    assert waiting.wait_gone(client, [target], timeout=10, uids={target: "uid-old"}) == []
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
