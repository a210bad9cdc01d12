"""The fast path (issue 11): a re-run writes only what differs, and never reports a false "unchanged".

Every case of issue 11 point 2, against the real control plane, through the module as users run it:
its own code, in a fork of a warm process (``module_runner``); a run whose diff the test reads goes
through the ``ansible`` command, which prints it.
A member may be skipped only when the live object provably holds what we would apply; each test
below changes the live object (or the request) in one way that must cost a write, and checks the
outcome against the old behaviour (``reapply: always``) on an identical setup where it matters.

Drift is made with kubectl itself (edit, patch, label, annotate, scale, a forced server-side apply)
and with plain requests through the independent test client. Assertions read the cluster through
that client, never through the product's HTTP layer.
"""

from __future__ import annotations

import base64
import glob
import json
import re
import subprocess
import threading
import time

import pytest
import yaml
from ansible_cli import ansible_env
from module_runner import module_run
from faultproxy import FaultProxy
from mutating_webhook import MUTATED, SELECT_LABEL, MutatingWebhook

PART_OF = "applyset.kubernetes.io/part-of"
DIGEST = "applyset.kubernetes.ansible/applied-digest"
MANAGER = "applyset.kubernetes"
KINDS = "applyset.kubernetes.io/contains-group-kinds"
CLAIM = "applyset.kubernetes.ansible/lock"  # the claim's key on the wire


def _kubectl_binary() -> str:
    """The newest versioned kubectl (the API server is 1.34); the one on PATH otherwise."""
    versioned = glob.glob("/usr/lib/google-cloud-sdk/bin/kubectl.1.*")
    if not versioned:
        return "kubectl"
    return max(versioned, key=lambda path: int(re.sub(r".*kubectl\.1\.", "", path) or 0))


KUBECTL = _kubectl_binary()


def kubectl(cluster, *args, stdin: str | None = None, **env):
    proc = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, timeout=120,
                          env=ansible_env(cluster, **env))
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc.stdout


# ----- manifests and reading the cluster ----------------------------------------------------------


def cm(name, value="ours-1", labels=None, annotations=None, **data):
    """A ConfigMap whose every field we set can be drifted: a label, an annotation, data."""
    meta = {"name": name,
            "labels": {"tier": "web"} if labels is None else labels,
            "annotations": {"note": "ours"} if annotations is None else annotations}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"v": value}}


def deployment(name, replicas=2, resources=None, **pod_spec):
    container = {"name": "app", "image": "registry.k8s.io/pause:3.10"}
    if resources is not None:
        container["resources"] = resources
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container], **pod_spec}},
        },
    }


def apply(cluster, namespace, definition, parent="set1", check=False, diff=False, **options):
    args = {"parent": parent, "namespace": namespace, "definition": definition, **options}
    return module_run(cluster, "applyset_apply", args, check=check, diff=diff)


def applied(cluster, namespace, definition, **options):
    rc, result, out = apply(cluster, namespace, definition, **options)
    assert rc == 0, out
    return result


def actions(result):
    return {o["name"]: o["action"] for o in result["objects"]}


def writes(result) -> int:
    return result["requests"]["writes"]


def cm_path(namespace, name=""):
    return f"/api/v1/namespaces/{namespace}/configmaps" + (f"/{name}" if name else "")


def deploy_path(namespace, name=""):
    return f"/apis/apps/v1/namespaces/{namespace}/deployments" + (f"/{name}" if name else "")


def secret_path(namespace, name=""):
    return f"/api/v1/namespaces/{namespace}/secrets" + (f"/{name}" if name else "")


def versions(kube, namespace):
    """name -> resourceVersion of every ConfigMap, Deployment and Secret of the test (the parent included)."""
    state = {}
    for path in (cm_path(namespace), deploy_path(namespace), secret_path(namespace)):
        plural = path.rsplit("/", 1)[1]
        for item in kube.get(path)["items"]:
            state[f"{plural}/{item['metadata']['name']}"] = item["metadata"]["resourceVersion"]
    state.pop("configmaps/kube-root-ca.crt", None)
    return state


def parent_version(kube, namespace, parent="set1"):
    return kube.get(secret_path(namespace, parent))["metadata"]["resourceVersion"]


def our_apply_entry(obj, manager=MANAGER):
    return [e for e in obj["metadata"].get("managedFields") or []
            if e.get("manager") == manager and e.get("operation") == "Apply"]


def assert_noop(result, count):
    assert result["changed"] is False, result
    assert set(actions(result).values()) == {"unchanged"} and len(result["objects"]) == count, actions(result)
    assert writes(result) == 0, result["requests"]


def merge_patch(kube, path, body, manager="other-client"):
    status, payload, _ = kube.request("PATCH", path, body, query={"fieldManager": manager},
                                      content_type="application/merge-patch+json")
    assert status == 200, payload
    return payload


# ----- the no-op re-run -----------------------------------------------------------------------------


