"""Apply phases against the real control plane: a failed member stops the later phases, never
its own (plan.phase_of). Assertions read the cluster through the independent test client."""

from __future__ import annotations

from module_runner import module_run


def cm(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {"v": name}}


def refused(obj):
    """``obj`` with a field the server's Strict field validation refuses."""
    return {**obj, "bogus": 1}


SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "front"},
           "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.9"}]}}}}
PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
       "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "web"}}}}


def apply(cluster, namespace, definition):
    return module_run(cluster, "applyset_apply", {"parent": "set1", "namespace": namespace, "definition": definition})


def actions(result):
    return {f"{o['kind']}/{o['name']}": o["action"] for o in result["objects"]}


def exists(kube, path):
    return kube.get(path) is not None


def test_a_refused_configmap_stops_the_workloads_but_not_its_own_phase(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [DEPLOYMENT, PDB, refused(cm("config")), SERVICE])
    assert rc != 0, out
    assert actions(result) == {"ConfigMap/config": "failed", "Service/front": "created",
                               "Deployment/web": "skipped", "PodDisruptionBudget/web": "skipped"}, out
    assert exists(kube, f"/api/v1/namespaces/{namespace}/services/front")
    assert not exists(kube, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert not exists(kube, f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/web")


def test_members_never_tried_after_a_failure_are_listed_as_skipped_and_counted(cluster, kube, namespace):
    # Issue 36, item 7: every member of the plan is in objects, in plan order; the untried ones
    # say why, and the summary adds up to the plan's size.
    rc, result, out = apply(cluster, namespace, [DEPLOYMENT, PDB, refused(cm("config")), SERVICE, cm("more")])
    assert rc != 0, out
    listed = [(o["kind"], o["name"], o["action"]) for o in result["objects"]]
    assert listed == [("ConfigMap", "config", "failed"), ("ConfigMap", "more", "created"),
                      ("Service", "front", "created"), ("Deployment", "web", "skipped"),
                      ("PodDisruptionBudget", "web", "skipped")], out
    for skipped in result["objects"][3:]:
        assert skipped["reason"] == "not tried: an earlier member failed, and what comes later may depend on it"
    summary = result["summary"]
    assert (summary["failed"], summary["created"], summary["skipped"]) == (1, 2, 2), summary
    assert sum(summary.values()) == 5, summary


def test_a_refused_workload_does_not_stop_what_goes_with_it(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [PDB, refused(DEPLOYMENT), cm("config")])
    assert rc != 0, out
    assert actions(result) == {"ConfigMap/config": "created", "Deployment/web": "failed",
                               "PodDisruptionBudget/web": "created"}, out
    assert exists(kube, f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/web")
    assert not exists(kube, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
