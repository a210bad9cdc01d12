"""applyset_info and applyset_verify against a real control plane.

Sets are made by this collection (applyset_apply) and by kubectl itself, current and 1.28 (whose
parents only carry the legacy contains-group-resources). Every verify problem is produced on
purpose, by editing parents and labelling objects by hand, and must be detected; the repair must
do what it claims, and a following apply must then prune what it should. Most checks call the
core library in-process (fast); the modules run forked from a warm process (``module_runner``), through
the ansible CLI where a test reads what Ansible prints, and through ansible-playbook.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_cli import ansible_env, run_playbook
from module_runner import module_run
from kubeapi import wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))
from applyset.verify import fsck, inventory  # noqa: E402
from applyset.verify import scan as fsck_scan
from applyset.kube import client as core_kube  # noqa: E402
from applyset import spec  # noqa: E402

KUBECTL_1_28 = "/usr/lib/google-cloud-sdk/bin/kubectl.1.28"
MERGE_PATCH = "application/merge-patch+json"
OUR_TOOLING = spec.tooling_value()


# ----- helpers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def core(cluster):
    """The library's own client, for in-process checks (one discovery per call, like a module run)."""
    return core_kube.connect({"kubeconfig": cluster.kubeconfig})


def verify(core, **kwargs):
    return fsck.verify(core, **kwargs)


def codes(report):
    return sorted(p.code for p in report.problems)


def the_problem(report, code):
    found = [p for p in report.problems if p.code == code]
    assert len(found) == 1, (code, [p.to_dict() for p in report.problems])
    return found[0]


def config_map(name, namespace=None, labels=None, **metadata):
    meta = {"name": name, **metadata}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"key": name}}


def service(name, selector=False):
    """With a selector, the endpoint controllers copy the Service's labels, part-of included, onto the
    Endpoints and EndpointSlices they make (and delete them a moment after the Service)."""
    spec_ = {"ports": [{"port": 80}]}
    if selector:
        spec_["selector"] = {"app": name}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec_}


def make_parent(kube, namespace, name, *, kind="ConfigMap", tooling=OUR_TOOLING, kinds="", namespaces="",
                live_id=None):
    """A parent written by hand, as another tool (or a person) would; returns the set's real id."""
    real_id = spec.compute_id(name, namespace, kind, "")
    annotations = {spec.ANNOTATION_GROUP_KINDS: kinds, spec.ANNOTATION_ADDITIONAL_NAMESPACES: namespaces}
    if tooling is not None:
        annotations[spec.ANNOTATION_TOOLING] = tooling
    labels = {} if live_id == "" else {spec.LABEL_ID: live_id or real_id}
    plural = "configmaps" if kind == "ConfigMap" else "secrets"
    kube.create(f"/api/v1/namespaces/{namespace}/{plural}",
                {"apiVersion": "v1", "kind": kind,
                 "metadata": {"name": name, "labels": labels, "annotations": annotations}})
    return real_id


def member_of(kube, applyset_id, obj, namespace):
    """Create an object that carries a set's part-of label."""
    obj = json.loads(json.dumps(obj))
    obj["metadata"].setdefault("labels", {})[spec.LABEL_PART_OF] = applyset_id
    plural = {"ConfigMap": "configmaps", "Service": "services", "ServiceAccount": "serviceaccounts"}[obj["kind"]]
    return kube.create(f"/api/v1/namespaces/{namespace}/{plural}", obj)


def patch(kube, path, body):
    status, result, _ = kube.request("PATCH", path, body, content_type=MERGE_PATCH)
    assert status == 200, (path, status, result)
    return result


def annotations_of(kube, path):
    return kube.get(path)["metadata"].get("annotations") or {}


def apply_set(cluster, parent, namespace, objects, **extra):
    rc, result, output = module_run(cluster, "applyset_apply",
                                    {"parent": parent, "namespace": namespace, "definition": objects, **extra})
    assert rc == 0, output
    return result