def test_noop_rerun_writes_nothing_and_always_patches_every_member(cluster, kube, namespace):
    members = [cm("a"), cm("b"), cm("c")]
    first = applied(cluster, namespace, members)
    assert set(actions(first).values()) == {"created"}
    for name in ("a", "b", "c"):
        live = kube.get(cm_path(namespace, name))
        assert DIGEST in live["metadata"]["annotations"], live["metadata"]
        assert our_apply_entry(live)
    before = versions(kube, namespace)

    result = applied(cluster, namespace, members)
    assert_noop(result, 3)
    assert result["requests"]["sent"] > 0
    # No claim either: the parent and every member keep their resourceVersion.
    assert versions(kube, namespace) == before

    proxy = RecordingProxy(cluster.kubeconfig)
    try:
        rc, result, out = module_run(cluster, "applyset_apply", {
            "parent": "set1", "namespace": namespace, "definition": members, "reapply": "always", "host": proxy.url})
    finally:
        proxy.close()
    assert rc == 0, out
    assert result["changed"] is False and set(actions(result).values()) == {"unchanged"}, result
    # One server-side apply PATCH per member, and the claim's two writes of the parent.
    assert sorted(proxy.writes) == sorted([f"PATCH {cm_path(namespace, n)}" for n in ("a", "b", "c")]
                                          + [f"PATCH {secret_path(namespace, 'set1')}"] * 2), proxy.writes
    assert writes(result) == 5, result["requests"]
    after = versions(kube, namespace)
    assert {k: v for k, v in after.items() if k != "secrets/set1"} == \
        {k: v for k, v in before.items() if k != "secrets/set1"}


# ----- a field dropped from the manifest --------------------------------------------------------------


def test_a_field_dropped_from_the_manifest_is_removed(cluster, kube, namespace):
    applied(cluster, namespace, [cm("drop", labels={"tier": "web", "extra": "x"}, a="1", b="2"), cm("keep")])
    keep_version = kube.get(cm_path(namespace, "keep"))["metadata"]["resourceVersion"]

    result = applied(cluster, namespace, [cm("drop", labels={"tier": "web"}, a="1"), cm("keep")])
    assert actions(result) == {"drop": "configured", "keep": "unchanged"}
    assert writes(result) >= 1
    live = kube.get(cm_path(namespace, "drop"))
    assert live["data"] == {"a": "1"}
    assert "extra" not in live["metadata"]["labels"]
    assert kube.get(cm_path(namespace, "keep"))["metadata"]["resourceVersion"] == keep_version

    # Dropping the last key of a map we set (the annotations we gave) removes it too.
    result = applied(cluster, namespace, [cm("drop", labels={"tier": "web"}, annotations={}, a="1"), cm("keep")])
    assert actions(result)["drop"] == "configured"
    assert "note" not in (kube.get(cm_path(namespace, "drop"))["metadata"].get("annotations") or {})


# ----- drift of a field we set ----------------------------------------------------------------------------

# name -> (how the live object drifts, the field that conflicts when force_conflicts is off, or None)
CM_DRIFTS = {
    "edit": ".data.v",
    "patch": ".data.v",
    "label": ".metadata.labels.tier",
    "annotate": ".metadata.annotations.note",
    "merge-patch": ".data.v",
    "forced-apply": ".data.v",
    "other-update": ".data.v",   # stands in for a mutating webhook: another manager changes our value
    "label-removed": None,       # nobody owns the label any more: restored without a conflict
}


def drift_configmap(cluster, kube, namespace, name, tmp_path):
    path = cm_path(namespace, name)
    if name == "edit":
        # kubectl edit with an editor that rewrites our value (sed -i on the file kubectl opens).
        kubectl(cluster, "-n", namespace, "edit", f"configmap/{name}", KUBE_EDITOR="sed -i s/ours-1/drift-1/")
    elif name == "patch":
        kubectl(cluster, "-n", namespace, "patch", f"configmap/{name}", "--type=merge", "-p",
                json.dumps({"data": {"v": "drift-1"}}))
    elif name == "label":
        kubectl(cluster, "-n", namespace, "label", "--overwrite", f"configmap/{name}", "tier=drift")
    elif name == "annotate":
        kubectl(cluster, "-n", namespace, "annotate", "--overwrite", f"configmap/{name}", "note=drift")
    elif name == "merge-patch":
        merge_patch(kube, path, {"data": {"v": "drift-1"}})
    elif name == "forced-apply":
        manifest = tmp_path / f"{namespace}-{name}.yaml"
        manifest.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": name}, "data": {"v": "drift-1"}}))
        kubectl(cluster, "-n", namespace, "apply", "--server-side", "--force-conflicts",
                "--field-manager=other", "-f", str(manifest))
    elif name == "other-update":
        live = kube.get(path)
        live["data"]["v"] = "drift-1"
        status, payload, _ = kube.request("PUT", path, live, query={"fieldManager": "mutator"})
        assert status == 200, payload
    elif name == "label-removed":
        kubectl(cluster, "-n", namespace, "label", f"configmap/{name}", "tier-")
    else:
        raise AssertionError(name)


def comparable(result, namespace):
    """Per member: its action, its reason and the conflicting fields, with the namespace made neutral."""
    return {o["name"]: (o["action"], (o.get("reason") or "").replace(namespace, "NS"),
                        ((o.get("error") or {}).get("conflicting_fields")))
            for o in result["objects"]}


