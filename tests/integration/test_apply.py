"""applyset_apply against the real control plane: the module's own code, forked from a warm process
(``module_runner``), and through the ansible CLI where a test reads what Ansible prints (a diff, a
warning). Playbooks and roles run the whole Ansible path elsewhere (test_roles.py, test_examples.py,
test_shell_examples.py).

Assertions read the cluster through the independent test client (kubeapi.KubeAPI),
never through the product's own HTTP layer.
"""

from __future__ import annotations

import secrets
import subprocess

import pytest
import yaml
from ansible_cli import ansible_env, run_playbook
from module_runner import module_run
from applyset_ids import expected_id
from kubeapi import wait_for, written_by_clients

PART_OF = "applyset.kubernetes.io/part-of"
KINDS = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
TOOLING = "applyset.kubernetes.io/tooling"
ID = "applyset.kubernetes.io/id"


def cm(name, namespace=None, **extra):
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta.update(extra.pop("metadata", {}))
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": extra or {"v": name}}


def apply(cluster, namespace, definition, parent="set1", check=False, diff=False, cli=False, **options):
    """applyset_apply once: forked, or through the ``ansible`` command when the test reads what
    Ansible prints (``cli``, ``diff``: ``module_runner.module_run``)."""
    args = {"parent": parent, "namespace": namespace, "definition": definition, **options}
    return module_run(cluster, "applyset_apply", args, check=check, diff=diff, cli=cli)


def names(kube, namespace, plural="configmaps", group_path="/api/v1"):
    items = kube.get(f"{group_path}/namespaces/{namespace}/{plural}")["items"]
    return sorted(i["metadata"]["name"] for i in items if i["metadata"]["name"] != "kube-root-ca.crt")


def actions(result):
    return {f"{o['kind']}/{o['name']}": o["action"] for o in result["objects"]}


def members_only(state, parent="set1"):
    """A snapshot without the parent: every real run writes it (to claim the set and release it)."""
    return {uid: v for uid, v in state.items() if v[1] != parent}


def hints(kube, namespace, parent="set1"):
    meta = kube.get(f"/api/v1/namespaces/{namespace}/secrets/{parent}")["metadata"]
    return meta["labels"], meta["annotations"]


def snapshot(kube, namespaces, crd_groups=()):
    """uid -> resourceVersion of everything a test could have touched.

    Only the test's own namespaces and the CRDs of its own groups: other tests share the cluster.
    """
    paths = [f"/api/v1/namespaces?fieldSelector=metadata.name%3D{ns}" for ns in namespaces]
    for ns in namespaces:
        paths += [f"/api/v1/namespaces/{ns}/{p}" for p in ("configmaps", "secrets", "services")]
        paths.append(f"/apis/apps/v1/namespaces/{ns}/deployments")
    state = {}
    for path in paths:
        for item in kube.get(path)["items"]:
            meta = item["metadata"]
            state[meta["uid"]] = (meta.get("namespace"), meta["name"], written_by_clients(item))
    for item in kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]:
        meta = item["metadata"]
        if meta["name"].partition(".")[2] in crd_groups:
            state[meta["uid"]] = (None, meta["name"], meta["resourceVersion"])
    return state


# ----- the KEP's e2e sequence ---------------------------------------------------------------------