def kubectl_apply(cluster, tmp_path, namespace, applyset, objects, binary="kubectl"):
    manifest = tmp_path / f"{applyset.replace('/', '-')}-{secrets.token_hex(2)}.yaml"
    manifest.write_text(yaml.safe_dump_all(objects))
    proc = subprocess.run([binary, "apply", "-n", namespace, "--server-side", "--prune", f"--applyset={applyset}",
                           "-f", str(manifest)], capture_output=True, text=True, timeout=60,
                          env=cluster.env(KUBECTL_APPLYSET="true"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture
def second_namespace(kube, namespace):
    name = f"{namespace[:50]}-b"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    kube.delete(f"/api/v1/namespaces/{name}")


# ----- applyset_info -----------------------------------------------------------------------------


@pytest.mark.skipif(not shutil.which("kubectl") or not os.path.exists(KUBECTL_1_28), reason="needs kubectl 1.28+")
def test_info_lists_sets_of_this_collection_and_of_kubectl(cluster, kube, core, namespace, tmp_path):
    apply_set(cluster, "ours", namespace, [config_map("ours-a"), service("ours-web", selector=True)])
    kubectl_apply(cluster, tmp_path, namespace, "configmaps/kset", [config_map("k-a"), config_map("k-b")])
    kubectl_apply(cluster, tmp_path, namespace, "legacy", [config_map("l-a"), service("l-web", selector=True)],
                  binary=KUBECTL_1_28)
    labelled = {spec.LABEL_PART_OF: spec.compute_id("ours", namespace, "Secret", "")}
    for path in (f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
                 f"/api/v1/namespaces/{namespace}/endpoints"):
        wait_for(lambda: any((item["metadata"].get("labels") or {}).items() >= labelled.items()
                             for item in kube.get(path)["items"]), timeout=30, what=f"labelled {path}")

    rc, result, output = module_run(cluster, "applyset_info", {"namespace": namespace, "member_count": True})
    assert rc == 0, output
    assert result["complete"] is True and result["changed"] is False
    listed = {(s["parent"]["kind"], s["parent"]["name"]): s for s in result["applysets"]}
    assert list(listed) == [("ConfigMap", "kset"), ("Secret", "legacy"), ("Secret", "ours")]  # sorted
    assert all(s["id_matches"] and s["id"] == s["expected_id"] for s in result["applysets"])
    assert [listed[k]["tool"] for k in listed] == ["kubectl", "kubectl", "applyset.kubernetes"]
    assert listed[("Secret", "legacy")]["tooling"].startswith("kubectl/v1.28.")
    assert listed[("Secret", "legacy")]["hint_annotation"] == spec.ANNOTATION_GROUP_RESOURCES
    assert listed[("Secret", "legacy")]["group_kinds"] == ["ConfigMap", "Service"]  # mapped from resources
    assert listed[("ConfigMap", "kset")]["group_kinds"] == ["ConfigMap"]
    assert [listed[k]["member_count"] for k in listed] == [2, 2, 2]
    assert all(s["namespaces"] == [namespace] for s in result["applysets"])

    rc, result, output = module_run(cluster, "applyset_info", {
        "parent": "legacy", "namespace": namespace, "full_objects": True,
        "query": "applysets[0].members[].[kind, name]"})
    assert rc == 0, output
    assert result["query_result"] == [["ConfigMap", "l-a"], ["Service", "l-web"]]
    [legacy] = result["applysets"]
    assert legacy["members"][0]["object"]["data"] == {"key": "l-a"}
    assert legacy["members"][1]["uid"] == kube.get(f"/api/v1/namespaces/{namespace}/services/l-web")["metadata"]["uid"]

    # All three verify; the legacy hint is the only remark, and it is a warning. The Endpoints and
    # EndpointSlices that carry the Services' labels are no leak: they go with their Service.
    report = verify(core, namespace=namespace)
    assert report.ok and report.complete and len(report.sets) == 3
    assert codes(report) == ["legacy_hint"]

    assert inventory.describe(core, parent_spec="nope", namespace=namespace, members=True).applysets == []
    rc, result, output = module_run(cluster, "applyset_info", {"namespace": namespace, "query": "applysets[?"})
    assert rc != 0 and "is not a valid JMESPath expression" in result["msg"], output


@pytest.mark.skipif(not os.path.exists(KUBECTL_1_28), reason="needs kubectl 1.28")
def test_fix_upgrades_a_kubectl_1_28_set_which_kubectl_then_prunes(cluster, kube, core, namespace, tmp_path):
    kubectl_apply(cluster, tmp_path, namespace, "legacy", [config_map("l-a"), service("l-web")], binary=KUBECTL_1_28)
    parent_path = f"/api/v1/namespaces/{namespace}/secrets/legacy"

    refused = verify(core, parent_spec="legacy", namespace=namespace, fix=True)
    assert "managed by kubectl" in refused.fixes[0].refused
    assert spec.ANNOTATION_GROUP_KINDS not in annotations_of(kube, parent_path)

    fixed = verify(core, parent_spec="legacy", namespace=namespace, fix=True, allow_foreign=True)
    assert fixed.ok and the_problem(fixed, "legacy_hint").fixed
    annotations = annotations_of(kube, parent_path)
    assert annotations[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Service"
    assert spec.ANNOTATION_GROUP_RESOURCES not in annotations  # kubectl-applyset owned it; as kubectl 1.29 does
    assert annotations[spec.ANNOTATION_TOOLING].startswith("kubectl/v1.28.")
    managers = {m["manager"] for m in kube.get(parent_path)["metadata"]["managedFields"]}
    assert managers == {"kubectl-applyset"}

    # Current kubectl accepts the repaired set and prunes through it.
    output = kubectl_apply(cluster, tmp_path, namespace, "legacy", [config_map("l-a")])
    assert "service/l-web pruned" in output
    assert verify(core, parent_spec="legacy", namespace=namespace).problems == []


def test_info_finds_custom_resource_parents_and_verify_reports_a_deleted_crd(cluster, kube, core, namespace,
                                                                             second_namespace):
    group = f"t{secrets.token_hex(3)}.example.com"
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}

    def crd(plural, kind, scope, labels=None):
        return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.{group}", "labels": labels or {}},
                "spec": {"group": group, "scope": scope, "names": {"plural": plural, "kind": kind},
                         "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}]}}

    kube.create(crds, crd("applysets", "ApplySet", "Cluster", {spec.LABEL_PARENT_TYPE: "true"}))
    kube.create(crds, crd("widgets", "Widget", "Namespaced"))
    parent_name = f"platform-{secrets.token_hex(3)}"
    try:
        for plural in ("applysets", "widgets"):
            wait_for(lambda: kube.request("GET", f"/apis/{group}/v1/{plural}")[0] == 200, timeout=30,
                     what=f"{plural}.{group} served")
        # Created by hand, with the metadata kubectl requires of a custom resource parent.
        kube.create(f"/apis/{group}/v1/applysets", {
            "apiVersion": f"{group}/v1", "kind": "ApplySet", "metadata": {
                "name": parent_name,
                "labels": {spec.LABEL_ID: spec.compute_id(parent_name, "", "ApplySet", group)},
                "annotations": {spec.ANNOTATION_TOOLING: OUR_TOOLING, spec.ANNOTATION_GROUP_KINDS: ""}}})
        apply_set(cluster, f"applysets.{group}/{parent_name}",
                  None, [config_map("one", namespace), config_map("two", second_namespace),
                         {"apiVersion": f"{group}/v1", "kind": "Widget",
                          "metadata": {"name": "w", "namespace": namespace}}])

        report = inventory.describe(core, member_count=True)
        [entry] = [s for s in report.applysets if s["parent"]["name"] == parent_name]
        assert entry["parent"] == {"apiVersion": f"{group}/v1", "kind": "ApplySet", "namespace": None,
                                   "name": parent_name}
        assert entry["group_kinds"] == ["ConfigMap", f"Widget.{group}"]
        assert entry["namespaces"] == sorted([namespace, second_namespace])
        assert entry["member_count"] == 3 and entry["tool"] == "applyset.kubernetes"
        # With a namespace, cluster-scoped parents are left out.
        assert not any(s["parent"]["name"] == parent_name for s in inventory.describe(core, namespace=namespace)
                       .applysets)

        parent_ref = f"applysets.{group}/{parent_name}"
        assert verify(core, parent_spec=parent_ref).problems == []
        kube.delete(f"{crds}/widgets.{group}")
        wait_for(lambda: "widgets" not in {r["name"] for r in kube.get(f"/apis/{group}/v1")["resources"]},
                 timeout=30, what="widgets no longer served")

        broken = verify(core, parent_spec=parent_ref)
        unserved = the_problem(broken, "unserved_group_kind")
        assert unserved.severity == "error" and unserved.fixable and f"Widget.{group}" in unserved.message
        assert not broken.ok

        repaired = verify(core, parent_spec=parent_ref, fix=True)
        assert repaired.ok and unserved.code in {p.code for p in repaired.problems if p.fixed}
        parent = kube.get(f"/apis/{group}/v1/applysets/{parent_name}")
        assert parent["metadata"]["annotations"][spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"
        assert verify(core, parent_spec=parent_ref).problems == []
    finally:
        kube.delete(f"/apis/{group}/v1/applysets/{parent_name}")
        kube.delete(f"{crds}/widgets.{group}")
        kube.delete(f"{crds}/applysets.{group}")


# ----- applyset_verify: problems of the parent ---------------------------------------------------


def test_info_verify_and_apply_read_both_hint_annotations_alike(cluster, kube, core, namespace):
    """One parent model (#12): a kubectl 1.27/1.28 set taken over by a tool that wrote only
    contains-group-kinds still carries contains-group-resources. applyset_apply prunes in the kinds of
    both; info shows that scope, and verify names the kinds only the legacy annotation adds (an error:
    kubectl 1.29+ would not look there)."""
    set_id = make_parent(kube, namespace, "both", tooling="kubectl/v1.28.15", kinds="Service")
    parent_path = f"/api/v1/namespaces/{namespace}/configmaps/both"
    patch(kube, parent_path, {"metadata": {"annotations": {spec.ANNOTATION_GROUP_RESOURCES: "configmaps,services"}}})
    member_of(kube, set_id, config_map("b-settings"), namespace)
    member_of(kube, set_id, service("b-web"), namespace)

    [info] = inventory.describe(core, parent_spec="configmaps/both", namespace=namespace).applysets
    assert info["group_kinds"] == ["ConfigMap", "Service"]
    assert info["hint_annotation"] == spec.ANNOTATION_GROUP_KINDS

    report = verify(core, parent_spec="configmaps/both", namespace=namespace)
    assert codes(report) == ["legacy_annotation"] and not report.ok
    legacy = the_problem(report, "legacy_annotation")
    assert legacy.severity == "error" and "names ConfigMap that" in legacy.message

    # The engine's scope is the same: taken over with only the Service desired, it prunes the ConfigMap.
    result = apply_set(cluster, "configmaps/both", namespace, [service("b-web")], takeover=True)
    assert {(o["kind"], o["name"]): o["action"] for o in result["objects"]}[("ConfigMap", "b-settings")] == "pruned"
    annotations = annotations_of(kube, parent_path)
    assert annotations[spec.ANNOTATION_GROUP_KINDS] == "Service"
    assert spec.ANNOTATION_GROUP_RESOURCES not in annotations
    assert verify(core, parent_spec="configmaps/both", namespace=namespace).ok


def test_verify_detects_forged_and_missing_ids_and_tooling(kube, core, namespace):
    victim = make_parent(kube, namespace, "victim", kinds="ConfigMap")
    member_of(kube, victim, config_map("victims-member"), namespace)
    make_parent(kube, namespace, "forger", kinds="ConfigMap", live_id=victim)
    make_parent(kube, namespace, "no-id", kinds="", live_id="")
    make_parent(kube, namespace, "no-tooling", tooling=None, kinds="")
    forger_path = f"/api/v1/namespaces/{namespace}/configmaps/forger"
    version_before = kube.get(forger_path)["metadata"]["resourceVersion"]

    forged = verify(core, parent_spec="configmaps/forger", namespace=namespace, fix=True)
    mismatch = the_problem(forged, "id_mismatch")
    assert mismatch.severity == "error" and not mismatch.fixable and victim in mismatch.message
    assert codes(forged) == ["id_mismatch"] and not forged.ok
    assert kube.get(forger_path)["metadata"]["resourceVersion"] == version_before  # never repaired

    assert codes(verify(core, parent_spec="configmaps/no-id", namespace=namespace)) == ["id_missing"]
    assert codes(verify(core, parent_spec="configmaps/no-tooling", namespace=namespace)) == ["tooling_missing"]
    # The parent without an id label is no set to a LIST by label; the other three are listed.
    assert [s.name for s in verify(core, namespace=namespace).sets] == ["forger", "no-tooling", "victim"]

    missing_hint = make_parent(kube, namespace, "no-hint")
    patch(kube, f"/api/v1/namespaces/{namespace}/configmaps/no-hint",
          {"metadata": {"annotations": {spec.ANNOTATION_GROUP_KINDS: None}}})
    member_of(kube, missing_hint, config_map("hinted"), namespace)
    report = verify(core, parent_spec="configmaps/no-hint", namespace=namespace, fix=True)
    assert codes(report) == ["hint_missing", "unrecorded_group_kind"] and report.ok
    assert annotations_of(kube, f"/api/v1/namespaces/{namespace}/configmaps/no-hint")[
        spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_verify_reports_stale_and_unsorted_hints_and_controlled_members(kube, core, namespace):
    applyset_id = make_parent(kube, namespace, "shop", kind="Secret", kinds="Secret,ConfigMap,Deployment.apps",
                              namespaces=f"{namespace},gone-{secrets.token_hex(3)}")
    member_of(kube, applyset_id, config_map("plain"), namespace)
    kube.create(f"/api/v1/namespaces/{namespace}/secrets",
                {"apiVersion": "v1", "kind": "Secret",
                 "metadata": {"name": "creds", "labels": {spec.LABEL_PART_OF: applyset_id}}})
    owner = kube.create(f"/api/v1/namespaces/{namespace}/configmaps", config_map("operator-cr"))
    member_of(kube, applyset_id, config_map("copied-label", ownerReferences=[{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "operator-cr", "uid": owner["metadata"]["uid"],
        "controller": True}]), namespace)

    report = verify(core, parent_spec="shop", namespace=namespace)
    assert codes(report) == ["foreign_controller", "hint_not_canonical", "stale_group_kind", "stale_namespace"]
    assert all(p.severity == "warning" for p in report.problems) and report.ok
    assert [o["name"] for o in the_problem(report, "foreign_controller").objects] == ["copied-label"]
    assert "Deployment.apps" in the_problem(report, "stale_group_kind").message

    repaired = verify(core, parent_spec="shop", namespace=namespace, fix=True)
    assert [p.code for p in repaired.problems if not p.fixed] == ["foreign_controller"]
    annotations = annotations_of(kube, f"/api/v1/namespaces/{namespace}/secrets/shop")
    assert annotations[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Secret"
    assert annotations[spec.ANNOTATION_ADDITIONAL_NAMESPACES] == ""
    assert codes(verify(core, parent_spec="shop", namespace=namespace)) == ["foreign_controller"]


def test_verify_reports_orphans_and_a_missing_parent(kube, core, namespace):
    deleted_id = spec.compute_id("deleted", namespace, "Secret", "")
    member_of(kube, deleted_id, config_map("left-behind"), namespace)

    missing = verify(core, parent_spec="deleted", namespace=namespace)
    problem = the_problem(missing, "parent_missing")
    assert problem.severity == "error" and [o["name"] for o in problem.objects] == ["left-behind"]

    everything = verify(core, namespace=namespace)
    orphan = the_problem(everything, "orphan")
    assert orphan.applyset_id == deleted_id and orphan.parent is None and not orphan.fixable
    assert orphan.objects == [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": namespace,
                               "name": "left-behind"}]


# ----- applyset_verify: leaks, the repair, and the next prune -------------------------------------


def test_verify_finds_leaks_and_after_the_fix_apply_prunes_them(cluster, kube, namespace, second_namespace,
                                                                 tmp_path):
    # The set as applyset_apply leaves it (made by hand: the test is about what comes next).
    applyset_id = make_parent(kube, namespace, "shop", kind="Secret", kinds="ConfigMap")
    parent_path = f"/api/v1/namespaces/{namespace}/secrets/shop"
    member_of(kube, applyset_id, config_map("keep"), namespace)
    member_of(kube, applyset_id, config_map("drop"), namespace)
    member_of(kube, applyset_id, service("stray-kind"), namespace)
    member_of(kube, applyset_id, config_map("stray-namespace"), second_namespace)
    before = annotations_of(kube, parent_path)

    out = tmp_path / "results.json"
    playbook = tmp_path / "verify.yml"
    verify_args = {"parent": "shop", "namespace": namespace}
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [
            {"name": "Verify without repair", "register": "found", "applyset.kubernetes.applyset_verify": {
                **verify_args, "fail_on_problems": False}},
            {"name": "Verify fails by default", "register": "failed_run", "ignore_errors": True,
             "applyset.kubernetes.applyset_verify": verify_args},
            {"name": "Preview the repair", "register": "preview", "check_mode": True, "diff": True,
             "applyset.kubernetes.applyset_verify": {**verify_args, "fix": True}},
            {"name": "Repair", "register": "repaired", "applyset.kubernetes.applyset_verify": {
                **verify_args, "fix": True}},
            {"name": "Members now", "register": "info", "applyset.kubernetes.applyset_info": {
                **verify_args, "query": "applysets[0].members[].name"}},
            {"ansible.builtin.copy": {"dest": str(out), "content": "{{ {'found': found, 'failed': failed_run, "
                                      "'preview': preview, 'repaired': repaired, 'info': info} | to_json }}"}},
        ]}]))
    proc = run_playbook(cluster, playbook, env=ansible_env(cluster))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(out.read_text())

    found = results["found"]
    assert found["ok"] is False and found["changed"] is False
    leaks = {p["code"]: p for p in found["problems"]}
    assert sorted(leaks) == ["unrecorded_group_kind", "unrecorded_namespace"]
    assert leaks["unrecorded_group_kind"]["objects"] == [
        {"apiVersion": "v1", "kind": "Service", "namespace": namespace, "name": "stray-kind"}]
    assert leaks["unrecorded_namespace"]["objects"][0]["namespace"] == second_namespace
    assert found["fixes"][0]["after"] == {spec.ANNOTATION_GROUP_KINDS: "ConfigMap,Service",
                                          spec.ANNOTATION_ADDITIONAL_NAMESPACES: second_namespace}
    assert results["failed"]["failed"] is True and "unrecorded_group_kind" in results["failed"]["msg"]
    assert results["preview"]["changed"] is True and results["preview"]["ok"] is True
    assert "+applyset.kubernetes.io/contains-group-kinds: ConfigMap,Service" in proc.stdout  # the --diff
    assert results["repaired"]["changed"] is True and results["repaired"]["summary"]["fixed"] == 2
    # The check-mode preview wrote nothing; the repair wrote exactly what was planned.
    assert results["info"]["query_result"] == ["drop", "keep", "stray-namespace", "stray-kind"]  # by kind
    after = annotations_of(kube, parent_path)
    assert before != after
    assert after[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Service"
    assert after[spec.ANNOTATION_ADDITIONAL_NAMESPACES] == second_namespace

    # The next deploy now sees the leaked objects, and prunes them with the dropped one.
    result = apply_set(cluster, "shop", namespace, [config_map("keep")], guard={"max_prune_percent": 100})
    pruned = sorted((o["kind"], o["namespace"], o["name"]) for o in result["objects"] if o["action"] == "pruned")
    assert pruned == sorted([("ConfigMap", namespace, "drop"), ("Service", namespace, "stray-kind"),
                             ("ConfigMap", second_namespace, "stray-namespace")])
    assert kube.get(f"/api/v1/namespaces/{namespace}/services/stray-kind") is None
    rc, result, output = module_run(cluster, "applyset_verify", verify_args)
    assert rc == 0 and result["ok"] and result["problems"] == [], output


# ----- RBAC: an incomplete check is never ok -------------------------------------------------------


def _ca_file(cluster, tmp_path) -> str:
    if cluster.local is not None:
        return str(cluster.local.state_dir / "pki" / "ca.crt")
    config = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    entry = config["clusters"][0]["cluster"]
    if entry.get("certificate-authority"):
        return entry["certificate-authority"]
    if not entry.get("certificate-authority-data"):
        pytest.skip("the kubeconfig names no CA certificate")
    path = tmp_path / "ca.crt"
    path.write_bytes(base64.b64decode(entry["certificate-authority-data"]))
    return str(path)


@pytest.fixture
def limited_user(kube, namespace):
    """A ServiceAccount that may list ConfigMaps, Secrets and CRDs cluster-wide, and nothing else."""
    name = f"auditor-{secrets.token_hex(3)}"
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    kube.create(f"{rbac}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list"]},
                  {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                   "verbs": ["get", "list"]}]})
    kube.create(f"{rbac}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]})
    token = kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}})
    try:
        yield token["status"]["token"]
    finally:
        kube.delete(f"{rbac}/clusterrolebindings/{name}")
        kube.delete(f"{rbac}/clusterroles/{name}")