def test_drift_of_fields_we_set_conflicts_exactly_as_always_then_force_restores(cluster, kube, namespace, tmp_path):
    other = f"{namespace}-always"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        members = [cm(name) for name in CM_DRIFTS]
        for ns in (namespace, other):
            applied(cluster, ns, members)
            for name in CM_DRIFTS:
                drift_configmap(cluster, kube, ns, name, tmp_path)
        drifted = {name: kube.get(cm_path(namespace, name)) for name in CM_DRIFTS}
        assert drifted["edit"]["data"]["v"] == "drift-1"
        assert "tier" not in drifted["label-removed"]["metadata"]["labels"]

        rc_fast, fast, out_fast = apply(cluster, namespace, members)
        rc_always, always, out_always = apply(cluster, other, members, reapply="always")
        assert rc_fast != 0 and rc_always != 0, (out_fast, out_always)
        assert comparable(fast, namespace) == comparable(always, other)
        for name, field in CM_DRIFTS.items():
            got = comparable(fast, namespace)[name]
            if field is None:
                assert got[0] == "configured", (name, got)
            else:
                assert got[0] == "failed" and got[2] == [field], (name, got)
        assert "tier" in kube.get(cm_path(namespace, "label-removed"))["metadata"]["labels"]

        result = applied(cluster, namespace, members, force_conflicts=True)
        # label-removed was restored by the run before; whether switching force_conflicts on reports it
        # configured is test_an_option_change_is_a_write's business.
        assert {name: action for name, action in actions(result).items() if name != "label-removed"} == \
            {name: "configured" for name in CM_DRIFTS if name != "label-removed"}, actions(result)
        for name in CM_DRIFTS:
            live = kube.get(cm_path(namespace, name))
            assert live["data"] == {"v": "ours-1"}, name
            assert live["metadata"]["labels"]["tier"] == "web", name
            assert live["metadata"]["annotations"]["note"] == "ours", name
        # Restored, the set is a no-op again.
        assert_noop(applied(cluster, namespace, members, force_conflicts=True), len(CM_DRIFTS))
    finally:
        kube.delete(f"/api/v1/namespaces/{other}")


def test_deployment_drift_scale_and_set_image_conflicts_exactly_as_always_then_force_restores(
        cluster, kube, namespace):
    """The scale subresource (kubectl scale) and a field inside a list (kubectl set image)."""
    other = f"{namespace}-always"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        members = [deployment("scaled", replicas=2), deployment("imaged", replicas=2)]
        for ns in (namespace, other):
            applied(cluster, ns, members)
            kubectl(cluster, "-n", ns, "scale", "deployment/scaled", "--replicas=3")
            kubectl(cluster, "-n", ns, "set", "image", "deployment/imaged", "app=registry.k8s.io/pause:3.9")
        assert kube.get(deploy_path(namespace, "scaled"))["spec"]["replicas"] == 3

        rc_fast, fast, out_fast = apply(cluster, namespace, members)
        rc_always, always, out_always = apply(cluster, other, members, reapply="always")
        assert rc_fast != 0 and rc_always != 0, (out_fast, out_always)
        assert comparable(fast, namespace) == comparable(always, other)
        print(f"kubectl scale drift: {comparable(fast, namespace)['scaled']}")
        assert comparable(fast, namespace)["scaled"][2] == [".spec.replicas"], fast
        assert comparable(fast, namespace)["imaged"][2] == ['.spec.template.spec.containers[name="app"].image'], fast

        result = applied(cluster, namespace, members, force_conflicts=True)
        assert actions(result) == {"scaled": "configured", "imaged": "configured"}
        assert kube.get(deploy_path(namespace, "scaled"))["spec"]["replicas"] == 2
        pod = kube.get(deploy_path(namespace, "imaged"))["spec"]["template"]["spec"]
        assert pod["containers"][0]["image"] == "registry.k8s.io/pause:3.10"
    finally:
        kube.delete(f"/api/v1/namespaces/{other}")


def test_drift_of_an_atomic_list_we_set(cluster, kube, namespace):
    """Another client appends to a list we own whole (a ClusterRole's rules): a conflict, then restored."""
    role = f"fastpath-test-{namespace}"
    cluster_role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role},
                    "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
    path = f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}"
    try:
        applied(cluster, namespace, [cluster_role])
        extra = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}
        kubectl(cluster, "patch", f"clusterrole/{role}", "--type=json",
                "-p", json.dumps([{"op": "add", "path": "/rules/-", "value": extra}]))
        assert len(kube.get(path)["rules"]) == 2

        rc, result, out = apply(cluster, namespace, [cluster_role])
        assert rc != 0, out
        assert comparable(result, namespace)[role][:1] == ("failed",) and \
            comparable(result, namespace)[role][2] == [".rules"], result["objects"]
        result = applied(cluster, namespace, [cluster_role], force_conflicts=True)
        assert actions(result) == {role: "configured"}
        assert kube.get(path)["rules"] == cluster_role["rules"]
    finally:
        kube.delete(path)