def test_kep_sequence_apply_prune_overlap_and_idempotence(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [cm("cm1"), cm("cm2")])
    assert rc == 0, out
    assert actions(result) == {"ConfigMap/cm1": "created", "ConfigMap/cm2": "created"}
    parent = kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1")["metadata"]
    assert parent["annotations"][KINDS] == "ConfigMap"
    assert parent["annotations"][NAMESPACES] == ""
    assert parent["annotations"][TOOLING] == "applyset.kubernetes/0.1.0"
    set1_id = parent["labels"][ID]
    assert result["applyset"]["id"] == set1_id

    # set1 shrinks: cm2 is pruned.
    rc, result, out = apply(cluster, namespace, [cm("cm1")])
    assert rc == 0, out
    assert actions(result) == {"ConfigMap/cm1": "unchanged", "ConfigMap/cm2": "pruned"}
    assert names(kube, namespace) == ["cm1"]

    # set2 overlaps set1 (cm1): refused before any write, in check mode and for real.
    before = snapshot(kube, [namespace])
    for check in (True, False):
        rc, result, out = apply(cluster, namespace, [cm("cm1"), cm("cm3")], parent="set2", check=check)
        assert rc != 0
        assert "already belong to another ApplySet" in result["msg"] and f"ConfigMap {namespace}/cm1" in result["msg"]
    assert snapshot(kube, [namespace]) == before

    # With adopt, check mode reports the changes and makes none.
    rc, result, out = apply(cluster, namespace, [cm("cm1"), cm("cm3")], parent="set2", check=True, adopt=True)
    assert rc == 0 and result["changed"], out
    # cm1 changes sets (its part-of label), so it is configured.
    assert actions(result) == {"ConfigMap/cm1": "configured", "ConfigMap/cm3": "created"}
    assert snapshot(kube, [namespace]) == before

    # set2 without prune adds cm3, takes cm1 over, prunes nothing.
    rc, result, out = apply(cluster, namespace, [cm("cm1"), cm("cm3")], parent="set2", adopt=True, prune=False)
    assert rc == 0, out
    assert names(kube, namespace) == ["cm1", "cm3"]
    set2_id = result["applyset"]["id"]
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/cm1")["metadata"]["labels"][PART_OF] == set2_id

    # set2 with prune, then again: nothing more changes.
    rc, result, out = apply(cluster, namespace, [cm("cm1"), cm("cm3")], parent="set2")
    assert rc == 0 and not result["changed"], out
    rc, result, out = apply(cluster, namespace, [cm("cm1"), cm("cm3")], parent="set2")
    assert rc == 0 and not result["changed"], out
    assert names(kube, namespace) == ["cm1", "cm3"]


# ----- kinds, scopes and parents --------------------------------------------------------------------


def crd(group, kind="Widget", plural="widgets", scope="Namespaced", labels=None):
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": labels or {}},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }],
        },
    }


def delete_crd(kube, name):
    kube.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")


def test_crd_and_custom_resource_in_one_set_then_unserved_kind_is_dropped(cluster, kube, namespace):
    group = f"t{secrets.token_hex(3)}.example.com"
    widget = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 1}}
    try:
        rc, result, out = apply(cluster, namespace, [widget, crd(group), cm("plain")],
                                guard={"allow_prune_kinds": ["CustomResourceDefinition"]})
        assert rc == 0, out
        order = [o["kind"] for o in result["objects"]]
        assert order.index("CustomResourceDefinition") < order.index("Widget")
        assert kube.get(f"/apis/{group}/v1/namespaces/{namespace}/widgets/w1")["spec"] == {"size": 1}
        kinds = kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1")["metadata"]["annotations"][KINDS]
        assert kinds == f"ConfigMap,CustomResourceDefinition.apiextensions.k8s.io,Widget.{group}"

        # The CRD disappears behind our back, and with it every Widget: its kind provably
        # holds nothing. kubectl fails from then on; we warn and drop it from the hint.
        delete_crd(kube, f"widgets.{group}")
        wait_for(lambda: kube.request("GET", f"/apis/{group}/v1")[0] == 404, timeout=30, what="group gone")
        rc, result, out = apply(cluster, namespace, [cm("plain")], guard={"max_prune_percent": 100})
        assert rc == 0, out
        assert "no CRD or APIService defines any more" in out, out
        kinds = kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1")["metadata"]["annotations"][KINDS]
        assert kinds == "ConfigMap"
    finally:
        delete_crd(kube, f"widgets.{group}")