def test_a_user_who_cannot_list_every_kind_gets_an_incomplete_check(cluster, kube, namespace, limited_user,
                                                                      tmp_path):
    applyset_id = make_parent(kube, namespace, "shop", kind="Secret", kinds="ConfigMap,Service")
    member_of(kube, applyset_id, config_map("settings"), namespace)
    member_of(kube, applyset_id, service("web"), namespace)
    auth = {"host": kube.host, "api_key": limited_user, "ca_cert": _ca_file(cluster, tmp_path)}
    env = ansible_env(cluster)
    env.pop("KUBECONFIG")  # only the token speaks
    args = {"parent": "shop", "namespace": namespace, **auth}

    rc, result, output = module_run(cluster, "applyset_verify", {**args, "fail_on_problems": False}, env=env)
    assert rc == 0, output
    assert result["complete"] is False and result["ok"] is False
    unlisted = {u["group_kind"] for u in result["unlisted"]}
    assert "Service" in unlisted and "ConfigMap" not in unlisted
    assert all("403" in u["reason"] for u in result["unlisted"])
    # Service is recorded, refused across all namespaces and in the set's namespace: incomplete, never called
    # stale; the kinds refused outside the set's scope only reduce the coverage.
    assert [p["code"] for p in result["problems"]] == ["incomplete_scan", "reduced_coverage"]
    assert [(u["group_kind"], u["namespace"]) for u in result["unlisted"]] == [("Service", namespace)]
    assert result["fixes"] == [] and result["applysets"][0]["ok"] is False

    rc, result, output = module_run(cluster, "applyset_verify", args, env=env)
    assert rc != 0 and "incomplete_scan" in result["msg"], output

    rc, result, output = module_run(cluster, "applyset_info", args, env=env)
    assert rc == 0, output
    assert result["complete"] is False
    assert [m["name"] for m in result["applysets"][0]["members"]] == ["settings"]
    assert result["unlisted"] == [{"group_kind": "Service", "namespace": namespace,
                                   "reason": result["unlisted"][0]["reason"]}]