def test_mutating_webhook_drift_is_never_hidden(cluster, kube, namespace, tmp_path):
    """A mutating admission webhook changes a value we set: at another client's write (the field stays
    ours in managedFields, so the next run restores it without a conflict, exactly as reapply: always
    does), and at every write of ours (every run must still send its PATCH, as reapply: always does)."""
    other = f"{namespace}-always"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    webhook = MutatingWebhook(kube, [namespace, other], tmp_path)
    try:
        members = [cm("hooked", labels={"tier": "web", SELECT_LABEL[0]: SELECT_LABEL[1]}), cm("plain")]
        for ns in (namespace, other):
            applied(cluster, ns, members)
        assert webhook.reviews >= 2, "the API server never called the test webhook"

        # 1. The webhook mutates our value while another client writes the object.
        webhook.mutating = True
        for ns in (namespace, other):
            merge_patch(kube, cm_path(ns, "hooked"), {"metadata": {"annotations": {"poke": "1"}}}, manager="poker")
            assert kube.get(cm_path(ns, "hooked"))["data"]["v"] == MUTATED
        webhook.mutating = False
        rc_fast, fast, out_fast = apply(cluster, namespace, members)
        rc_always, always, out_always = apply(cluster, other, members, reapply="always")
        assert (rc_fast == 0) == (rc_always == 0), (out_fast, out_always)
        assert comparable(fast, namespace) == comparable(always, other)
        print(f"webhook drift at another client's write: rc={rc_fast} {comparable(fast, namespace)['hooked']}")
        if rc_fast != 0:  # the mutated value became the other client's: forced, it is ours again
            fast = applied(cluster, namespace, members, force_conflicts=True)
        assert actions(fast) == {"hooked": "configured", "plain": "unchanged"}
        assert kube.get(cm_path(namespace, "hooked"))["data"]["v"] == "ours-1"

        # 2. The webhook mutates our value at every write of ours (a second set, created while it
        # does): the live value never is ours, so the fast path must send its PATCH every run.
        webhook.mutating = True
        members = [cm("hooked2", labels={"tier": "web", SELECT_LABEL[0]: SELECT_LABEL[1]})]
        for ns, reapply in ((namespace, "changed"), (other, "always")):
            assert actions(applied(cluster, ns, members, parent="set2", reapply=reapply)) == {"hooked2": "created"}
            assert kube.get(cm_path(ns, "hooked2"))["data"]["v"] == MUTATED
        for _ in range(2):
            reviews = webhook.reviews
            rc_fast, fast, out_fast = apply(cluster, namespace, members, parent="set2")
            rc_always, always, out_always = apply(cluster, other, members, parent="set2", reapply="always")
            assert rc_fast == 0 and rc_always == 0, (out_fast, out_always)
            assert comparable(fast, namespace) == comparable(always, other)
            assert webhook.reviews >= reviews + 2  # each run's PATCH of hooked2 reached the webhook
            assert writes(fast) >= 1, fast["requests"]
            assert kube.get(cm_path(namespace, "hooked2"))["data"]["v"] == MUTATED
            print(f"webhook mutating our own writes: actions={actions(fast)} requests={fast['requests']}")
    finally:
        webhook.close()
        kube.delete(f"/api/v1/namespaces/{other}")


def test_members_in_other_namespaces_and_cluster_scoped_are_checked_too(cluster, kube, namespace):
    """The fast path lists every desired kind in every namespace of the set, and cluster-scoped kinds."""
    other = f"{namespace}-x"
    role = f"fastpath-test-{namespace}"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    cluster_role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": role, "labels": {"tier": "web"}},
                    "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
    remote = dict(cm("remote"), metadata=dict(cm("remote")["metadata"], namespace=other))
    members = [cm("local"), remote, cluster_role]
    try:
        applied(cluster, namespace, members)
        assert_noop(applied(cluster, namespace, members), 3)

        kubectl(cluster, "-n", other, "label", "configmap/remote", "tier-")
        kubectl(cluster, "label", f"clusterrole/{role}", "tier-")
        result = applied(cluster, namespace, members)
        assert actions(result) == {"local": "unchanged", "remote": "configured", role: "configured"}
        assert kube.get(cm_path(other, "remote"))["metadata"]["labels"]["tier"] == "web"
        live_role = kube.get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}")
        assert live_role["metadata"]["labels"]["tier"] == "web"

        kube.delete(cm_path(other, "remote"))
        result = applied(cluster, namespace, members)
        assert actions(result) == {"local": "unchanged", "remote": "created", role: "unchanged"}
        assert_noop(applied(cluster, namespace, members), 3)
    finally:
        kube.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}")
        kube.delete(f"/api/v1/namespaces/{other}")


# ----- the member deleted, unlabelled, or no longer ours in managedFields ---------------------------------


def test_deleted_unlabelled_unmanaged_or_undigested_member_is_written_again(cluster, kube, namespace):
    members = [cm("deleted"), cm("unlabelled"), cm("unmanaged"), cm("undigested"), cm("untouched")]
    applied(cluster, namespace, members)
    untouched = kube.get(cm_path(namespace, "untouched"))["metadata"]["resourceVersion"]

    kube.delete(cm_path(namespace, "deleted"))
    kubectl(cluster, "-n", namespace, "label", "configmap/unlabelled", f"{PART_OF}-")
    status, payload, _ = kube.request(
        "PATCH", cm_path(namespace, "unmanaged"),
        [{"op": "replace", "path": "/metadata/managedFields", "value": [{}]}],
        content_type="application/json-patch+json")
    assert status == 200, payload
    assert not payload["metadata"].get("managedFields"), payload["metadata"]
    kubectl(cluster, "-n", namespace, "annotate", "configmap/undigested", f"{DIGEST}-")
    unmanaged_version = payload["metadata"]["resourceVersion"]

    result = applied(cluster, namespace, members)
    got = actions(result)
    assert got["deleted"] == "created" and got["unlabelled"] == "configured" and got["untouched"] == "unchanged", got
    assert got["undigested"] == "configured", got
    print(f"managedFields cleared: reported {got['unmanaged']!r}, writes={writes(result)}")
    assert writes(result) >= 4, result["requests"]
    assert DIGEST in kube.get(cm_path(namespace, "undigested"))["metadata"]["annotations"]

    assert kube.get(cm_path(namespace, "deleted"))["data"] == {"v": "ours-1"}
    assert PART_OF in kube.get(cm_path(namespace, "unlabelled"))["metadata"]["labels"]
    unmanaged = kube.get(cm_path(namespace, "unmanaged"))
    assert our_apply_entry(unmanaged), unmanaged["metadata"].get("managedFields")
    assert unmanaged["metadata"]["resourceVersion"] != unmanaged_version
    assert kube.get(cm_path(namespace, "untouched"))["metadata"]["resourceVersion"] == untouched
    # And once written again, the set is a no-op.
    assert_noop(applied(cluster, namespace, members), 5)


