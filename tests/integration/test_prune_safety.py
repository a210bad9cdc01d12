"""Prune safety to kubectl's letter (issue 17), against the real control plane.

- nothing this run applied is pruned, whatever group it was listed under (kubectl's visitedUids);
- a recorded kind that is not served right now stays in the hint until it provably holds nothing;
- the prune scope is the hint as recorded before the run;
- takeovers drop the legacy annotation, adopt takes only the part-of label, tooling is reported.
"""

from __future__ import annotations

import secrets
import subprocess

import yaml
from ansible_cli import ansible_env
from module_runner import module_run
from kubeapi import wait_for
from test_apply import KINDS, PART_OF, TOOLING, actions, apply, cm, crd, delete_crd, hints

LEGACY = "applyset.kubernetes.io/contains-group-resources"


def merge_patch(kube, path, patch):
    status, body, _ = kube.request("PATCH", path, patch, content_type="application/merge-patch+json")
    assert status == 200, (status, body)
    return body


def event_new(name, namespace):
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": "2026-11-23T10:00:00.000000Z", "reportingController": "example.com/test",
            "reportingInstance": "test-1", "action": "Testing", "reason": "Tested", "type": "Normal",
            "regarding": {"kind": "ConfigMap", "name": "plain", "namespace": namespace, "apiVersion": "v1"},
            "note": "first seen through events.k8s.io"}


def event_core(name, namespace):
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"kind": "ConfigMap", "name": "plain", "namespace": namespace, "apiVersion": "v1"},
            "reason": "Tested", "message": "now through v1", "type": "Normal",
            "eventTime": "2026-11-23T10:00:00.000000Z", "reportingComponent": "example.com/test",
            "reportingInstance": "test-1", "action": "Testing", "source": {}}


def event_uid(kube, namespace, name):
    found = kube.get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}")
    return found and found["metadata"]["uid"]


# ----- 1. the UID filter ----------------------------------------------------------------------------


def test_an_object_served_under_two_groups_is_never_pruned_by_the_run_that_applied_it(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [event_new("ev1", namespace), cm("plain")])
    assert rc == 0, out
    uid = event_uid(kube, namespace, "ev1")
    assert hints(kube, namespace)[1][KINDS] == "ConfigMap,Event.events.k8s.io"

    rc, result, out = apply(cluster, namespace, [event_core("ev1", namespace), cm("plain")])
    assert rc == 0, out
    assert [o["action"] for o in result["objects"] if o["kind"] == "Event"] == ["configured"], result["objects"]
    assert result["summary"]["pruned"] == 0
    assert event_uid(kube, namespace, "ev1") == uid  # still there, the same object
    assert hints(kube, namespace)[1][KINDS] == "ConfigMap,Event"