def test_namespaces_as_members_of_a_namespaced_secret_parent(cluster, kube, namespace):
    ns_a, ns_b = f"{namespace}-a", f"{namespace}-b"
    ns = lambda n: {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}  # noqa: E731
    try:
        rc, result, out = apply(cluster, namespace, [ns(ns_a), ns(ns_b)])
        assert rc == 0, out
        # Pruning a Namespace deletes everything in it: refused unless allowed.
        rc, result, out = apply(cluster, namespace, [ns(ns_a)], guard={"max_prune_percent": 100})
        assert rc != 0 and "protected" in result["msg"] and f"Namespace {ns_b}" in result["msg"]
        assert kube.get(f"/api/v1/namespaces/{ns_b}") is not None
        rc, result, out = apply(cluster, namespace, [ns(ns_a)],
                                guard={"max_prune_percent": 100, "allow_prune_kinds": ["Namespace"]})
        assert rc == 0, out
        assert actions(result)[f"Namespace/{ns_b}"] == "pruned"
    finally:
        for n in (ns_a, ns_b):
            kube.delete(f"/api/v1/namespaces/{n}")


def test_configmap_parent_with_members_in_several_namespaces(cluster, kube, namespace):
    other = f"{namespace}-x"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        rc, result, out = apply(cluster, namespace, [cm("a"), cm("b", other)], parent="configmaps/multi")
        assert rc == 0, out
        parent = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/multi")["metadata"]
        assert parent["annotations"][NAMESPACES] == other
        assert result["applyset"]["namespaces"] == sorted([namespace, other])
        # Dropping the other namespace's member prunes it there and narrows the hint.
        rc, result, out = apply(cluster, namespace, [cm("a")], parent="configmaps/multi")
        assert rc == 0, out
        assert actions(result)["ConfigMap/b"] == "pruned"
        assert names(kube, other) == []
        parent = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/multi")["metadata"]
        assert parent["annotations"][NAMESPACES] == ""
    finally:
        kube.delete(f"/api/v1/namespaces/{other}")


def test_cluster_scoped_custom_resource_parent(cluster, kube, namespace):
    group = f"p{secrets.token_hex(3)}.example.com"
    parent_crd = crd(group, kind="ApplySet", plural="applysets", scope="Cluster",
                     labels={"applyset.kubernetes.io/is-parent-type": "true"})
    kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", parent_crd)
    other = f"{namespace}-y"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        wait_for(lambda: kube.request("GET", f"/apis/{group}/v1/applysets")[0] == 200, timeout=30, what="CRD served")
        # A reference to a parent that does not exist is refused, as in kubectl...
        rc, result, out = apply(cluster, None, [cm("a", namespace)], parent=f"applysets.{group}/platform")
        assert rc != 0 and "cannot be created automatically" in result["msg"]
        # ...but a full definition is created.
        definition = {"apiVersion": f"{group}/v1", "kind": "ApplySet", "metadata": {"name": "platform"}}
        rc, result, out = apply(cluster, None, [cm("a", namespace), cm("b", other)], parent=definition)
        assert rc == 0, out
        live = kube.get(f"/apis/{group}/v1/applysets/platform")["metadata"]
        assert live["annotations"][NAMESPACES] == ",".join(sorted([namespace, other]))
        assert live["labels"][ID] == expected_id("platform", "", "ApplySet", group)
    finally:
        kube.delete(f"/apis/{group}/v1/applysets/platform")
        delete_crd(kube, f"applysets.{group}")
        kube.delete(f"/api/v1/namespaces/{other}")