# ----- option changes that change the request --------------------------------------------------------------


OPTION_CHANGES = {
    "field_manager": {"field_manager": "renamed-manager"},
    "force_conflicts": {"force_conflicts": True},
    "field_validation": {"field_validation": "Warn"},
}


@pytest.mark.parametrize("option", OPTION_CHANGES)
def test_an_option_change_is_a_write(cluster, kube, namespace, option):
    members = [cm("one"), cm("two")]
    applied(cluster, namespace, members)
    options = OPTION_CHANGES[option]
    manager = options.get("field_manager", MANAGER)
    rc, changed, out = apply(cluster, namespace, members, **options)
    assert rc == 0, out  # as today: the same values under new options never conflict
    print(f"{option} changed: actions={actions(changed)} requests={changed['requests']}")
    if option == "field_manager":
        # A new manager has no Apply entry yet: every member is sent, and the old manager's
        # digest annotation holds the same value, so the two managers share it without a conflict.
        assert writes(changed) >= 2, (changed["requests"], actions(changed))
    else:
        # force_conflicts or field_validation alone cannot change what an apply of values that are
        # all in place makes (no conflict, no unknown field): nothing is sent, as nothing changes.
        assert writes(changed) == 0, (changed["requests"], actions(changed))
    for name in ("one", "two"):
        assert our_apply_entry(kube.get(cm_path(namespace, name)), manager=manager), name
    # The same options again: nothing to write.
    assert_noop(applied(cluster, namespace, members, **options), 2)
    # The report as today (reapply: always before the fast path): a new manager changes managedFields
    # (configured); a new force_conflicts or field_validation alone changes nothing (unchanged).
    today = "configured" if option == "field_manager" else "unchanged"
    assert actions(changed) == {"one": today, "two": today}, actions(changed)


# ----- values the server normalises ------------------------------------------------------------------------


class RecordingProxy(FaultProxy):
    """Forwards everything and records the path of every write, so a test can tell which members a
    run sent (the result only counts them)."""

    def __init__(self, kubeconfig):
        self.writes = []
        super().__init__(kubeconfig)

    def _forward(self, method, path, headers, body):
        if method in ("POST", "PUT", "PATCH", "DELETE"):
            self.writes.append(f"{method} {path.split('?')[0]}")
        return super()._forward(method, path, headers, body)

    def members_written(self, parent="set1"):
        return sorted({w.rsplit("/", 1)[1] for w in self.writes if not w.endswith(f"/secrets/{parent}")})


def test_server_normalised_values_never_leave_a_wrong_live_value(cluster, kube, namespace):
    b64 = base64.b64encode(b"v1").decode()
    members = [
        deployment("cpu-float", replicas=1, resources={"requests": {"cpu": 0.5}}),         # live "500m"
        deployment("cpu-milli", replicas=1, resources={"limits": {"cpu": "1000m"}}),       # live "1"
        deployment("int-as-float", replicas=1, terminationGracePeriodSeconds=30.0),      # live 30
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "string-data"}, "stringData": {"k": "v1"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "data"}, "data": {"k": b64}},
    ]

    def check_live():
        def pod(name):
            return kube.get(deploy_path(namespace, name))["spec"]["template"]["spec"]
        assert pod("cpu-float")["containers"][0]["resources"] == {"requests": {"cpu": "500m"}}
        assert pod("cpu-milli")["containers"][0]["resources"] == {"limits": {"cpu": "1"}}
        assert pod("int-as-float")["terminationGracePeriodSeconds"] == 30
        for name in ("string-data", "data"):
            assert kube.get(secret_path(namespace, name))["data"] == {"k": b64}

    applied(cluster, namespace, members)
    check_live()
    proxy = RecordingProxy(cluster.kubeconfig)
    try:
        for run in (2, 3):
            proxy.writes.clear()
            rc, result, out = module_run(cluster, "applyset_apply", {
                "parent": "set1", "namespace": namespace, "definition": members, "host": proxy.url})
            assert rc == 0, out
            check_live()
            print(f"normalised values, run {run}: sent again {proxy.members_written()}, "
                  f"actions={actions(result)} requests={result['requests']}")
            assert result["changed"] is False, actions(result)
            assert "data" not in proxy.members_written()  # a value the server keeps as given is not sent
    finally:
        proxy.close()

    # A value changed behind our back is never hidden by the normalisation: it is restored.
    container = {"name": "app", "resources": {"requests": {"cpu": "750m"}}}
    patch = {"spec": {"template": {"spec": {"containers": [container]}}}}
    status, payload, _ = kube.request("PATCH", deploy_path(namespace, "cpu-float"), patch,
                                      query={"fieldManager": "other-client"},
                                      content_type="application/strategic-merge-patch+json")
    assert status == 200, payload
    merge_patch(kube, deploy_path(namespace, "int-as-float"),
                {"spec": {"template": {"spec": {"terminationGracePeriodSeconds": 31}}}})
    for name in ("string-data", "data"):
        merge_patch(kube, secret_path(namespace, name), {"data": {"k": base64.b64encode(b"drift").decode()}})
    result = applied(cluster, namespace, members, force_conflicts=True)
    drifted = {"cpu-float", "int-as-float", "string-data", "data"}
    assert {n: a for n, a in actions(result).items() if n in drifted} == {n: "configured" for n in drifted}
    check_live()

    # A Secret's new value in the manifest is written, whichever way the manifest gives it.
    b64 = base64.b64encode(b"v2").decode()
    members[3] = dict(members[3], stringData={"k": "v2"})
    members[4] = dict(members[4], data={"k": b64})
    result = applied(cluster, namespace, members)
    assert {n: a for n, a in actions(result).items() if n in ("string-data", "data")} == \
        {"string-data": "configured", "data": "configured"}, actions(result)
    for name in ("string-data", "data"):
        assert kube.get(secret_path(namespace, name))["data"] == {"k": b64}


