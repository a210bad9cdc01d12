"""Input parity with ``kubectl apply --server-side``: every normalisation of kubectl's resource
builder, one case each, run through kubectl's server dry run and our check mode on the live
cluster.

A case is either the same for both (same verdict; for accepted input the same objects, as the
server would store them) or one of the differences docs/kubectl-compatibility.md ("Input
parity") lists, each with the verdicts the docs give. About 20 s.
"""

from __future__ import annotations

import json
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kubectl_parity import (KUBECTL_READS_JSON_THEN_YAML, Outcome, compared, context_kubeconfig, differences,
                            kubectl_dry_run, our_dry_run)

from applyset.kube import client as core_kube  # noqa: E402  (kubectl_parity puts it on the path)

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = REPO_ROOT / "docs" / "kubectl-compatibility.md"
OTHER_NS = "@OTHER@"


def cm(name, namespace=None, **data):
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"v": name}}


def cm_yaml(name, extra=""):
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{extra}data:\n  v: {name}\n"


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}}}


@dataclass
class Case:
    id: str
    files: dict  # relative path -> str or bytes
    kubectl_accepts: bool = True
    ours_accepts: bool = True
    recursive: bool = False  # kubectl -R (we always read directories recursively)
    paths: list = field(default_factory=list)  # what to pass; default: every file
    warning: str = ""  # a warning our run must give


