"""The bad input corpus: every case fails the task, names what is wrong, and changes nothing.

Each case is one applyset_apply task run through the ansible CLI, as users run it. A case
asserts that

* the task failed,
* its message names the offending file (the path given in ``src``), document, object,
  parent or option,
* the cluster is unchanged: uids and resourceVersions of everything in the test namespace,
  the parent included, plus the cluster-scoped objects a case could have created.

Speed: an ad hoc ``ansible`` run costs about 2.5 s of start-up, a task inside a playbook
about 1 s. So the cases refused before the first write run as the tasks of ONE playbook
(one case per task, ``ignore_errors`` and ``register``; the cases are shared out over two
inventory hosts that are both this machine, run side by side by the free strategy), against
a module-scoped namespace that holds one good set applied by the product. The snapshot is
taken before and after the whole playbook: resourceVersions only grow and uids are never
reused, so a write by any case would still show at the end; each case also checks
``changed`` in its own result.

tests/unit/inputs/test_bad_input_unit.py checks the same problems on the loader alone, case by
case, without a cluster.
"""

from __future__ import annotations

import json
import os
import secrets
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from ansible_cli import ansible_env, run_module, run_playbook
from applyset_ids import expected_id
from kubeapi import wait_for

PART_OF = "applyset.kubernetes.io/part-of"
ID = "applyset.kubernetes.io/id"
TOOLING = "applyset.kubernetes.io/tooling"
KINDS = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES = "applyset.kubernetes.io/additional-namespaces"

GOOD_MEMBERS = ["good-1", "good-2", "good-3", "good-4"]
MAX_FILE_BYTES = 64 * 1024 * 1024  # manifests.MAX_FILE_BYTES, checked by a unit test


def cm(name, namespace=None, **extra):
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta.update(extra.pop("metadata", {}))
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": extra or {"v": name}}


# ----- snapshot -------------------------------------------------------------------------------------------

NAMESPACED_PATHS = ("/api/v1/namespaces/{ns}/configmaps", "/api/v1/namespaces/{ns}/secrets",
                    "/api/v1/namespaces/{ns}/services", "/api/v1/namespaces/{ns}/serviceaccounts",
                    "/apis/apps/v1/namespaces/{ns}/deployments",
                    "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles")


def snapshot(kube, namespace, prefix=None, crd_group=None):
    """uid -> (namespace, name, resourceVersion) of everything a case could have touched.

    The namespace's objects (the parent included), the namespaces and ClusterRoles whose
    names start with ``prefix`` (cases try to create some), and the CRDs of ``crd_group``.
    """
    prefix = prefix or namespace
    paths = [p.format(ns=namespace) for p in NAMESPACED_PATHS]
    paths += ["/api/v1/namespaces", "/apis/rbac.authorization.k8s.io/v1/clusterroles"]
    state = {}
    for path in paths:
        for item in kube.get(path)["items"]:
            meta = item["metadata"]
            if meta.get("namespace") or meta["name"].startswith(prefix):
                state[meta["uid"]] = (meta.get("namespace"), meta["name"], meta["resourceVersion"])
    for item in kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]:
        meta = item["metadata"]
        if crd_group and meta["name"].endswith(crd_group):
            state[meta["uid"]] = (None, meta["name"], meta["resourceVersion"])
    return state


# ----- the corpus -------------------------------------------------------------------------------------------
#
# Tokens replaced before use, in args, file contents and expected messages:
#   @NS@ test namespace, @DIR@ the case's own file directory, @GROUP@ a CRD group without
#   the parent marker, @GOODID@ the good set's id.


@dataclass
class Case:
    id: str
    args: dict  # module args over {"parent": "good", "namespace": "@NS@"}; a None value removes a key
    expect: tuple  # substrings the message must contain
    files: dict = field(default_factory=dict)  # name -> text, bytes, or a function(path) that makes it
    check: bool = False  # run in check mode (cases that would write if they were not refused)
    xfail: str | None = None  # a known product bug: "bug: ..."


def y(text):
    return textwrap.dedent(text).lstrip("\n")


CONFIGMAP = y("""
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: {name}
    data:
      v: "1"
    """)