# ----- check mode ------------------------------------------------------------------------------------------


def test_check_mode_noop_sends_no_write_and_drift_is_reported_without_writing(cluster, kube, namespace):
    members = [cm("steady"), cm("drifting")]
    applied(cluster, namespace, members)
    before = versions(kube, namespace)

    rc, result, out = apply(cluster, namespace, members, check=True, diff=True)
    assert rc == 0, out
    assert_noop(result, 2)
    assert versions(kube, namespace) == before

    kubectl(cluster, "-n", namespace, "label", "configmap/drifting", "tier-")
    before = versions(kube, namespace)
    rc, result, out = apply(cluster, namespace, members, check=True, diff=True)
    assert rc == 0, out
    assert result["changed"] is True and actions(result) == {"steady": "unchanged", "drifting": "configured"}
    # The diff shows the drifted member, and only it.
    assert f"--- before: ConfigMap {namespace}/drifting" in out and "+    tier: web" in out, out
    assert f"before: ConfigMap {namespace}/steady" not in out, out  # no diff (the plan names it: unchanged)
    assert versions(kube, namespace) == before  # dry runs only: nothing was written
    assert "tier" not in kube.get(cm_path(namespace, "drifting"))["metadata"]["labels"]


# ----- no claim, and a concurrent change to the parent ------------------------------------------------------


class ParentWriterProxy(FaultProxy):
    """Forwards everything; once the run has read the parent, changes the parent (as another writer
    would) just before forwarding the run's next request, so that the change lands between the run's
    read of the parent and its end."""

    def __init__(self, kubeconfig, parent_path, change):
        self.parent_path, self.change = parent_path, change
        self.parent_reads, self.changed_at = 0, None
        self._hook_lock = threading.Lock()
        super().__init__(kubeconfig)

    def _forward(self, method, path, headers, body):
        is_parent_read = method == "GET" and path.split("?")[0] == self.parent_path
        if is_parent_read:
            # Counted once answered: the run reads its parent together with discovery (prefetch.py),
            # and a change sent while that read is still on its way would be the version it reads.
            answer = super()._forward(method, path, headers, body)
            with self._hook_lock:
                self.parent_reads += 1
            return answer
        with self._hook_lock:
            if self.parent_reads and self.changed_at is None:
                self.changed_at = f"{method} {path}"
                self.change()
        return super()._forward(method, path, headers, body)


def test_a_noop_run_takes_no_claim_and_falls_back_when_the_parent_changes_meanwhile(cluster, kube, namespace):
    members = [cm("x"), cm("y")]
    applied(cluster, namespace, members)
    before = parent_version(kube, namespace)
    assert_noop(applied(cluster, namespace, members), 2)
    assert parent_version(kube, namespace) == before

    written = {}

    def another_writer():
        written["version"] = merge_patch(kube, secret_path(namespace, "set1"),
                                         {"metadata": {"annotations": {"example.com/touched": "yes"}}})[
            "metadata"]["resourceVersion"]

    proxy = ParentWriterProxy(cluster.kubeconfig, secret_path(namespace, "set1"), another_writer)
    try:
        rc, result, out = module_run(cluster, "applyset_apply",
                                     {"parent": "set1", "namespace": namespace, "definition": members,
                                      "host": proxy.url})
    finally:
        proxy.close()
    assert rc == 0, out
    assert proxy.changed_at, "the run never read its parent through the proxy"
    print(f"parent changed before {proxy.changed_at}; requests={result['requests']}")
    assert set(actions(result).values()) == {"unchanged"}
    # The run saw the parent change under it: it went the normal way (claim and release).
    assert writes(result) >= 2, result["requests"]
    assert parent_version(kube, namespace) != written["version"]


def test_a_noop_run_still_writes_parent_hints_that_are_out_of_date(cluster, kube, namespace):
    members = [cm("x")]
    applied(cluster, namespace, members)
    for wrong in ("", "ConfigMap,Secret"):
        merge_patch(kube, secret_path(namespace, "set1"), {"metadata": {"annotations": {KINDS: wrong}}})
        result = applied(cluster, namespace, members)
        assert actions(result) == {"x": "unchanged"}
        assert writes(result) >= 1, (wrong, result["requests"])
        assert kube.get(secret_path(namespace, "set1"))["metadata"]["annotations"][KINDS] == "ConfigMap", wrong
        assert_noop(applied(cluster, namespace, members), 1)


def test_a_noop_run_does_not_pass_a_claim_held_by_another_run(cluster, kube, namespace):
    members = [cm("x")]
    applied(cluster, namespace, members)
    claim = json.dumps({"expires": time.time() + 600, "run": "elsewhere/1/abcd"}, separators=(",", ":"))
    merge_patch(kube, secret_path(namespace, "set1"), {"metadata": {"annotations": {CLAIM: claim}}})
    rc, result, out = apply(cluster, namespace, members, claim_wait=0)
    # As today: the run reports the other run's claim instead of calling the set unchanged.
    assert rc != 0 and "elsewhere/1/abcd" in result["msg"], out