def test_parent_kinds_that_are_not_allowed(cluster, kube, namespace):
    group = f"n{secrets.token_hex(3)}.example.com"
    kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd(group, kind="Thing", plural="things"))
    try:
        wait_for(lambda: kube.request("GET", f"/apis/{group}/v1/things")[0] == 200, timeout=30, what="CRD served")
        rc, result, _ = apply(cluster, namespace, [cm("a")], parent="deployments.apps/x")
        assert rc != 0 and "not permitted as an ApplySet parent" in result["msg"]
        rc, result, _ = apply(cluster, namespace, [cm("a")], parent=f"things.{group}/x")
        assert rc != 0 and "not permitted" in result["msg"]
        assert f"kubectl label crd things.{group} applyset.kubernetes.io/is-parent-type=true" in result["msg"]
        assert names(kube, namespace) == []
    finally:
        delete_crd(kube, f"things.{group}")


# ----- kubectl interoperability --------------------------------------------------------------------


def test_kubectl_set_is_refused_then_taken_over(cluster, kube, namespace, tmp_path):
    manifest = tmp_path / "cms.yaml"
    manifest.write_text(yaml.safe_dump_all([cm("k1"), cm("k2")]))
    proc = subprocess.run(
        ["kubectl", "apply", "-n", namespace, "--server-side", "--prune", "--applyset=kset", "-f", str(manifest)],
        capture_output=True, text=True, env=ansible_env(cluster, KUBECTL_APPLYSET="true"), timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    kubectl_id = kube.get(f"/api/v1/namespaces/{namespace}/secrets/kset")["metadata"]["labels"][ID]

    rc, result, out = apply(cluster, namespace, [cm("k1")], parent="kset")
    assert rc != 0
    assert 'managed by tooling "kubectl" instead of "applyset.kubernetes"' in result["msg"]
    assert names(kube, namespace) == ["k1", "k2"]

    rc, result, out = apply(cluster, namespace, [cm("k1")], parent="kset", takeover=True)
    assert rc == 0, out
    assert result["applyset"]["id"] == kubectl_id  # same ID formula as kubectl
    assert actions(result)["ConfigMap/k2"] == "pruned"
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/kset")["metadata"]["annotations"][TOOLING].startswith(
        "applyset.kubernetes/")


# ----- prune safety ------------------------------------------------------------------------------------


KEEP_ANNOTATIONS = [
    ("helm.sh/resource-policy", "keep"),
    ("cli-utils.sigs.k8s.io/on-remove", "keep"),
    ("client.lifecycle.config.k8s.io/deletion", "detach"),
    ("argocd.argoproj.io/sync-options", "Prune=false"),
    ("kapp.k14s.io/delete-strategy", "orphan"),
    ("kustomize.toolkit.fluxcd.io/prune", "disabled"),
]


def test_keep_annotations_and_owner_references_protect_from_prune(cluster, kube, namespace):
    kept = [cm(f"keep{i}", metadata={"annotations": {k: v}}) for i, (k, v) in enumerate(KEEP_ANNOTATIONS)]
    rc, result, out = apply(cluster, namespace, kept + [cm("anchor")])
    assert rc == 0, out
    set_id = result["applyset"]["id"]
    # An operator copied our label onto an object it controls.
    owner = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/anchor")
    kube.create(f"/api/v1/namespaces/{namespace}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "child", "labels": {PART_OF: set_id}, "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "anchor", "uid": owner["metadata"]["uid"],
            "controller": True}]},
    })
    rc, result, out = apply(cluster, namespace, [cm("anchor")], guard={"max_prune_percent": 100})
    assert rc == 0, out
    got = actions(result)
    for i in range(len(KEEP_ANNOTATIONS)):
        assert got[f"ConfigMap/keep{i}"] == "kept"
        labels = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/keep{i}")["metadata"].get("labels") or {}
        assert PART_OF not in labels  # it left the set
    assert got["ConfigMap/child"] == "skipped"
    assert "child" in names(kube, namespace)


