"""The built-in workloads' readiness rules (wait/workload_rules.py): Deployment, StatefulSet, DaemonSet,
ReplicaSet, Job, Pod."""

from __future__ import annotations

import pytest
from applyset.wait import workload_rules
from applyset.wait.status import Status
from readiness_objects import condition, deployment, job, judged, obj

# ----- Deployment ---------------------------------------------------------------------------


def test_deployment_ready_when_all_replicas_updated_available_and_ready():
    d = deployment(3, replicas=3, updatedReplicas=3, readyReplicas=3, availableReplicas=3)
    assert judged(d) == (True, "3/3 replicas available")


def test_deployment_not_ready_before_the_controller_observed_it():
    d = obj("apps/v1", "Deployment", generation=2, spec={"replicas": 1}, status={"observedGeneration": 1})
    ready, reason = judged(d)
    assert not ready and "observe generation 2" in reason
    fresh = obj("apps/v1", "Deployment", spec={"replicas": 1})  # no status at all yet
    assert judged(fresh)[0] is False


@pytest.mark.parametrize("status, reason", [
    ({"replicas": 3, "updatedReplicas": 1}, "1/3 replicas updated"),
    ({"replicas": 4, "updatedReplicas": 3}, "1 old replicas pending termination"),
    ({"replicas": 3, "updatedReplicas": 3, "availableReplicas": 1, "readyReplicas": 3}, "1/3 replicas available"),
    ({"replicas": 3, "updatedReplicas": 3}, "0/3 replicas available"),
    ({"replicas": 3, "updatedReplicas": 3, "availableReplicas": 3, "readyReplicas": 2}, "2/3 replicas ready"),
])
def test_deployment_reasons(status, reason):
    assert judged(deployment(3, **status)) == (False, reason)


def test_deployment_replicas_default_to_one_and_zero_replicas_is_ready():
    d = obj("apps/v1", "Deployment", spec={}, status={"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                                                      "availableReplicas": 1, "readyReplicas": 1})
    assert judged(d) == (True, "1/1 replicas available")
    assert judged(deployment(0))[0] is True


def test_deployment_past_its_progress_deadline_is_final():
    d = deployment(3, replicas=3, updatedReplicas=3, conditions=[
        condition("Progressing", "False", reason="ProgressDeadlineExceeded", message="too slow")])
    found = workload_rules.deployment_ready(d)
    assert (found.status, found.message) == (Status.FAILED, "rollout failed: ProgressDeadlineExceeded: too slow")
    # Results are serialised by exact type: the message is a plain str.
    assert type(judged(d)[1]) is str


# ----- StatefulSet, DaemonSet, ReplicaSet ------------------------------------------------------


def statefulset(want=2, strategy=None, **status):
    status.setdefault("observedGeneration", 1)
    spec = {"replicas": want}
    if strategy:
        spec["updateStrategy"] = strategy
    return obj("apps/v1", "StatefulSet", spec=spec, status=status)


def test_statefulset_rules():
    done = dict(readyReplicas=2, availableReplicas=2, updatedReplicas=2, currentRevision="a", updateRevision="a")
    assert judged(statefulset(**done)) == (True, "2/2 replicas available")
    assert judged(statefulset(readyReplicas=1)) == (False, "1/2 replicas ready")
    assert judged(statefulset(**{**done, "availableReplicas": 1})) == (False, "1/2 replicas available")
    assert judged(statefulset(**{**done, "updatedReplicas": 1})) == (False, "1/2 replicas updated")
    rolling = {**done, "currentRevision": "a", "updateRevision": "b"}
    assert judged(statefulset(**rolling)) == (False, "rolling update to revision b in progress")
    # Servers before 1.22 report no availableReplicas: ready replicas stand in.
    assert judged(statefulset(readyReplicas=2, updatedReplicas=2))[0] is True


def test_statefulset_partition_and_on_delete_limit_what_must_be_updated():
    partitioned = statefulset(4, {"type": "RollingUpdate", "rollingUpdate": {"partition": 3}},
                              readyReplicas=4, updatedReplicas=1, currentRevision="a", updateRevision="b")
    assert judged(partitioned)[0] is True
    on_delete = statefulset(2, {"type": "OnDelete"}, readyReplicas=2, updatedReplicas=0)
    assert judged(on_delete)[0] is True


def test_daemonset_rules():
    def ds(**status):
        status.setdefault("observedGeneration", 1)
        return obj("apps/v1", "DaemonSet", status=status)

    full = dict(desiredNumberScheduled=2, updatedNumberScheduled=2, numberAvailable=2, numberReady=2)
    assert judged(ds(**full)) == (True, "2/2 pods available")
    assert judged(ds(**{**full, "updatedNumberScheduled": 1})) == (False, "1/2 pods updated")
    assert judged(ds(**{**full, "numberAvailable": 0})) == (False, "0/2 pods available")
    assert judged(ds(**{**full, "numberReady": 1})) == (False, "1/2 pods ready")
    assert judged(ds())[0] is True  # no node to run on: nothing to wait for
    assert judged(obj("apps/v1", "DaemonSet"))[0] is False  # not observed yet


def test_replicaset_rules():
    rs = obj("apps/v1", "ReplicaSet", spec={"replicas": 2},
             status={"observedGeneration": 1, "availableReplicas": 2, "readyReplicas": 2})
    assert judged(rs) == (True, "2/2 replicas available")
    rs["status"]["availableReplicas"] = 1
    assert judged(rs) == (False, "1/2 replicas available")


# ----- Job, Pod --------------------------------------------------


def test_job_rules():
    assert judged(job(conditions=[condition("Complete")])) == (True, "complete")
    failed = job(conditions=[condition("Failed", reason="BackoffLimitExceeded", message="too many retries")])
    found = workload_rules.job_ready(failed)
    assert (found.status, found.message) == (Status.FAILED, "failed: BackoffLimitExceeded: too many retries")
    assert workload_rules.job_ready(job(conditions=[condition("FailureTarget")])).final
    assert judged(job(succeeded=1, active=1)) == (False, "running: 1/2 completions, 1 active")
    assert judged(job({}, active=1)) == (False, "running: 0 succeeded, 1 active")
    assert judged(job({"suspend": True})) == (True, "suspended: runs once resumed, nothing to wait for")


def pod(**status):
    return obj("v1", "Pod", status=status)


def test_pod_rules():
    assert judged(pod(phase="Running", conditions=[condition("Ready")])) == (True, "ready")
    assert judged(pod(phase="Succeeded")) == (True, "succeeded")
    found = workload_rules.pod_ready(pod(phase="Failed", reason="Evicted"))
    assert (found.status, found.message) == (Status.FAILED, "failed: Evicted")
    unscheduled = pod(phase="Pending", conditions=[
        condition("PodScheduled", "False", reason="Unschedulable", message="0/1 nodes are available")])
    assert judged(unscheduled) == (False, "not scheduled: Unschedulable: 0/1 nodes are available")
    pulling = pod(phase="Pending", containerStatuses=[
        {"name": "web", "state": {"waiting": {"reason": "ImagePullBackOff"}}}])
    assert judged(pulling) == (False, "container web waiting: ImagePullBackOff")
    assert judged(pod(phase="Running")) == (False, "not ready (phase Running)")
    assert judged(pod()) == (False, "not ready (phase unknown)")