# ----- a run that only updates members takes no claim ------------------------------------------------------


class MemberHookProxy(FaultProxy):
    """Forwards everything and records every write with its answer's status; just before the
    first write to ``hook_path`` is forwarded, calls ``hook()`` (as another client acting between
    the run's LIST and its update would)."""

    def __init__(self, kubeconfig, hook_path=None, hook=None):
        self.hook_path, self.hook = hook_path, hook
        self.writes = []  # "METHOD path status"
        self._hook_lock = threading.Lock()
        super().__init__(kubeconfig)

    def _forward(self, method, path, headers, body):
        bare = path.split("?")[0]
        if method in ("POST", "PUT", "PATCH", "DELETE"):
            with self._hook_lock:
                if self.hook and bare == self.hook_path:
                    hook, self.hook = self.hook, None
                    hook()
        resp = super()._forward(method, path, headers, body)
        if method in ("POST", "PUT", "PATCH", "DELETE"):
            self.writes.append(f"{method} {bare} {resp.status}")
        return resp

    def parent_writes(self, parent="set1"):
        return [w for w in self.writes if f"/secrets/{parent} " in w]


def through(cluster, proxy, namespace, members, diff=False, **options):
    """Run the module once through ``proxy`` (closed after); returns (result, output)."""
    try:
        rc, result, out = module_run(cluster, "applyset_apply", {
            "parent": "set1", "namespace": namespace, "definition": members, "host": proxy.url, **options},
            diff=diff)
    finally:
        proxy.close()
    assert rc == 0, out
    return result, out


def test_an_update_only_run_writes_exactly_its_changed_members_and_not_the_parent(cluster, kube, namespace):
    # Without a history: with one (the default), the revision and its pointer are two writes more
    # (test_faults.py's revision sweep, update-only).
    members = [cm("a"), cm("b"), cm("c"), deployment("web", replicas=1)]
    applied(cluster, namespace, members, history_max=0)
    before = parent_version(kube, namespace)
    changed = [cm("a", value="ours-2"), cm("b"), cm("c"), deployment("web", replicas=3)]
    proxy = MemberHookProxy(cluster.kubeconfig)
    result, _out = through(cluster, proxy, namespace, changed, history_max=0)
    assert actions(result) == {"a": "configured", "b": "unchanged", "c": "unchanged", "web": "configured"}
    assert sorted(proxy.writes) == sorted([f"PATCH {cm_path(namespace, 'a')} 200",
                                           f"PATCH {deploy_path(namespace, 'web')} 200"]), proxy.writes
    assert writes(result) == 2 and result["changed"] is True
    # The parent was neither claimed nor rewritten, and the updates went through.
    assert parent_version(kube, namespace) == before
    assert CLAIM not in (kube.get(secret_path(namespace, "set1"))["metadata"].get("annotations") or {})
    assert kube.get(cm_path(namespace, "a"))["data"] == {"v": "ours-2"}
    assert kube.get(deploy_path(namespace, "web"))["spec"]["replicas"] == 3
    assert_noop(applied(cluster, namespace, changed, history_max=0), 4)


class RequestLog(MemberHookProxy):
    """Records the reads of the parent too ("GET path status")."""

    def __init__(self, kubeconfig):
        self.parent_reads = []
        super().__init__(kubeconfig)

    def _forward(self, method, path, headers, body):
        resp = super()._forward(method, path, headers, body)
        if method == "GET" and path.split("?")[0].endswith("/secrets/set1"):
            self.parent_reads.append(f"GET {path.split('?')[0]} {resp.status}")
        return resp


def test_with_a_history_a_changed_set_records_its_revision_alongside_the_updates(cluster, kube, namespace):
    """Issue 30: the revision's Secret goes out with the updates and the pointer's write, conditional
    on the parent as read, confirms that no run wrote the set meanwhile: the parent is read once."""
    members = [cm("a"), cm("b")]
    assert applied(cluster, namespace, members)["revision"] == 1
    proxy = RequestLog(cluster.kubeconfig)
    result, _out = through(cluster, proxy, namespace, [cm("a", value="ours-2"), cm("b")])
    assert actions(result) == {"a": "configured", "b": "unchanged"} and result["revision"] == 2
    secrets_path = f"/api/v1/namespaces/{namespace}/secrets"
    assert sorted(proxy.writes) == sorted([f"PATCH {cm_path(namespace, 'a')} 200", f"POST {secrets_path} 201",
                                           f"PATCH {secret_path(namespace, 'set1')} 200"]), proxy.writes
    assert proxy.writes[-1] == f"PATCH {secret_path(namespace, 'set1')} 200", proxy.writes  # the pointer last
    assert len(proxy.parent_reads) == 1, proxy.parent_reads
    annotations = kube.get(secret_path(namespace, "set1"))["metadata"]["annotations"]
    assert annotations["applyset.kubernetes.ansible/revision"] == "2" and CLAIM not in annotations

    # The same set, a member changed on the cluster: recorded only once an update changed it, after
    # the confirming GET, as before.
    merge_patch(kube, cm_path(namespace, "b"), {"data": {"v": "theirs"}})
    proxy = RequestLog(cluster.kubeconfig)
    result, _out = through(cluster, proxy, namespace, [cm("a", value="ours-2"), cm("b")], force_conflicts=True)
    assert actions(result) == {"a": "unchanged", "b": "configured"} and result["revision"] == 3
    assert proxy.writes == [f"PATCH {cm_path(namespace, 'b')} 200", f"POST {secrets_path} 201",
                            f"PATCH {secret_path(namespace, 'set1')} 200"], proxy.writes
    assert len(proxy.parent_reads) == 2, proxy.parent_reads