LATIN1_PREFIX = CONFIGMAP.format(name="latin") + "  city: Montr"


def src(*names):
    return {"src": [f"@DIR@/{n}" for n in names]}


def file_path(name):
    """How messages name a file given in src (load errors add "file " in front)."""
    return f"@DIR@/{name}"


def sparse_file(size):
    def make(path):
        with open(path, "wb") as handle:
            handle.truncate(size)
    return make


def symlink_loop(path):
    path.mkdir()
    (path / "cm.yaml").write_text(CONFIGMAP.format(name="in-loop"))
    (path / "sub").mkdir()
    os.symlink("..", path / "sub" / "back")


def fifo(path):
    os.mkfifo(path)


CASES = [
    # --- malformed YAML and JSON ------------------------------------------------------------------------
    Case("yaml-bad-indentation", src("cm.yaml"), (file_path("cm.yaml"), "YAML syntax error at line 5"),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n   namespace: b\n"}),
    Case("yaml-unclosed-flow-mapping", src("cm.yaml"), (file_path("cm.yaml"), "flow mapping"),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\ndata: {}\n"}),
    Case("yaml-unclosed-flow-sequence", src("cm.yaml"), (file_path("cm.yaml"), "flow sequence"),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  finalizers: [x, y\n"}),
    Case("yaml-tab-indentation", src("cm.yaml"), (file_path("cm.yaml"), "line 4, column 1"),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: a\n"}),
    Case("yaml-undefined-alias", src("cm.yaml"), (file_path("cm.yaml"), "undefined alias"),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: *nothing\n"}),
    Case("yaml-unclosed-quote", src("cm.yaml"), (file_path("cm.yaml"), "quoted scalar"),
         files={"cm.yaml": 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "a\n'}),
    Case("yaml-error-in-third-document", src("many.yaml"), (file_path("many.yaml"), "line 18"),
         files={"many.yaml": CONFIGMAP.format(name="one") + "---\n" + CONFIGMAP.format(name="two") + "---\n"
                + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [three\n"}),
    # kubectl ignores tags on collections: this metadata is the list ["id"].
    Case("yaml-python-tag-is-no-code", src("cm.yaml"), (file_path("cm.yaml"), "metadata is not a mapping but a list"),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: !!python/object/apply:os.system [id]\n"}),
    # YAML keys must be unique; PyYAML keeps the last one. The API server refuses duplicate fields
    # under fieldValidation=Strict (the module's default), but never sees them.
    # (check mode: should this regress, the case still writes nothing)
    Case("yaml-duplicate-key", {**src("cm.yaml"), "definition": [cm(n) for n in GOOD_MEMBERS]},
         (file_path("cm.yaml"), "YAML syntax error at line 7, column 1: found duplicate key 'data'"), check=True,
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dupkey\ndata:\n  a: '1'\ndata:\n"
                           "  b: '2'\n"}),
    Case("yaml-duplicate-key-in-flow-mapping", {**src("cm.yaml"), "definition": [cm(n) for n in GOOD_MEMBERS]},
         (file_path("cm.yaml"), "line 4", "found duplicate key 'v'"), check=True,
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dupflow}\ndata: {v: '1', v: '2'}\n"}),
    # 4^10 strings from 11 short lines: just over the loader's limit of a million values.
    Case("yaml-alias-expansion", src("cm.yaml"),
         (file_path("cm.yaml"), "expands through YAML aliases to", "more than 1,000,000"), check=True,
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\ndata: {}\nx:\n"
                           "  l0: &l0 [lol, lol, lol, lol]\n"
                           + "".join(f"  l{i}: &l{i} [*l{i - 1}, *l{i - 1}, *l{i - 1}, *l{i - 1}]\n"
                                     for i in range(1, 10))}),
    # Unclosed, so that YAML cannot read it either (kubectl reads {...,} as a YAML flow mapping).
    Case("json-syntax-error", src("cm.json"), (file_path("cm.json"), "JSON syntax error at line 1"),
         files={"cm.json": '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}'}),
    Case("json-duplicate-key", {**src("cm.json"), "definition": [cm(n) for n in GOOD_MEMBERS]},
         (file_path("cm.json"), "JSON object has a duplicate key 'data'"), check=True,
         files={"cm.json": '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dupjson"}, '
                           '"data": {"a": "1"}, "data": {"b": "2"}}'}),
    Case("document-is-a-list", src("list.yaml"),
         (file_path("list.yaml") + ", document 1", "not a mapping but a list"),
         files={"list.yaml": "- apiVersion: v1\n  kind: ConfigMap\n"}),
    Case("document-is-a-string", src("text.yaml"),
         (file_path("text.yaml") + ", document 2", "not a mapping but a string"),
         files={"text.yaml": CONFIGMAP.format(name="fine") + "---\njust some text\n"}),
    # --- encodings, sizes and the file system --------------------------------------------------------------
    Case("non-utf8-latin1", src("latin1.yaml"),
         (file_path("latin1.yaml"), f"not valid UTF-8 (byte offset {len(LATIN1_PREFIX)})"),
         files={"latin1.yaml": (LATIN1_PREFIX + "\xe9al\n").encode("latin-1")}),
    Case("configmap-over-1mib", src("big.yaml"),
         (file_path("big.yaml") + ", document 1 (ConfigMap big)", "ConfigMap content is",
          "over the limit of 1048576 bytes"), check=True,
         files={"big.yaml": lambda p: p.write_text(yaml.safe_dump(cm("big", blob="x" * (1024 * 1024 + 1))))}),
    Case("secret-over-1mib", src("big.yaml"),
         (file_path("big.yaml") + ", document 1 (Secret big)", "Secret content is", "over the limit of 1048576 bytes"),
         check=True, files={"big.yaml": lambda p: p.write_text(yaml.safe_dump({
             "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "big"},
             "stringData": {"a": "s" * (600 * 1024), "b": "t" * (600 * 1024)}}))}),
    Case("object-over-3mib", src("role.yaml"),
         (file_path("role.yaml") + ", document 1 (Role wide)", "the object is",
          "over the API server's limit of 3145728 bytes"), check=True,
         files={"role.yaml": lambda p: p.write_text(yaml.safe_dump({
             "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "wide"},
             "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"],
                        "resourceNames": [f"name-{i:07d}" for i in range(230_000)]}]}))}),
    Case("file-over-loader-limit", src("huge.yaml"),
         (file_path("huge.yaml"), f"more than the limit of {MAX_FILE_BYTES} bytes"),
         files={"huge.yaml": sparse_file(MAX_FILE_BYTES + 1)}),
    Case("symlink-loop-in-src-dir", src("tree"), ("@DIR@/tree/sub/back", "symbolic link loop"),
         files={"tree": symlink_loop}),
    Case("src-path-does-not-exist", src("nothing-here/"), ("@DIR@/nothing-here/", "no such file or directory")),
    Case("src-glob-matches-nothing", src("none/*.yaml"), ("@DIR@/none/*.yaml", "matches no files")),
    Case("src-is-a-fifo", src("pipe.yaml"), ("@DIR@/pipe.yaml", "not a regular file"), files={"pipe.yaml": fifo}),
    # An empty entry (e.g. an unset variable) must not stand for "the playbook's directory"
    # (the playbook's directory holds only the corpus playbook, which would fail otherwise).
    Case("src-empty-entry", {"src": [""]}, ("src: expected a path, got string ''",)),
    # --- wrong types ---------------------------------------------------------------------------------------
    Case("metadata-is-a-list", src("cm.yaml"), (file_path("cm.yaml") + ", document 1", "metadata is not a mapping"),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  - name: a\n"}),
    Case("labels-with-int-values", src("cm.yaml"),
         (file_path("cm.yaml") + ", document 1 (ConfigMap lbl)", 'metadata.labels["replicas"] is a number (3)'),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lbl\n  labels:\n    replicas: 3\n"}),
    Case("annotations-with-bool-values", src("cm.yaml"),
         (file_path("cm.yaml") + ", document 1 (ConfigMap ann)", 'metadata.annotations["enabled"] is a boolean'),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ann\n  annotations:\n"
                           "    enabled: yes\n"}),
    Case("labels-a-list", {"definition": [cm("a"), {"apiVersion": "v1", "kind": "ConfigMap",
                                                    "metadata": {"name": "l", "labels": ["a=b"]}}]},
         ("definition item 2 (ConfigMap l)", "metadata.labels is not a mapping but a list")),
    Case("name-is-an-int", {"definition": [cm("a"), {"apiVersion": "v1", "kind": "ConfigMap",
                                                     "metadata": {"name": 42}}]},
         ("definition item 2", "metadata.name is a number, not a string")),
    Case("namespace-is-an-int", src("cm.yaml"),
         (file_path("cm.yaml") + ", document 1", "metadata.namespace is a number"),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nsint\n  namespace: 2024\n"}),
    Case("kind-is-a-list", {"definition": {"apiVersion": "v1", "kind": ["ConfigMap"], "metadata": {"name": "a"}}},
         ("definition", "kind is a list, not a string")),
    Case("apiversion-malformed", src("cm.yaml"),
         (file_path("cm.yaml"), 'apiVersion "apps/v1/beta" is not GROUP/VERSION'),
         files={"cm.yaml": "apiVersion: apps/v1/beta\nkind: Deployment\nmetadata:\n  name: a\n"}),
    Case("definition-is-a-number", {"definition": 5}, ("definition", "expected a mapping, a list or YAML text")),
    # --- missing fields ------------------------------------------------------------------------------------
    Case("missing-apiversion", src("cm.yaml"), (file_path("cm.yaml") + ", document 1", "apiVersion is missing"),
         files={"cm.yaml": "kind: ConfigMap\nmetadata:\n  name: a\n"}),
    Case("missing-kind", src("cm.yaml"), (file_path("cm.yaml") + ", document 1", "kind is missing"),
         files={"cm.yaml": "apiVersion: v1\nmetadata:\n  name: a\n"}),
    Case("missing-metadata", src("cm.yaml"), (file_path("cm.yaml") + ", document 1", "metadata.name is missing"),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n"}),
    Case("missing-name", src("cm.yaml"), (file_path("cm.yaml") + ", document 2", "metadata.name is missing"),
         files={"cm.yaml": CONFIGMAP.format(name="fine") + "---\napiVersion: v1\nkind: ConfigMap\n"
                                                            "metadata:\n  labels: {a: b}\n"}),
    Case("empty-name", {"definition": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ""}}]},
         ("definition item 1", "metadata.name is empty")),
    Case("generate-name", src("cm.yaml"),
         (file_path("cm.yaml") + ", document 1 (ConfigMap x)", "metadata.generateName is not supported"),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  generateName: x-\n"}),
    Case("unknown-kind", src("cr.yaml"),
         (file_path("cr.yaml") + ", document 1 (Nope a)", "unknown kind Nope in apiVersion example.invalid/v1",
          "add its CustomResourceDefinition"),
         files={"cr.yaml": "apiVersion: example.invalid/v1\nkind: Nope\nmetadata:\n  name: a\n"}),
    Case("kind-in-wrong-apiversion", src("deploy.yaml"),
         (file_path("deploy.yaml") + ", document 1 (Deployment web)", "unknown kind Deployment in apiVersion v1"),
         files={"deploy.yaml": "apiVersion: v1\nkind: Deployment\nmetadata:\n  name: web\n"}),
    Case("kind-in-unserved-version", src("deploy.yaml"),
         (file_path("deploy.yaml") + ", document 1 (Deployment web)", "apiVersion apps/v1beta1",
          "the server serves Deployment as apps/v1"),
         files={"deploy.yaml": "apiVersion: apps/v1beta1\nkind: Deployment\nmetadata:\n  name: web\n"}),
    # --- duplicates ------------------------------------------------------------------------------------------
    Case("duplicate-in-one-file", src("dup.yaml"),
         (file_path("dup.yaml") + ", document 2 (ConfigMap dup)",
          "the same object is also defined in " + file_path("dup.yaml") + ", document 1"),
         files={"dup.yaml": CONFIGMAP.format(name="dup") + "---\n" + CONFIGMAP.format(name="dup")}),
    Case("duplicate-across-files", src("a.yaml", "b.yaml"),
         (file_path("b.yaml") + ", document 1 (ConfigMap dup)", "also defined in " + file_path("a.yaml")),
         files={"a.yaml": CONFIGMAP.format(name="dup"), "b.yaml": CONFIGMAP.format(name="dup")}),
    Case("duplicate-with-explicit-default-namespace", src("a.yaml", "b.yaml"),
         (file_path("b.yaml") + ", document 1 (ConfigMap @NS@/dup)", "appears twice",
          "also in " + file_path("a.yaml")),
         files={"a.yaml": CONFIGMAP.format(name="dup"),
                "b.yaml": CONFIGMAP.format(name="dup").replace("name: dup", "name: dup\n  namespace: \"@NS@\"")}),
    Case("duplicate-between-src-and-definition", {**src("a.yaml"), "definition": [cm("dup")]},
         ("definition item 1 (ConfigMap dup)", "also defined in " + file_path("a.yaml")),
         files={"a.yaml": CONFIGMAP.format(name="dup")}),
    Case("duplicate-inside-a-list", src("list.yaml"),
         (file_path("list.yaml") + ", document 2, item 1 (ConfigMap dup)",
          "also defined in " + file_path("list.yaml") + ", document 1"),
         files={"list.yaml": CONFIGMAP.format(name="dup") + "---\napiVersion: v1\nkind: List\nitems:\n"
                             "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: dup\n"}),
    # --- the member label --------------------------------------------------------------------------------------
    Case("part-of-label-in-input", src("cm.yaml"),
         (file_path("cm.yaml") + ", document 1 (ConfigMap stolen)",
          'ApplySet label "applyset.kubernetes.io/part-of" already set in input data'),
         files={"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\n  labels:\n"
                           "    applyset.kubernetes.io/part-of: \"@GOODID@\"\n"}),
    Case("object-of-another-set", {"definition": [cm(n) for n in GOOD_MEMBERS] + [cm("theirs")]},
         ("already belong to another ApplySet", "ConfigMap @NS@/theirs", "adopt: true")),
    # --- the parent --------------------------------------------------------------------------------------------
    Case("parent-forged-id", {"parent": "forged", "definition": [cm("f1")], "guard": {"max_prune_percent": 100}},
         ('secrets./forged', "incorrect value for label", "@GOODID@", "impersonation")),
    Case("parent-forged-id-with-takeover", {"parent": "forged", "definition": [cm("f1")], "takeover": True,
                                            "guard": {"max_prune_percent": 100}},
         ('secrets./forged', "incorrect value for label", "@GOODID@")),
    Case("parent-of-helm", {"parent": "helm-release", "definition": [cm("h1")]},
         ("secrets./helm-release", 'managed by tooling "helm" instead of "applyset.kubernetes"', "takeover: true")),
    Case("parent-is-an-unrelated-secret", {"parent": "db-password", "definition": [cm("p1")]},
         ("secrets./db-password", 'missing required annotation "applyset.kubernetes.io/tooling"')),
    Case("parent-kind-deployment", {"parent": "deployments.apps/web", "definition": [cm("d1")]},
         ("apps/v1, Resource=deployments", "not permitted as an ApplySet parent")),
    Case("parent-kind-namespace", {"parent": "namespaces/@NS@", "namespace": None,
                                   "definition": [cm("n1", "@NS@")]},
         ("Resource=namespaces", "not permitted as an ApplySet parent")),
    Case("parent-crd-without-marker-label", {"parent": "things.@GROUP@/t", "definition": [cm("c1")]},
         ("parent kind Thing.@GROUP@", "not permitted as an ApplySet parent",
          "kubectl label crd things.@GROUP@ applyset.kubernetes.io/is-parent-type=true")),
    Case("parent-namespace-not-given", {"namespace": None, "definition": [cm("x", "@NS@")]},
         ("parent good", "namespace is required")),
    Case("parent-namespace-does-not-exist", {"namespace": "@NS@-missing", "definition": [cm("x")]},
         ("parent secrets./good", 'namespaces "@NS@-missing" not found')),
    Case("parent-blank-name", {"parent": "", "definition": [cm("x")]},
         ("parent", 'invalid parent reference ""', "name cannot be blank")),
    Case("parent-dict-without-name", {"parent": {"kind": "ConfigMap", "name": ""}, "definition": [cm("x")]},
         ("parent", "the parent has no name")),
    Case("parent-unknown-resource", {"parent": "widgets.nope.example/w", "definition": [cm("x")]},
         ("parent", 'the server has no resource "widgets" in group "nope.example"')),
    Case("parent-cluster-scoped-with-namespace", {"parent": {"kind": "Namespace", "name": "@NS@-p",
                                                             "namespace": "@NS@"}, "definition": [cm("x")]},
         ("parent Namespace @NS@-p", "cluster-scoped, so the parent cannot have a namespace")),
    Case("parent-is-a-list", {"parent": ["good"], "definition": [cm("x")]},
         ("parent", "parent must be a string or a dict")),
    # --- names, checked as the server checks them, before any request ------------------------------------------
    Case("namespace-option-invalid", {"namespace": "Tenant_A", "definition": [cm("x")]},
         ("option namespace", 'namespace "Tenant_A" is not a valid DNS-1123 label', 'e.g. "tenant-a"')),
    # An unreachable server: the error is still the name's, so no request was made.
    Case("namespace-option-invalid-before-any-request",
         {"namespace": "Tenant_A", "definition": [cm("x")], "host": "https://127.0.0.1:9"},
         ("option namespace", 'namespace "Tenant_A" is not a valid DNS-1123 label')),
    Case("parent-name-invalid", {"parent": "My_Set", "definition": [cm("x")]},
         ("option parent", 'name "My_Set" is not a valid DNS-1123 subdomain')),
    Case("member-namespace-invalid", {"definition": [cm("x", namespace="Tenant_A")]},
         ("definition item 1 (ConfigMap Tenant_A/x)", 'metadata.namespace "Tenant_A" is not a valid DNS-1123 label')),
    Case("member-service-name-invalid", {"definition": [{"apiVersion": "v1", "kind": "Service",
                                                         "metadata": {"name": "1web"}, "spec": {"ports": [{"port": 80}]}}]},
         ("definition item 1 (Service 1web)", 'metadata.name "1web" is not a valid DNS-1035 label',
          "a Service name must be a DNS-1035 label")),
    # --- options -----------------------------------------------------------------------------------------------
    Case("present-without-src-or-definition", {}, ("option state: state=present needs src or definition. Fix:",)),
    Case("src-and-definition-both-empty", {"src": [], "definition": []},
         ("ApplySet Secret @NS@/good", "the desired set is empty", "guard.allow_empty")),
    Case("empty-definition-text-without-prune", {"definition": "", "prune": False},
         ("ApplySet Secret @NS@/good", "no objects passed to apply")),
    Case("max-prune-percent-above-100", {"definition": [cm("x")], "guard": {"max_prune_percent": 101}},
         ("option guard.max_prune_percent: must be between 0 and 100. Fix:",)),
    Case("parallelism-zero", {"definition": [cm("x")], "parallelism": 0}, ("option parallelism: must be at least 1, not 0. Fix:",)),
    Case("state-not-a-choice", {"definition": [cm("x")], "state": "gone"}, ("state", "must be one of")),
    Case("unknown-option", {"definition": [cm("x")], "prun": False}, ("Unsupported parameters", "prun")),
    Case("empty-set-without-allow-empty", {"definition": []},
         ("ApplySet Secret @NS@/good", "the desired set is empty, so every member would be pruned (4 objects)",
          "guard.allow_empty: true")),
    Case("prune-over-the-guard-share", {"definition": [cm("good-1")]},
         ("ApplySet Secret @NS@/good", "pruning would delete 3 of the set's 4 objects",
          "more than guard.max_prune_percent (50%)")),
    Case("prune-over-the-guard-share-in-check-mode", {"definition": [cm("good-1")]},
         ("ApplySet Secret @NS@/good", "pruning would delete 3 of the set's 4 objects"), check=True),
    Case("prune-over-a-lowered-guard-share", {"definition": [cm(n) for n in GOOD_MEMBERS[:3]],
                                              "guard": {"max_prune_percent": 20}},
         ("pruning would delete 1 of the set's 4 objects", "guard.max_prune_percent (20%)")),
    # --- several problems at once: all are listed, each with its file ------------------------------------------
    Case("all-problems-listed-at-once", src("many"),
         ("3 problems in the input", "@DIR@/many/a.yaml, document 1", "@DIR@/many/b.yaml, document 1",
          "@DIR@/many/c.yaml, document 1", "apiVersion is missing", "generateName", "metadata.name is missing"),
         files={"many": lambda p: (p.mkdir(), (p / "a.yaml").write_text("kind: ConfigMap\nmetadata: {name: a}\n"),
                                   (p / "b.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n"
                                                             "metadata: {name: b, generateName: b-}\n"),
                                   (p / "c.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n"))}),
]

CASE_BY_ID = {c.id: c for c in CASES}
assert len(CASE_BY_ID) == len(CASES), "case ids must be unique"


def substitute(value, tokens):
    if isinstance(value, str):
        for token, text in tokens.items():
            value = value.replace(token, text)
        return value
    if isinstance(value, list):
        return [substitute(v, tokens) for v in value]
    if isinstance(value, dict):
        return {substitute(k, tokens): substitute(v, tokens) for k, v in value.items()}
    return value


def make_files(case, directory, tokens):
    directory.mkdir(parents=True)
    for name, content in case.files.items():
        path = directory / name
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(substitute(content, tokens))


def crd(group, kind, plural, labels=None):
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": labels or {}},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


# The cases are shared out over two "hosts" (both this machine) that the free strategy runs
# side by side: each task costs about a second of Ansible and Python start-up, mostly CPU.
WORKERS = 2


def worker(number):
    return f"w{number % WORKERS}"


def write_corpus_playbook(root, tokens, cases):
    """One task per case, each on one worker, registered; then each worker writes its results."""
    tasks = []
    for number, case in enumerate(cases):
        case_tokens = dict(tokens, **{"@DIR@": str(root / case.id)})
        make_files(case, root / case.id, case_tokens)
        args = {"parent": "good", "namespace": tokens["@NS@"]}
        args.update(substitute(case.args, case_tokens))
        args = {k: v for k, v in args.items() if v is not None}
        task = {"name": case.id, "applyset.kubernetes.applyset_apply": args, "register": f"case_{number}",
                "ignore_errors": True, "when": f"inventory_hostname == '{worker(number)}'"}
        if case.check:
            task["check_mode"] = True
        tasks.append(task)
    tasks.append({"name": "collect", "ansible.builtin.copy": {
        "dest": str(root / "results-{{ inventory_hostname }}.json"), "content": "{{ collected | to_json }}"},
        "vars": {"collected": {c.id: "{{ case_%d }}" % n for n, c in enumerate(cases)}}})
    play_dir = root / "play"  # the playbook's directory holds nothing else (see src-empty-entry)
    play_dir.mkdir()
    playbook = play_dir / "corpus.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False, "strategy": "free",
                                         "tasks": tasks}], sort_keys=False))
    inventory = root / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {
        worker(n): {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
        for n in range(WORKERS)}}}))
    return playbook, inventory


@dataclass
class CorpusRun:
    results: dict
    before: dict
    after: dict
    seconds: float
    tokens: dict
    root: Path


def selected_cases(session) -> list:
    """The cases this session runs: all of them, unless every test of the corpus that was selected is
    one case's (``-k`` picked a few, as docs/safety.md's example run does)."""
    wanted = set()
    for item in session.items:
        if "corpus" not in getattr(item, "fixturenames", ()):
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "case_id" not in params:
            return list(CASES)
        wanted.add(params["case_id"])
    return [case for case in CASES if case.id in wanted] or list(CASES)


@pytest.fixture(scope="module")
def corpus(request, cluster, kube, tmp_path_factory):
    """Set the stage once, run every selected case as one task of one playbook, snapshot around it."""
    cases = selected_cases(request.session)
    ns = f"bad-input-{secrets.token_hex(3)}"
    group = f"nomarker{secrets.token_hex(3)}.example.com"
    root = tmp_path_factory.mktemp("bad-input")
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd(group, "Thing", "things"))
    try:
        # The one good apply: the set every case runs against.
        rc, result, out = run_module(cluster, "applyset_apply",
                                     {"parent": "good", "namespace": ns, "definition": [cm(n) for n in GOOD_MEMBERS]})
        assert rc == 0, out
        good_id = result["applyset"]["id"]
        secrets_path = f"/api/v1/namespaces/{ns}/secrets"
        # An object of another set, a forged parent copying the good set's id, a parent that
        # helm owns, and an ordinary Secret whose name a user might pick as a parent by mistake.
        kube.create(f"/api/v1/namespaces/{ns}/configmaps",
                    cm("theirs", metadata={"labels": {PART_OF: expected_id("other", ns, "Secret", "")}}))
        kube.create(secrets_path, {"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": "forged", "labels": {ID: good_id},
            "annotations": {TOOLING: "applyset.kubernetes/0.1.0", KINDS: "ConfigMap", NAMESPACES: ""}}})
        kube.create(secrets_path, {"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": "helm-release", "labels": {ID: expected_id("helm-release", ns, "Secret", "")},
            "annotations": {TOOLING: "helm/v3.15.0", KINDS: "ConfigMap", NAMESPACES: ""}}})
        kube.create(secrets_path, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db-password"},
                                   "stringData": {"password": "s3cr3t-not-a-parent"}})
        wait_for(lambda: kube.request("GET", f"/apis/{group}/v1/things")[0] == 200, timeout=30, what="CRD served")

        tokens = {"@NS@": ns, "@GROUP@": group, "@GOODID@": good_id}
        playbook, inventory = write_corpus_playbook(root, tokens, cases)
        before = snapshot(kube, ns, crd_group=group)
        started = time.monotonic()
        # Pipelining spares each task the upload of the module to a temporary directory.
        env = ansible_env(cluster, ANSIBLE_INVENTORY=str(inventory), ANSIBLE_PIPELINING="True")
        proc = run_playbook(cluster, playbook, timeout=900, env=env)
        seconds = time.monotonic() - started
        after = snapshot(kube, ns, crd_group=group)
        results = {}
        for number, case in enumerate(cases):
            results_file = root / f"results-{worker(number)}.json"
            assert results_file.exists(), proc.stdout[-5000:] + proc.stderr[-5000:]
            results[case.id] = json.loads(results_file.read_text())[case.id]
        print(f"\nbad input corpus: {len(cases)} cases in {seconds:.1f}s", flush=True)
        yield CorpusRun(results=results, before=before, after=after, seconds=seconds, tokens=tokens, root=root)
    finally:
        kube.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.{group}")
        kube.delete(f"/api/v1/namespaces/{ns}")