def test_guard_refuses_empty_set_and_large_prunes_and_shows_the_list(cluster, kube, namespace):
    rc, _, out = apply(cluster, namespace, [cm(f"c{i}") for i in range(4)])
    assert rc == 0, out
    rc, result, _ = apply(cluster, namespace, [cm("c0")])
    assert rc != 0 and "more than guard.max_prune_percent (50%)" in result["msg"]
    assert sorted(result["error"]["details"]["would_prune"]) == [f"ConfigMap {namespace}/c{i}" for i in (1, 2, 3)]
    rc, result, _ = apply(cluster, namespace, [])
    assert rc != 0 and "the desired set is empty" in result["msg"]
    assert names(kube, namespace) == ["c0", "c1", "c2", "c3"]
    # kubectl cannot empty a set; we can, when asked.
    rc, result, out = apply(cluster, namespace, [], guard={"allow_empty": True})
    assert rc == 0, out
    assert names(kube, namespace) == []
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1")["metadata"]["annotations"][KINDS] == ""


def test_uninstall_and_disband(cluster, kube, namespace):
    rc, _, out = apply(cluster, namespace, [cm("u1"), cm("u2")], parent="gone")
    assert rc == 0, out
    rc, result, out = module_run(cluster, "applyset_apply", {"parent": "gone", "namespace": namespace,
                                                              "state": "absent"})
    assert rc == 0, out
    assert names(kube, namespace) == []
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/gone") is None

    rc, _, out = apply(cluster, namespace, [cm("d1")], parent="loose")
    assert rc == 0, out
    rc, result, out = module_run(cluster, "applyset_apply", {"parent": "loose", "namespace": namespace,
                                                              "state": "disbanded"})
    assert rc == 0, out
    assert names(kube, namespace) == ["d1"]
    assert PART_OF not in (kube.get(f"/api/v1/namespaces/{namespace}/configmaps/d1")["metadata"].get("labels") or {})
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/loose") is None


# ----- check mode, diff, idempotence -------------------------------------------------------------------


def test_check_mode_changes_nothing_and_reports_the_prune_list(cluster, kube, namespace):
    rc, _, out = apply(cluster, namespace, [cm("a"), cm("b")])
    assert rc == 0, out
    before = snapshot(kube, [namespace])
    rc, result, out = apply(cluster, namespace, [cm("a", v="changed"), cm("new")], check=True, diff=True,
                            guard={"max_prune_percent": 100})
    assert rc == 0 and result["changed"], out
    assert actions(result) == {"ConfigMap/a": "configured", "ConfigMap/new": "created", "ConfigMap/b": "pruned"}
    assert snapshot(kube, [namespace]) == before
    # A set whose parent does not exist yet: check mode does not create it.
    rc, result, out = apply(cluster, namespace, [cm("z")], parent="fresh", check=True)
    assert rc == 0, out
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/fresh") is None
    assert snapshot(kube, [namespace]) == before


def test_check_mode_with_namespace_and_crd_created_in_the_same_run(cluster, kube, namespace):
    new_ns = f"{namespace}-new"
    group = f"c{secrets.token_hex(3)}.example.com"
    objs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": new_ns}},
        cm("inside", new_ns),
        crd(group),
        {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}},
    ]
    before = snapshot(kube, [namespace, new_ns], crd_groups=[group])
    rc, result, out = apply(cluster, namespace, objs, check=True)
    assert rc == 0, out
    reasons = {f"{o['kind']}/{o['name']}": o.get("reason", "") for o in result["objects"]}
    assert "is created by this run" in reasons["ConfigMap/inside"]
    assert "CRD is created by this run" in reasons["Widget/w"]
    assert snapshot(kube, [namespace, new_ns], crd_groups=[group]) == before


