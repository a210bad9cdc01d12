"""Versioned ConfigMaps and Secrets (issue 49, inputs/versioned.py, rules/versioned_keep.py) on the real
control plane, with kube-controller-manager making the Deployment's ReplicaSets and kwok running the
pods: a versioned ConfigMap gets a name per content, the Deployment that mounts it follows the new
name and rolls (a new ReplicaSet), the older versions are kept up to ``versioned_keep`` and pruned
beyond it (with ``wait``, once the Deployment is ready on the new one), a re-run writes nothing, and
check mode writes nothing and shows the new name; a rollback points the Deployment back at the
revision's version, created again when it was pruned; the task's ``versioned`` list marks an object
as the annotation does.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kubeapi import wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.history import revisions as history  # noqa: E402
from applyset.inputs import manifests, versioned  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402
from applyset.run.options import Options  # noqa: E402


def objects(mode, annotated=True):
    settings = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"mode": mode}, "metadata": {"name": "shop-settings"}}
    if annotated:
        settings["metadata"]["annotations"] = {versioned.ANNOTATION: "true"}
    pod = {"containers": [{"name": "web", "image": "registry.example/web:1"}],
           "volumes": [{"name": "settings", "configMap": {"name": "shop-settings"}}]}
    return [settings, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod}}}]


def versioned_name(mode):
    return "shop-settings-" + versioned.version_suffix({"kind": "ConfigMap", "data": {"mode": mode}})


def apply(cluster, namespace, mode, annotated=True, **options):
    run = engine.Engine(core_kube.connect({"kubeconfig": cluster.kubeconfig}), "shop", namespace,
                        Options.from_settings(**{"versioned_keep": 1, **options}))
    return run.apply(manifests.load_definition(objects(mode, annotated)))


def config_maps(kube, namespace):
    items = kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]
    return sorted(c["metadata"]["name"] for c in items if c["metadata"]["name"].startswith("shop-settings"))


def mounted(kube, namespace):
    template = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")["spec"]["template"]
    return template["spec"]["volumes"][0]["configMap"]["name"]


def replica_sets(kube, namespace):
    items = kube.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"]
    return sorted(s["metadata"]["labels"].get("pod-template-hash") for s in items)


def test_a_changed_versioned_configmap_rolls_the_deployment_and_old_versions_go_beyond_the_keep(cluster, kube, namespace):
    apply(cluster, namespace, "fast")
    assert config_maps(kube, namespace) == [versioned_name("fast")] and mounted(kube, namespace) == versioned_name("fast")
    first = wait_for(lambda: replica_sets(kube, namespace), timeout=60, what="the first ReplicaSet")
    again = apply(cluster, namespace, "fast")
    assert again.requests["writes"] == 0, again.requests

    preview = apply(cluster, namespace, "safe", dry_run=True, diff=True)
    assert config_maps(kube, namespace) == [versioned_name("fast")] and mounted(kube, namespace) == versioned_name("fast")
    assert any(o.name == versioned_name("safe") for o in preview.objects)
    after = next(d["after"] for d in preview.diff if d["after_header"].startswith("Deployment"))
    assert versioned_name("safe") in after, after

    apply(cluster, namespace, "safe")
    assert mounted(kube, namespace) == versioned_name("safe")
    assert config_maps(kube, namespace) == sorted([versioned_name("fast"), versioned_name("safe")]), "one older kept"
    rolled = wait_for(lambda: len(replica_sets(kube, namespace)) == 2 and replica_sets(kube, namespace),
                      timeout=60, what="a second ReplicaSet")
    assert set(first) < set(rolled), (first, rolled)

    third = apply(cluster, namespace, "third")
    assert config_maps(kube, namespace) == sorted([versioned_name("safe"), versioned_name("third")])
    pruned = [o.name for o in third.objects if o.action == "pruned"]
    assert pruned == [versioned_name("fast")], pruned


def test_with_wait_the_old_version_goes_once_the_deployment_is_ready_on_the_new_one(cluster, kube, namespace):
    apply(cluster, namespace, "fast", wait=True, wait_timeout=90)
    apply(cluster, namespace, "safe", wait=True, wait_timeout=90, versioned_keep=0)
    assert config_maps(kube, namespace) == [versioned_name("safe")]
    deployment = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    status = deployment["status"]
    assert status["observedGeneration"] == deployment["metadata"]["generation"]
    assert status.get("updatedReplicas") == 1 and status.get("availableReplicas") == 1, status


def test_a_rollback_points_the_deployment_back_at_its_version_made_again_when_pruned(cluster, kube, namespace):
    for mode in ("fast", "safe", "third"):
        apply(cluster, namespace, mode, history=history.Settings(max=5))
    assert versioned_name("fast") not in config_maps(kube, namespace), "pruned beyond the keep"
    apply(cluster, namespace, "ignored", history=history.Settings(max=5, rollback_to=1))
    assert mounted(kube, namespace) == versioned_name("fast")
    assert config_maps(kube, namespace) == sorted([versioned_name("fast"), versioned_name("third")])
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/{versioned_name('fast')}")["data"] == {"mode": "fast"}


def test_the_task_s_list_versions_an_object_without_its_annotation(cluster, kube, namespace):
    apply(cluster, namespace, "fast", annotated=False, versioned=("ConfigMap/shop-settings",))
    assert mounted(kube, namespace) == versioned_name("fast")
    again = apply(cluster, namespace, "fast", annotated=False, versioned=("ConfigMap/shop-settings",))
    assert again.requests["writes"] == 0, again.requests


def test_a_hook_job_reads_the_version_its_run_applied(cluster, kube, namespace):
    """A post-install hook Job that reads a versioned ConfigMap is created pointing at the new name
    (hooks are split off the members before versioning; the versioning step rewrites them too)."""
    reads = [{"configMapRef": {"name": "shop-settings"}}]
    pod = {"restartPolicy": "Never", "containers": [{"name": "smoke", "image": "busybox:1.36", "envFrom": reads}]}
    smoke = {"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": "smoke", "annotations": {"helm.sh/hook": "post-install,post-upgrade"}},
             "spec": {"backoffLimit": 0, "template": {"spec": pod}}}
    run = engine.Engine(core_kube.connect({"kubeconfig": cluster.kubeconfig}), "shop", namespace, Options())
    run.apply(manifests.load_definition([*objects("fast"), smoke]))
    job = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/smoke")
    containers = job["spec"]["template"]["spec"]["containers"]
    assert containers[0]["envFrom"] == [{"configMapRef": {"name": versioned_name("fast")}}]
    assert mounted(kube, namespace) == versioned_name("fast")