def _params():
    for case in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
        yield pytest.param(case.id, id=case.id, marks=marks)


@pytest.mark.parametrize("case_id", list(_params()))
def test_bad_input_fails_names_the_culprit_and_changes_nothing(corpus, case_id):
    case = CASE_BY_ID[case_id]
    result = corpus.results[case_id]
    tokens = dict(corpus.tokens, **{"@DIR@": str(corpus.root / case.id)})
    message = result.get("msg", "")
    assert result.get("failed") is True, f"the task did not fail: {json.dumps(result)[:3000]}"
    assert result.get("changed") is False, message
    for expected in substitute(list(case.expect), tokens):
        assert expected in message, f"{expected!r} not in message:\n{message}"
    assert corpus.after == corpus.before, "the corpus changed the cluster"


def test_corpus_size(corpus):
    assert len(CASES) >= 40
    assert len(corpus.results) == len(CASES)


def test_kind_in_wrong_group_names_the_right_apiversion(corpus):
    message = corpus.results["kind-in-wrong-apiversion"]["msg"]
    assert "the server serves Deployment as apps/v1" in message, message
    assert "CustomResourceDefinition" not in message, message


def test_disallowed_builtin_parent_kind_suggests_no_crd_label(corpus):
    for case in ("parent-kind-deployment", "parent-kind-namespace"):
        message = corpus.results[case]["msg"]
        assert "kubectl label crd" not in message, message