def test_taking_over_a_kubectl_hint_that_lists_both_groups_prunes_nothing_it_applies(
        cluster, kube, namespace, tmp_path):
    manifest = tmp_path / "set.yaml"
    manifest.write_text(yaml.safe_dump_all([event_new("ev1", namespace), cm("plain")]))
    proc = subprocess.run(
        ["kubectl", "apply", "-n", namespace, "--server-side", "--prune", "--applyset=kset", "-f", str(manifest)],
        capture_output=True, text=True, env=ansible_env(cluster, KUBECTL_APPLYSET="true"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    # The superset an interrupted kubectl run leaves when the set moves between the groups.
    merge_patch(kube, f"/api/v1/namespaces/{namespace}/secrets/kset",
                {"metadata": {"annotations": {KINDS: "ConfigMap,Event,Event.events.k8s.io"}}})
    uid = event_uid(kube, namespace, "ev1")

    rc, result, out = apply(cluster, namespace, [event_core("ev1", namespace), cm("plain")], parent="kset",
                            takeover=True)
    assert rc == 0, out
    assert result["summary"]["pruned"] == 0, result["objects"]
    assert event_uid(kube, namespace, "ev1") == uid
    annotations = hints(kube, namespace, "kset")[1]
    assert annotations[KINDS] == "ConfigMap,Event"
    assert result["applyset"]["tooling"] == annotations[TOOLING] == "applyset.kubernetes/0.1.0"


# ----- 2. kinds that are not served right now ---------------------------------------------------------


def widget(group, name):
    return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": 1}}


def set_served(kube, group, served):
    merge_patch(kube, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}",
                {"spec": {"versions": [{"name": "v1", "served": served, "storage": True,
                                        "schema": {"openAPIV3Schema": {
                                            "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
    wait_for(lambda: (kube.request("GET", f"/apis/{group}/v1")[0] == 200) == served, timeout=30,
             what=f"{group}/v1 served={served}")


def widget_names(kube, group, namespace):
    set_served(kube, group, True)
    return sorted(w["metadata"]["name"] for w in kube.get(f"/apis/{group}/v1/namespaces/{namespace}/widgets")["items"])


def test_a_kind_whose_crd_serves_no_version_stays_recorded_and_its_members_are_pruned_later(
        cluster, kube, namespace):
    group = f"t{secrets.token_hex(3)}.example.com"
    kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd(group))
    try:
        wait_for(lambda: kube.request("GET", f"/apis/{group}/v1")[0] == 200, timeout=30, what="CRD served")
        rc, result, out = apply(cluster, namespace, [cm("plain"), widget(group, "w1"), widget(group, "w2")])
        assert rc == 0, out
        set_served(kube, group, False)

        rc, result, out = apply(cluster, namespace, [cm("plain")], guard={"max_prune_percent": 100})
        assert rc == 0, out
        assert "does not serve right now" in out and "serves no version" in out, out
        assert hints(kube, namespace)[1][KINDS] == f"ConfigMap,Widget.{group}"

        # applyset_verify reports it and a repair keeps it.
        rc, verified, out = module_run(cluster, "applyset_verify",
                                       {"parent": "set1", "namespace": namespace, "fix": True,
                                        "fail_on_problems": False})
        assert rc == 0, out
        assert "unlistable_group_kind" in [p["code"] for p in verified["problems"]], verified["problems"]
        assert hints(kube, namespace)[1][KINDS] == f"ConfigMap,Widget.{group}"

        assert widget_names(kube, group, namespace) == ["w1", "w2"]  # served again
        rc, result, out = apply(cluster, namespace, [cm("plain")], guard={"max_prune_percent": 100})
        assert rc == 0, out
        assert sorted(o["name"] for o in result["objects"] if o["action"] == "pruned") == ["w1", "w2"]
        assert hints(kube, namespace)[1][KINDS] == "ConfigMap"
    finally:
        delete_crd(kube, f"widgets.{group}")


def test_removing_a_set_with_a_kind_that_cannot_be_listed_is_refused(cluster, kube, namespace):
    group = f"t{secrets.token_hex(3)}.example.com"
    kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd(group))
    try:
        wait_for(lambda: kube.request("GET", f"/apis/{group}/v1")[0] == 200, timeout=30, what="CRD served")
        rc, result, out = apply(cluster, namespace, [cm("plain"), widget(group, "w1")])
        assert rc == 0, out
        set_served(kube, group, False)
        rc, result, out = apply(cluster, namespace, [], state="absent")
        assert rc != 0
        assert "cannot be listed" in result["msg"] and "nothing was changed" in result["msg"], result["msg"]
        assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1") is not None
        assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/plain") is not None
    finally:
        delete_crd(kube, f"widgets.{group}")


def aggregated_api(kube, group, namespace):
    """An APIService whose backend does not exist: discovery marks its group stale."""
    name = f"v1.{group}"
    kube.create("/apis/apiregistration.k8s.io/v1/apiservices", {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
        "spec": {"group": group, "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10,
                 "insecureSkipTLSVerify": True, "service": {"namespace": namespace, "name": "nobody-home"}}})
    return name


def test_a_kind_of_an_unavailable_aggregated_api_stays_recorded_and_verify_keeps_it(cluster, kube, namespace):
    group = f"agg{secrets.token_hex(3)}.example.com"
    apiservice = aggregated_api(kube, group, namespace)
    try:
        rc, result, out = apply(cluster, namespace, [cm("plain"), cm("other")])
        assert rc == 0, out
        merge_patch(kube, f"/api/v1/namespaces/{namespace}/secrets/set1",
                    {"metadata": {"annotations": {KINDS: f"ConfigMap,Thing.{group}"}}})
        rc, result, out = apply(cluster, namespace, [cm("plain")], guard={"max_prune_percent": 100})
        assert rc == 0, out
        assert f"APIService {apiservice} serves its group" in out, out
        assert actions(result)["ConfigMap/other"] == "pruned"
        assert hints(kube, namespace)[1][KINDS] == f"ConfigMap,Thing.{group}"
    finally:
        kube.delete(f"/apis/apiregistration.k8s.io/v1/apiservices/{apiservice}")


def test_a_legacy_entry_of_an_unavailable_api_refuses_the_takeover_and_changes_nothing(cluster, kube, namespace):
    group = f"agg{secrets.token_hex(3)}.example.com"
    apiservice = aggregated_api(kube, group, namespace)
    try:
        kube.create(f"/api/v1/namespaces/{namespace}/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kset", "labels": {"applyset.kubernetes.io/id": _kubectl_id("kset", namespace)},
                         "annotations": {TOOLING: "kubectl/v1.28.15", LEGACY: f"configmaps,things.{group}"}}})
        before = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/kset")["metadata"]["resourceVersion"]
        rc, result, out = apply(cluster, namespace, [cm("plain")], parent="configmaps/kset", takeover=True)
        assert rc != 0
        assert f"things.{group}" in result["msg"] and "its kind cannot be known" in result["msg"], result["msg"]
        after = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/kset")["metadata"]["resourceVersion"]
        assert after == before
        assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/plain") is None
    finally:
        kube.delete(f"/apis/apiregistration.k8s.io/v1/apiservices/{apiservice}")


def _kubectl_id(name, namespace, kind="ConfigMap", group=""):
    from applyset_ids import expected_id
    return expected_id(name, namespace, kind, group)


# ----- 3. the prune scope is the hint recorded before the run ------------------------------------------


def test_hand_labelled_objects_of_a_new_kind_or_namespace_are_not_pruned_by_the_run_that_adds_it(
        cluster, kube, namespace):
    other = f"{namespace}-b"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        rc, result, out = apply(cluster, namespace, [cm("plain")])
        assert rc == 0, out
        set_id = result["applyset"]["id"]
        kube.create(f"/api/v1/namespaces/{namespace}/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "stray", "labels": {PART_OF: set_id}},
            "spec": {"ports": [{"port": 80}]}})
        kube.create(f"/api/v1/namespaces/{other}/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "stray", "labels": {PART_OF: set_id}}})
        web = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
        rc, result, out = apply(cluster, namespace, [cm("plain"), web, cm("there", other)],
                                guard={"max_prune_percent": 100})
        assert rc == 0, out
        assert result["summary"]["pruned"] == 0, result["objects"]
        assert kube.get(f"/api/v1/namespaces/{namespace}/services/stray") is not None
        assert kube.get(f"/api/v1/namespaces/{other}/configmaps/stray") is not None

        # Now recorded: the next run prunes them, as kubectl does.
        rc, result, out = apply(cluster, namespace, [cm("plain"), web, cm("there", other)],
                                guard={"max_prune_percent": 100})
        assert rc == 0, out
        assert sorted(f"{o['kind']}/{o['namespace']}/{o['name']}" for o in result["objects"]
                      if o["action"] == "pruned") == [f"ConfigMap/{other}/stray", f"Service/{namespace}/stray"]
    finally:
        kube.delete(f"/api/v1/namespaces/{other}")


# ----- 4. takeovers, adopt and the reported tooling ----------------------------------------------------


def test_taking_over_a_kubectl_1_28_set_drops_the_legacy_annotation(cluster, kube, namespace, tmp_path):
    manifest = tmp_path / "cms.yaml"
    manifest.write_text(yaml.safe_dump_all([cm("k1"), cm("k2")]))
    proc = subprocess.run(
        ["/usr/lib/google-cloud-sdk/bin/kubectl.1.28", "apply", "-n", namespace, "--server-side", "--prune",
         "--applyset=kset", "-f", str(manifest)],
        capture_output=True, text=True, env=ansible_env(cluster, KUBECTL_APPLYSET="true"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    annotations = hints(kube, namespace, "kset")[1]
    assert annotations[LEGACY] == "configmaps" and KINDS not in annotations

    rc, result, out = apply(cluster, namespace, [cm("k1")], parent="kset", takeover=True)
    assert rc == 0, out
    assert actions(result)["ConfigMap/k2"] == "pruned"
    annotations = hints(kube, namespace, "kset")[1]
    assert LEGACY not in annotations and annotations[KINDS] == "ConfigMap"
    assert result["applyset"]["tooling"] == "applyset.kubernetes/0.1.0"


def test_verify_reports_a_legacy_annotation_left_beside_the_kinds_and_fix_removes_it(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [cm("plain")])
    assert rc == 0, out
    kube.apply(f"/api/v1/namespaces/{namespace}/secrets/set1",
               {"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "set1", "annotations": {LEGACY: "configmaps"}}},
               field_manager="kubectl-applyset")
    rc, verified, out = module_run(cluster, "applyset_verify", {"parent": "set1", "namespace": namespace,
                                                                "fail_on_problems": False})
    assert [p["code"] for p in verified["problems"]] == ["legacy_annotation"], verified["problems"]
    rc, verified, out = module_run(cluster, "applyset_verify", {"parent": "set1", "namespace": namespace,
                                                                "fix": True})
    assert rc == 0, out
    assert LEGACY not in hints(kube, namespace)[1]


def test_adopt_takes_the_part_of_label_from_a_kubectl_set_without_force_conflicts(
        cluster, kube, namespace, tmp_path):
    manifest = tmp_path / "cms.yaml"
    manifest.write_text(yaml.safe_dump_all([cm("k1", data="from-kubectl")]))
    proc = subprocess.run(
        ["kubectl", "apply", "-n", namespace, "--server-side", "--prune", "--applyset=kset", "-f", str(manifest)],
        capture_output=True, text=True, env=ansible_env(cluster, KUBECTL_APPLYSET="true"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    other_id = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/k1")["metadata"]["labels"][PART_OF]

    # Preview first: nothing changes, and the preview says it would succeed.
    rc, result, out = apply(cluster, namespace, [cm("k1", data="from-kubectl")], adopt=True, check=True)
    assert rc == 0, out
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/k1")["metadata"]["labels"][PART_OF] == other_id

    rc, result, out = apply(cluster, namespace, [cm("k1", data="from-kubectl")], adopt=True)
    assert rc == 0, out
    live = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/k1")
    assert live["metadata"]["labels"][PART_OF] == result["applyset"]["id"] != other_id
    assert result["applyset"]["tooling"] == "applyset.kubernetes/0.1.0"

    # A conflict on any other field still needs force_conflicts.
    rc, result, out = apply(cluster, namespace, [cm("k1", data="changed")], parent="set2", adopt=True)
    assert rc != 0 and "conflict" in out.lower()