CASES = [
    # --- List kinds -----------------------------------------------------------------------------
    Case("list-v1", {"l.yaml": json.dumps({"apiVersion": "v1", "kind": "List", "items": [cm("a"), cm("b")]})}),
    Case("list-typed-other-group", {"l.yaml": (
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleList\nitems:\n"
        "- metadata: {name: reader}\n  rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]\n"
        "- kind: Role\n  apiVersion: rbac.authorization.k8s.io/v1\n  metadata: {name: writer}\n  rules: []\n")}),
    Case("list-nested", {"l.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        cm("a"), {"apiVersion": "v1", "kind": "ConfigMapList", "items": [cm("b")]}]})},
         kubectl_accepts=False, ours_accepts=False),
    Case("list-items-null", {"l.yaml": "apiVersion: v1\nkind: List\nitems:\n---\n" + cm_yaml("after")},
         kubectl_accepts=False, ours_accepts=False),
    # --- documents ------------------------------------------------------------------------------
    Case("empty-and-comment-only-documents", {"d.yaml": (
        "---\n---\n# only a comment\n---\n" + cm_yaml("a") + "--- # trailing comment\n\n---\n"
        + cm_yaml("b") + "---#no space\n" + cm_yaml("c") + "...\n")}),
    Case("document-end-marker-hides-the-rest", {"d.yaml": cm_yaml("a") + "...\nthis: [is not read\n"}),
    Case("only-empty-documents", {"d.yaml": "---\n# nothing\n---\n"}, kubectl_accepts=False, ours_accepts=False),
    Case("separator-with-content", {"d.yaml": cm_yaml("a") + "--- !!map\n" + cm_yaml("b")},
         kubectl_accepts=False, ours_accepts=False),
    Case("directive-before-separator", {"d.yaml": "%YAML 1.1\n---\n" + cm_yaml("a")},
         kubectl_accepts=False, ours_accepts=False),
    Case("document-is-a-string", {"d.yaml": cm_yaml("a") + "---\njust text\n"}, kubectl_accepts=False,
         ours_accepts=False),
    Case("document-is-a-list", {"d.yaml": "- " + json.dumps(cm("a")) + "\n"}, kubectl_accepts=False,
         ours_accepts=False),
    # --- JSON -----------------------------------------------------------------------------------
    Case("json-file", {"a.json": json.dumps(cm("a"), indent="\t")}),
    Case("json-stream", {"a.json": json.dumps(cm("a")) + json.dumps(cm("b")) + "\n" + json.dumps(cm("c"))}),
    Case("json-then-yaml", {"a.json": json.dumps(cm("a")) + "\n---\n" + cm_yaml("b")},
         kubectl_accepts=KUBECTL_READS_JSON_THEN_YAML),
    Case("json-with-trailing-comma-is-yaml", {"a.json": '{"apiVersion": "v1", "kind": "ConfigMap", '
                                                        '"metadata": {"name": "a"},}'},
         kubectl_accepts=KUBECTL_READS_JSON_THEN_YAML),
    Case("yaml-in-a-json-file", {"a.json": cm_yaml("a")}),
    Case("json-in-a-yaml-file", {"a.yaml": json.dumps(cm("a"))}),
    # Whole floats reach the server as ints, as from kubectl (Go writes 1.0 as 1).
    Case("whole-floats-become-ints", {"d.json": json.dumps(DEPLOYMENT).replace('"replicas": 1', '"replicas": 1.0'),
                                      "d.yaml": json.dumps(DEPLOYMENT).replace('"replicas": 1', '"replicas": 1e0')
                                      .replace('"name": "web"', '"name": "web2"', 1)}),
    # --- encodings and whitespace -----------------------------------------------------------------
    Case("utf8-byte-order-mark", {"a.yaml": b"\xef\xbb\xbf" + cm_yaml("a").encode()}),
    Case("utf16-with-byte-order-mark", {"a.yaml": cm_yaml("a").encode("utf-16")}),
    Case("crlf-line-endings", {"a.yaml": cm_yaml("a", "  labels: {x: z}\n").replace("\n", "\r\n")
                               + "  w: |\r\n    one\r\n    two\r\n"}),
    Case("tab-inside-a-value", {"a.yaml": cm_yaml("a") + "  w: \"a\\tb\"\n  x: a\tb\n"}),
    Case("tab-indentation", {"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: a\n"},
         kubectl_accepts=False, ours_accepts=False),
    # Deliberate: kubectl replaces bytes that are not UTF-8 with U+FFFD; we refuse the file.
    Case("latin1-byte-in-a-comment", {"a.yaml": cm_yaml("a").encode() + b"# caf\xe9\n"}, ours_accepts=False),
    # --- YAML features --------------------------------------------------------------------------
    Case("merge-keys-in-order", {"a.yaml": cm_yaml("a", "  labels: &l {x: '1', y: '2'}\n")
                                 + "  <<: *l\n  y: over\n"}),
    Case("anchor-defined-twice", {"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: &m\n  name: a\n"
                                            "data: &m\n  v: x\nbinaryData: {}\n"}),
    Case("yaml-1.1-scalars", {"a.yaml": cm_yaml("a") + "  w: =\nimmutable: n\n"}),
    # Deliberate: kubectl keeps the last of two equal keys; we refuse.
    Case("duplicate-key", {"a.yaml": cm_yaml("a") + "  v: again\n"}, ours_accepts=False),
    # Deliberate: kubectl reads any document with items as a list and drops the object itself.
    Case("items-on-a-kind-that-is-no-list", {"a.yaml": json.dumps({**cm("a"), "items": [cm("b")]})},
         ours_accepts=False),
    # --- namespaces -----------------------------------------------------------------------------
    Case("namespace-defaulted", {"a.yaml": cm_yaml("a")}),
    Case("namespace-given", {"a.yaml": json.dumps(cm("a", namespace=OTHER_NS))}),
    Case("namespace-on-a-cluster-scoped-object", {"a.yaml": (
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: @CR@\n"
        "  namespace: kube-system\nrules: []\n")}, warning="metadata.namespace 'kube-system' ignored"),
    Case("invalid-namespace-name", {"a.yaml": json.dumps(cm("a", namespace="Tenant_A"))},
         kubectl_accepts=False, ours_accepts=False),
    Case("invalid-object-name", {"a.yaml": json.dumps(cm("Config_A"))}, kubectl_accepts=False, ours_accepts=False),
    # In favour of ours: the Namespace is created first, so its objects can be applied.
    Case("namespace-and-its-objects", {"a.yaml": (
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: @NEWNS@\n---\n" + json.dumps(cm("a", "@NEWNS@")))},
         kubectl_accepts=False),
    # --- files and directories ------------------------------------------------------------------
    Case("directory-extensions", {"d/a.yaml": cm_yaml("a"), "d/b.yml": cm_yaml("b"), "d/c.json": json.dumps(cm("c")),
                                  "d/skip.txt": "not: [yaml", "d/upper.YAML": "not: [yaml",
                                  "d/sub/e.yaml": cm_yaml("e")}, recursive=True, paths=["d"]),
    Case("explicit-file-of-any-extension", {"a.txt": cm_yaml("a")}),
    # Deliberate: we skip hidden files and directories (.git, editor backups); kubectl reads them.
    Case("hidden-file-in-a-directory", {"d/a.yaml": cm_yaml("a"), "d/.b.yaml": cm_yaml("b")}, paths=["d"],
         ours_accepts="objects differ"),
    # --- objects --------------------------------------------------------------------------------
    Case("generate-name", {"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: a-\n"},
         kubectl_accepts=False, ours_accepts=False),
    Case("unknown-field", {"a.yaml": cm_yaml("a") + "bogus: 1\n"}, kubectl_accepts=False, ours_accepts=False),
    Case("unknown-kind", {"a.yaml": "apiVersion: example.invalid/v1\nkind: Nope\nmetadata:\n  name: a\n"},
         kubectl_accepts=False, ours_accepts=False),
]


def materialise(case: Case, root: Path, tokens: dict) -> list[Path]:
    directory = root / case.id
    for name, content in case.files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            for token, value in tokens.items():
                content = content.replace(token, value)
            path.write_text(content, encoding="utf-8", newline="")
        else:
            path.write_bytes(content)
    return [directory / p for p in case.paths] if case.paths else sorted(directory / n for n in case.files)


@pytest.fixture(scope="module")
def other_namespace(kube):
    name = f"t-parity-other-{secrets.token_hex(3)}"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    kube.delete(f"/api/v1/namespaces/{name}")


def test_input_parity_with_kubectl(cluster, namespace, other_namespace, tmp_path):
    tokens = {OTHER_NS: other_namespace, "@CR@": f"{namespace}-reader", "@NEWNS@": f"{namespace}-new"}
    kubeconfig = context_kubeconfig(cluster, namespace, tmp_path)
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig}, parallelism=8)

    def run(case: Case) -> tuple[Case, Outcome, Outcome]:
        paths = materialise(case, tmp_path, tokens)
        theirs = kubectl_dry_run(kubeconfig, paths, recursive=case.recursive)
        ours = our_dry_run(client, namespace, paths, parent=f"parity-{case.id}"[:63])
        return case, theirs, ours

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, CASES))
    seconds = time.monotonic() - started

    problems, lines = [], []
    for case, theirs, ours in results:
        objects_differ = theirs.accepted and ours.accepted and differences(theirs, ours)
        expected_ours = case.ours_accepts
        if expected_ours == "objects differ":
            ok = theirs.accepted and ours.accepted and objects_differ
        else:
            ok = theirs.accepted == case.kubectl_accepts and ours.accepted == expected_ours and not objects_differ
        if case.warning and not any(case.warning in w for w in ours.warnings):
            ok = False
        if theirs.accepted and ours.accepted and not compared(theirs, ours) and case.id != "namespace-and-its-objects":
            ok = False  # nothing was compared: the test would prove nothing
        verdict = lambda o: "accepts" if o.accepted else "refuses"  # noqa: E731
        lines.append(f"{'ok ' if ok else 'BAD'} {case.id}: kubectl {verdict(theirs)}, ours {verdict(ours)}"
                     + (f"; objects differ: {objects_differ}" if objects_differ else ""))
        if not ok:
            problems.append(f"{case.id}: kubectl {verdict(theirs)} ({theirs.error[:300]}), "
                            f"ours {verdict(ours)} ({ours.error[:300]}); {objects_differ or ''} {ours.warnings}")
    same = sum(1 for case, t, o in results if t.accepted == o.accepted and not (
        t.accepted and differences(t, o)))
    print(f"\ninput parity: {len(CASES)} cases in {seconds:.1f}s, {same} same as kubectl, "
          f"{len(CASES) - same} documented differences\n" + "\n".join(lines), flush=True)
    assert not problems, "\n".join(problems)


def test_every_case_is_in_the_docs():
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Input parity"):]
    missing = [case.id for case in CASES if f"`{case.id}`" not in section]
    assert not missing, f"cases missing from docs/kubectl-compatibility.md, Input parity: {missing}"