def test_diff_through_ansible_playbook_check_diff(cluster, kube, namespace, tmp_path):
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
              "stringData": {"password": "hunter2-very-secret"}}
    rc, _, out = apply(cluster, namespace, [cm("shown", v="one"), secret, cm("old")])
    assert rc == 0, out
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [{"applyset.kubernetes.applyset_apply": {
            "parent": "set1", "namespace": namespace, "guard": {"max_prune_percent": 100},
            "definition": [cm("shown", v="two"), dict(secret, stringData={"password": "new-secret-value"})],
        }}],
    }]))
    proc = run_playbook(cluster, playbook, check=True, diff=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "--- before: ConfigMap " + namespace + "/shown" in out
    assert "-  v: one" in out and "+  v: two" in out
    assert "+++ after: (absent)" in out and f"ConfigMap {namespace}/old" in out
    assert "managedFields" not in out
    assert "hunter2" not in out and "new-secret-value" not in out
    assert names(kube, namespace) == ["old", "shown"]


def test_second_identical_run_is_not_changed(cluster, kube, namespace):
    objs = [cm("i1"), {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
                       "spec": {"ports": [{"port": 80}], "selector": {"app": "x"}}}]
    rc, result, out = apply(cluster, namespace, objs)
    assert rc == 0 and result["changed"], out
    before, before_hints = snapshot(kube, [namespace]), hints(kube, namespace)
    rc, result, out = apply(cluster, namespace, objs)
    assert rc == 0 and not result["changed"], out
    assert set(actions(result).values()) == {"unchanged"}
    assert members_only(snapshot(kube, [namespace])) == members_only(before)
    assert hints(kube, namespace) == before_hints


# ----- conflicts and bad input ---------------------------------------------------------------------------


def test_conflict_names_the_object_fields_and_manager_then_force(cluster, kube, namespace):
    kube.apply(f"/api/v1/namespaces/{namespace}/configmaps/shared", cm("shared", v="theirs"), field_manager="other-tool")
    rc, result, out = apply(cluster, namespace, [cm("shared", v="ours")])
    assert rc != 0
    failed = [o for o in result["objects"] if o["action"] == "failed"]
    assert failed and failed[0]["name"] == "shared"
    assert '"other-tool"' in failed[0]["reason"] and ".data.v" in failed[0]["reason"]
    assert failed[0]["error"]["conflicting_fields"] == [".data.v"]
    rc, result, out = apply(cluster, namespace, [cm("shared", v="ours")], force_conflicts=True)
    assert rc == 0, out
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/shared")["data"] == {"v": "ours"}


BAD_INPUTS = [
    ("part-of label", [cm("x", metadata={"labels": {PART_OF: "applyset-abc-v1"}})], "already set in input data"),
    ("missing name", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}], "metadata.name"),
    ("generateName", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "generateName": "a-"}}],
     "generateName"),
    ("unknown kind", [{"apiVersion": "example.invalid/v1", "kind": "Nope", "metadata": {"name": "a"}}],
     "unknown kind Nope"),
    ("duplicate", [cm("dup"), cm("dup")], "same object"),
    ("yaml syntax", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [unclosed\n", "line"),
    ("not a mapping", ["just a string"], "mapping"),
    ("unknown field (Strict)", [cm("good"), dict(cm("strict"), spec={"bogus": 1})], "field not declared in schema"),
]


@pytest.mark.parametrize("case,definition,message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_fails_clearly_and_changes_nothing(cluster, kube, namespace, case, definition, message):
    rc, _, out = apply(cluster, namespace, [cm("good")])
    assert rc == 0, out
    before, before_hints = snapshot(kube, [namespace]), hints(kube, namespace)
    rc, result, out = apply(cluster, namespace, definition)
    assert rc != 0, out
    assert message in result["msg"], result["msg"]
    if case.startswith("unknown field"):
        # Only the server finds this, while applying: the run had claimed the set.
        assert members_only(snapshot(kube, [namespace])) == members_only(before)
        assert hints(kube, namespace) == before_hints
    else:
        assert snapshot(kube, [namespace]) == before


def test_forged_or_mismatched_parent_id_is_refused(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [cm("victim")], parent="real")
    assert rc == 0, out
    real_id = result["applyset"]["id"]
    # Another parent copies the real set's id to get its members pruned.
    kube.create(f"/api/v1/namespaces/{namespace}/secrets", {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "forged", "labels": {ID: real_id},
                     "annotations": {TOOLING: "applyset.kubernetes/0.1.0", KINDS: "ConfigMap"}},
    })
    before = snapshot(kube, [namespace])
    for takeover in (False, True):
        rc, result, out = apply(cluster, namespace, [cm("other")], parent="forged", takeover=takeover,
                                guard={"max_prune_percent": 100})
        assert rc != 0
        assert "incorrect value for label" in result["msg"] and real_id in result["msg"]
    assert snapshot(kube, [namespace]) == before


# ----- waiting ------------------------------------------------------------------------------------------


def deployment(name, node_selector=None):
    pod_spec = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec}}}


