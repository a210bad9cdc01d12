"""Missing namespaces and changes the server refuses as immutable (issue #16 points 3 and 6).

The module runs forked from a warm process (``module_runner``), and through the ansible CLI where the
test reads the diff Ansible prints; the cluster is read through the independent test client.
"""

from __future__ import annotations

import re
import secrets

import pytest
import yaml
from ansible_cli import run_playbook
from module_runner import module_run

PART_OF = "applyset.kubernetes.io/part-of"
KINDS = "applyset.kubernetes.io/contains-group-kinds"
STRATEGY = "applyset.kubernetes.ansible/update-strategy"


def cm(name, namespace=None):
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"v": name}}


def job(image, annotations=None):
    meta = {"name": "migrate"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "migrate", "image": image}]}}}}


def deployment(app):
    labels = {"app": app}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels}, "spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}}}


def pvc(storage_class, annotations=None):
    meta = {"name": "data"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
            "spec": {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}


def apply(cluster, namespace, definition, parent="set1", check=False, diff=False, **options):
    args = {"parent": parent, "namespace": namespace, "definition": definition, **options}
    return module_run(cluster, "applyset_apply", args, check=check, diff=diff)


def by_ref(result):
    return {f"{o['kind']}/{o['name']}": o for o in result.get("objects", [])}


@pytest.fixture
def absent_namespace(kube, namespace):
    """A namespace name that does not exist; deleted afterwards if a test made it."""
    name = f"{namespace[:50]}-new-{secrets.token_hex(2)}"
    assert kube.get(f"/api/v1/namespaces/{name}") is None
    yield name
    kube.delete(f"/api/v1/namespaces/{name}")


# ----- missing namespaces --------------------------------------------------------------------


@pytest.mark.parametrize("check", [False, True], ids=["real", "check"])
def test_missing_parent_namespace_is_named_before_anything_is_written(cluster, kube, absent_namespace, check):
    rc, result, out = apply(cluster, absent_namespace, [cm("a")], parent="argocd", check=check)
    assert rc != 0, out
    msg = result["msg"]
    assert f"namespace {absent_namespace} does not exist" in msg
    assert "the parent secrets./argocd" in msg and f"ConfigMap {absent_namespace}/a" in msg
    # Both ways out, and no word of RBAC.
    assert "Namespace object" in msg and "create_namespace: true" in msg
    assert "RBAC" not in msg
    assert result["error"]["type"] == "NamespaceMissingError"
    assert result["error"]["details"]["missing"] == [absent_namespace]
    assert kube.get(f"/api/v1/namespaces/{absent_namespace}") is None


def test_missing_member_namespace_is_named_and_nothing_is_written(cluster, kube, namespace, absent_namespace):
    rc, result, out = apply(cluster, namespace, [cm("here"), cm("there", absent_namespace)])
    assert rc != 0, out
    msg = result["msg"]
    assert (f'namespace {absent_namespace} does not exist (namespaces "{absent_namespace}" not found; '
            f"needed by ConfigMap {absent_namespace}/there)") in msg
    assert "Namespace object" in msg and "create it beforehand" in msg
    # Found before the first write: no parent, no member.
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1") is None
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/here") is None

    # The same set with the Namespace as a member goes through: it is created first.
    ns_obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": absent_namespace}}
    rc, result, out = apply(cluster, namespace, [ns_obj, cm("here"), cm("there", absent_namespace)])
    assert rc == 0, out
    assert kube.get(f"/api/v1/namespaces/{absent_namespace}/configmaps/there") is not None


def test_create_namespace_in_check_mode_then_for_real_and_left_by_uninstall(cluster, kube, absent_namespace):
    ns = absent_namespace
    rc, result, out = apply(cluster, ns, [cm("a"), cm("b")], parent="argocd", check=True, diff=True,
                            create_namespace=True)
    assert rc == 0 and result["changed"], out
    objects = by_ref(result)
    assert objects[f"Namespace/{ns}"]["action"] == "created"
    assert "create_namespace" in objects[f"Namespace/{ns}"]["reason"]
    assert objects["ConfigMap/a"]["action"] == objects["ConfigMap/b"]["action"] == "created"
    assert f"+++ after: Namespace {ns}" in out  # the diff, as --diff prints it
    assert kube.get(f"/api/v1/namespaces/{ns}") is None  # check mode wrote nothing

    rc, result, out = apply(cluster, ns, [cm("a"), cm("b")], parent="argocd", create_namespace=True)
    assert rc == 0 and result["changed"], out
    assert by_ref(result)[f"Namespace/{ns}"]["action"] == "created"
    namespace_obj = kube.get(f"/api/v1/namespaces/{ns}")
    assert PART_OF not in (namespace_obj["metadata"].get("labels") or {})  # not a member
    parent = kube.get(f"/api/v1/namespaces/{ns}/secrets/argocd")
    assert parent["metadata"]["annotations"][KINDS] == "ConfigMap"
    assert kube.get(f"/api/v1/namespaces/{ns}/configmaps/a") is not None

    # Once it exists, the option does nothing; uninstall leaves the namespace, as Helm does.
    rc, result, out = apply(cluster, ns, [cm("a"), cm("b")], parent="argocd", create_namespace=True)
    assert rc == 0 and not result["changed"], out
    assert f"Namespace/{ns}" not in by_ref(result)
    rc, result, out = module_run(cluster, "applyset_apply", {"parent": "argocd", "namespace": ns,
                                                              "state": "absent"})
    assert rc == 0, out
    assert kube.get(f"/api/v1/namespaces/{ns}/configmaps/a") is None
    assert kube.get(f"/api/v1/namespaces/{ns}")["metadata"].get("deletionTimestamp") is None


# ----- immutable fields ------------------------------------------------------------------------


def live_job(kube, namespace):
    return kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate")


def test_job_image_change_names_the_field_then_recreates_with_the_option_and_the_annotation(
        cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [job("busybox:1.36"), cm("config")])
    assert rc == 0, out
    first_uid = live_job(kube, namespace)["metadata"]["uid"]

    # Without the option: the field is named, not the whole template, and the way out is given.
    rc, result, out = apply(cluster, namespace, [job("busybox:1.37"), cm("config")])
    assert rc != 0, out
    failed = by_ref(result)["Job/migrate"]
    assert failed["action"] == "failed"
    assert "spec.template: field is immutable" in failed["reason"]
    assert "Invalid value" not in failed["reason"] and "Containers" not in failed["reason"]
    assert "recreate_on_immutable" in failed["reason"] and STRATEGY in failed["reason"]
    assert failed["error"]["details"]["immutable_fields"] == ["spec.template"]
    assert "spec.template: field is immutable" in result["msg"]
    assert live_job(kube, namespace)["metadata"]["uid"] == first_uid

    # Check mode and diff: "would be replaced", nothing deleted.
    rc, result, out = apply(cluster, namespace, [job("busybox:1.37"), cm("config")], check=True, diff=True,
                            recreate_on_immutable=["Job"])
    assert rc == 0 and result["changed"], out
    preview = by_ref(result)["Job/migrate"]
    assert preview["action"] == "replaced" and "would be replaced" in preview["reason"]
    assert result["summary"]["replaced"] == 1
    assert f"--- before: Job {namespace}/migrate" in out
    assert re.search(r"^\+.*image: busybox:1\.37$", out, re.M) and re.search(r"^-.*image: busybox:1\.36$", out, re.M)
    assert live_job(kube, namespace)["metadata"]["uid"] == first_uid

    # For real: deleted with its UID, created again with the new image.
    rc, result, out = apply(cluster, namespace, [job("busybox:1.37"), cm("config")], recreate_on_immutable=["Job"])
    assert rc == 0 and result["changed"], out
    replaced = by_ref(result)["Job/migrate"]
    assert replaced["action"] == "replaced"
    live = live_job(kube, namespace)
    assert live["metadata"]["uid"] == replaced["uid"] != first_uid
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.37"
    assert live["metadata"]["labels"][PART_OF]
    # The same input again changes nothing.
    rc, result, out = apply(cluster, namespace, [job("busybox:1.37"), cm("config")], recreate_on_immutable=["Job"])
    assert rc == 0 and not result["changed"], out

    # Per object: the annotation opts in without the option...
    opted_in = {STRATEGY: "recreate-on-immutable"}
    rc, result, out = apply(cluster, namespace, [job("busybox:1.36", opted_in), cm("config")])
    assert rc == 0, out
    assert by_ref(result)["Job/migrate"]["action"] == "replaced"
    assert live_job(kube, namespace)["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.36"
    # ...and "apply" opts out of the option.
    opted_out = {STRATEGY: "apply"}
    rc, result, out = apply(cluster, namespace, [job("busybox:1.37", opted_out), cm("config")],
                            recreate_on_immutable=["Job.batch"])
    assert rc != 0, out
    assert by_ref(result)["Job/migrate"]["action"] == "failed"


def test_deployment_selector_change_is_named_then_recreated(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [deployment("v1")])
    assert rc == 0, out
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    first_uid = kube.get(path)["metadata"]["uid"]
    rc, result, out = apply(cluster, namespace, [deployment("v2")])
    assert rc != 0, out
    assert "spec.selector: field is immutable" in by_ref(result)["Deployment/web"]["reason"]
    assert kube.get(path)["metadata"]["uid"] == first_uid

    rc, result, out = apply(cluster, namespace, [deployment("v2")], recreate_on_immutable=["Deployment"])
    assert rc == 0, out
    assert by_ref(result)["Deployment/web"]["action"] == "replaced"
    live = kube.get(path)
    assert live["metadata"]["uid"] != first_uid and live["spec"]["selector"]["matchLabels"] == {"app": "v2"}


def test_an_invalid_replacement_is_refused_before_the_delete(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [job("busybox:1.36")])
    assert rc == 0, out
    first_uid = live_job(kube, namespace)["metadata"]["uid"]
    broken = job("busybox:1.37")
    broken["spec"]["template"]["spec"]["restartPolicy"] = "Always"  # invalid for a Job, on create too
    broken["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:1.37"
    rc, result, out = apply(cluster, namespace, [broken], recreate_on_immutable=["Job"])
    assert rc != 0, out
    assert by_ref(result)["Job/migrate"]["action"] == "failed"
    assert live_job(kube, namespace)["metadata"]["uid"] == first_uid


def test_protected_kinds_are_never_recreated(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [pvc("slow")])
    assert rc == 0, out
    path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/data"
    first_uid = kube.get(path)["metadata"]["uid"]

    # Asking for it is an input error, found before anything is written.
    rc, result, out = apply(cluster, namespace, [pvc("fast")], recreate_on_immutable=["PersistentVolumeClaim"])
    assert rc != 0 and "protected kinds: PersistentVolumeClaim" in result["msg"], out
    rc, result, out = apply(cluster, namespace, [pvc("fast", {STRATEGY: "recreate-on-immutable"})])
    assert rc != 0 and "never deleted to be created again" in result["msg"], out
    rc, result, out = apply(cluster, namespace, [pvc("fast", {STRATEGY: "sometimes"})])
    assert rc != 0 and "unknown value 'sometimes'" in result["msg"], out
    assert "objects" not in result or not by_ref(result)

    # Refused by the server: the fix says it is protected, not how to recreate it.
    rc, result, out = apply(cluster, namespace, [pvc("fast")])
    assert rc != 0, out
    reason = by_ref(result)["PersistentVolumeClaim/data"]["reason"]
    assert "immutable" in reason and "protected kind" in reason and "recreate_on_immutable" not in reason
    assert kube.get(path)["metadata"]["uid"] == first_uid


# ----- through the deploy role -------------------------------------------------------------------


def test_deploy_role_creates_the_namespace_and_recreates_a_job(cluster, kube, absent_namespace, tmp_path):
    ns = absent_namespace
    playbook = tmp_path / "deploy.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "roles": [{"role": "applyset.kubernetes.deploy", "vars": {
            "deploy_app": "migrations", "deploy_namespace": ns, "deploy_wait": False,
            "deploy_create_namespace": True, "deploy_recreate_on_immutable": ["Job"],
            "deploy_definition": "{{ [job_definition] }}"}}],
    }]))
    for image in ("busybox:1.36", "busybox:1.37"):
        proc = run_playbook(cluster, playbook, extra_vars={"job_definition": job(image)})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        live = kube.get(f"/apis/batch/v1/namespaces/{ns}/jobs/migrate")
        assert live["spec"]["template"]["spec"]["containers"][0]["image"] == image
    assert kube.get(f"/api/v1/namespaces/{ns}/secrets/migrations") is not None