# ----- a kind deleted during the scan (issue 10 point 5) -------------------------------------------


def test_a_crd_deleted_during_the_scan_leaves_the_scan_complete(cluster, kube, core, namespace):
    from test_apply import crd, delete_crd

    group = f"t{secrets.token_hex(3)}.example.com"
    kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd(group))
    try:
        wait_for(lambda: kube.request("GET", f"/apis/{group}/v1")[0] == 200, timeout=30, what="CRD served")
        discovery = core.discover()
        assert discovery.for_group_kind(spec.GroupKind(group, "Widget")) is not None
        real_list = core.list

        def list_after_deleting_the_crd(res, namespace=None, **kwargs):
            if res.group == group:  # the CRD goes away between discovery and this LIST
                delete_crd(kube, f"widgets.{group}")
                wait_for(lambda: kube.request("GET", f"/apis/{group}/v1/widgets")[0] == 404, timeout=30,
                         what="widgets gone")
            return real_list(res, namespace, **kwargs)

        core_for_scan = core_kube.connect({"kubeconfig": cluster.kubeconfig})
        core_for_scan.list = list_after_deleting_the_crd
        found = fsck_scan.scan(core_for_scan, discovery)
        assert found.unlisted == [], found.unlisted
        assert spec.GroupKind(group, "Widget") in found.listed
    finally:
        delete_crd(kube, f"widgets.{group}")