def test_wait_until_ready_and_timeout_names_unready_objects(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [deployment("web"), cm("cfg")], wait=True, wait_timeout=90)
    assert rc == 0, out
    status = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")["status"]
    assert status["availableReplicas"] == 2
    # No node matches: the rollout can never finish; the error says which object and why.
    rc, result, out = apply(cluster, namespace, [deployment("web"), cm("cfg"), deployment("stuck", {"disk": "none"})],
                            wait=True, wait_timeout=10)
    assert rc != 0
    assert f"Deployment {namespace}/stuck" in result["msg"] and "replicas" in result["msg"], result["msg"]
    assert f"Deployment {namespace}/web" not in result["msg"]


def test_api_server_warnings_reach_the_user(cluster, kube, namespace):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "legacy", "annotations": {"seccomp.security.alpha.kubernetes.io/pod": "runtime/default"}},
           "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}
    rc, result, out = apply(cluster, namespace, [pod], cli=True)
    assert rc == 0, out
    assert "[WARNING]" in out and "Pod " + namespace + "/legacy" in out and "seccomp" in out, out


def test_a_parent_that_is_also_in_the_input_is_refused_before_anything_is_written(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [cm("settings")], parent={"kind": "ConfigMap", "name": "settings"},
                            prune=False)
    assert rc != 0
    assert "is also one of the objects to apply" in result["msg"] and "settings-set" in result["msg"], result["msg"]
    assert names(kube, namespace) == []
    # The documented example, with the parent under its own name.
    rc, result, out = apply(cluster, namespace, [cm("settings")], parent={"kind": "ConfigMap", "name": "settings-set"},
                            prune=False)
    assert rc == 0, out
    rc, result, out = apply(cluster, namespace, [cm("settings")], parent={"kind": "ConfigMap", "name": "settings-set"},
                            prune=False)
    assert rc == 0 and not result["changed"], out


def test_an_invalid_readiness_override_fails_before_anything_is_written(cluster, kube, namespace):
    rc, result, out = apply(cluster, namespace, [cm("plain")], wait=True,
                            wait_rules={"overrides": {"ConfigMap": "data.[v"}})
    assert rc != 0
    assert "invalid JMESPath expression" in result["msg"], result["msg"]
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1") is None
    assert names(kube, namespace) == []


def test_a_crd_whose_names_are_refused_fails_at_once_naming_the_reason(cluster, kube, namespace):
    group = f"t{secrets.token_hex(3)}.example.com"
    kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd(group))
    clash = crd(group, kind="Widget", plural="things")  # the kind Widget is taken in this group
    try:
        rc, result, out = apply(cluster, namespace, [clash], crd_timeout=600,
                                guard={"allow_prune_kinds": ["CustomResourceDefinition"]})
        assert rc != 0
        assert f"CustomResourceDefinition things.{group} will not become Established: names not accepted" \
            in result["msg"], result["msg"]
    finally:
        delete_crd(kube, f"widgets.{group}")
        delete_crd(kube, f"things.{group}")