def test_a_member_pruned_meanwhile_is_not_created_again_by_an_update_without_the_claim(cluster, kube, namespace):
    members = [cm("a"), cm("b")]
    applied(cluster, namespace, members)
    uid = kube.get(cm_path(namespace, "a"))["metadata"]["uid"]

    def another_run_prunes_it():
        kube.delete(cm_path(namespace, "a"))

    proxy = MemberHookProxy(cluster.kubeconfig, cm_path(namespace, "a"), another_run_prunes_it)
    result, _out = through(cluster, proxy, namespace, [cm("a", value="ours-2"), cm("b")])
    print(f"writes: {proxy.writes}")
    # The server refused the conditional update of the pruned object (409, its uid named) instead
    # of creating it; the run started over with the claim, where "a" is desired, so it creates it.
    # (The revision's Secret is created alongside the update, in either order.)
    first = next(w for w in proxy.writes if cm_path(namespace, "a") in w)
    assert first == f"PATCH {cm_path(namespace, 'a')} 409", proxy.writes
    assert len(proxy.parent_writes()) == 2, proxy.writes
    assert actions(result)["a"] == "created"
    assert kube.get(cm_path(namespace, "a"))["metadata"]["uid"] != uid


def test_a_member_changed_meanwhile_is_updated_on_what_is_there_now_never_blindly(cluster, kube, namespace):
    # As a controller writing an object's status would: the resourceVersion moved after the LIST.
    members = [cm("a"), cm("b")]
    applied(cluster, namespace, members, history_max=0)  # members' writes only

    def someone_labels_it():
        merge_patch(kube, cm_path(namespace, "a"), {"metadata": {"labels": {"edited": "yes"}}})

    proxy = MemberHookProxy(cluster.kubeconfig, cm_path(namespace, "a"), someone_labels_it)
    result, _out = through(cluster, proxy, namespace, [cm("a", value="ours-2"), cm("b")], history_max=0)
    print(f"writes: {proxy.writes}")
    # Refused on the listed version (409), read again, then applied on the version read: still no
    # claim, no parent write, and the other writer's label is kept.
    assert proxy.writes == [f"PATCH {cm_path(namespace, 'a')} 409", f"PATCH {cm_path(namespace, 'a')} 200"]
    live = kube.get(cm_path(namespace, "a"))
    assert live["data"] == {"v": "ours-2"} and live["metadata"]["labels"]["edited"] == "yes"
    assert actions(result) == {"a": "configured", "b": "unchanged"}


def test_a_member_created_again_meanwhile_is_left_to_the_normal_path(cluster, kube, namespace):
    members = [cm("a"), cm("b")]
    applied(cluster, namespace, members)
    old = kube.get(cm_path(namespace, "a"))
    uid = old["metadata"]["uid"]

    def another_tool_recreates_it():
        kube.delete(cm_path(namespace, "a"))
        kube.create(cm_path(namespace), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "a", "labels": old["metadata"]["labels"]}})

    proxy = MemberHookProxy(cluster.kubeconfig, cm_path(namespace, "a"), another_tool_recreates_it)
    result, _out = through(cluster, proxy, namespace, [cm("a", value="ours-2"), cm("b")])
    print(f"writes: {proxy.writes}")
    # The server refused the update of the object as listed (another uid now); the run started
    # over with the claim and applied it to the new object, as any normal run would.
    first = next(w for w in proxy.writes if cm_path(namespace, "a") in w)  # the revision's Secret: either order
    assert first.startswith(f"PATCH {cm_path(namespace, 'a')} 4"), proxy.writes
    assert len(proxy.parent_writes()) == 2, proxy.writes
    live = kube.get(cm_path(namespace, "a"))
    assert live["metadata"]["uid"] != uid and live["data"] == {"v": "ours-2"}
    assert actions(result)["a"] == "configured"


def test_an_update_whose_parent_changes_meanwhile_starts_over_and_still_reports_it(cluster, kube, namespace):
    members = [cm("a"), cm("b")]
    applied(cluster, namespace, members)

    def another_writer_touches_the_parent():
        merge_patch(kube, secret_path(namespace, "set1"), {"metadata": {"annotations": {"example.com/t": "1"}}})

    proxy = MemberHookProxy(cluster.kubeconfig, cm_path(namespace, "a"), another_writer_touches_the_parent)
    result, out = through(cluster, proxy, namespace, [cm("a", value="ours-2"), cm("b")], diff=True)
    print(f"writes: {proxy.writes}")
    # Updated once without the claim; the parent changed, so the run started over with the claim,
    # found "a" unchanged, and still reports what it did (configured, with its diff).
    assert [w for w in proxy.writes if "/configmaps/" in w] == [f"PATCH {cm_path(namespace, 'a')} 200"]
    # The revision's pointer, conditional on the parent as read, was refused (it stands in for a
    # confirming GET); then the claim and the release.
    assert [w.rsplit(" ", 1)[1] for w in proxy.parent_writes()] == ["409", "200", "200"], proxy.writes
    assert actions(result) == {"a": "configured", "b": "unchanged"} and result["changed"] is True
    assert f"--- before: ConfigMap {namespace}/a" in out and "+  v: ours-2" in out, out
