"""Conformance corpus: manifests nobody here wrote, read by kubectl and by us on the live cluster.

The inputs are read at test time from the Go module cache, which the control plane build fills:

* kubectl's own test inputs in k8s.io/kubernetes (``hack/testdata/`` and ``test/fixtures/``):
  every ``*.yaml``, ``*.yml`` and ``*.json`` file on its own, and the directories kubectl's tests
  pass whole (``-R``);
* kwok's ``kustomize/`` tree (sigs.k8s.io/kwok): every file on its own, and every kustomization
  built with ``kubectl kustomize`` (what ``kubectl apply -k`` applies).

For each input, ``kubectl apply --server-side --dry-run=server`` and our check mode (the core
engine with ``dry_run``) run on the same cluster (tests/integration/kubectl_parity.py). Inputs
that kubectl refuses for want of something this cluster lacks (a kind it does not serve, a
namespace that does not exist) are classed as such. The target: the same verdict as kubectl on at
least 98 % of the inputs kubectl accepts, and the same objects for those both accept. Every
difference must be listed in docs/kubectl-compatibility.md ("Conformance corpus"). Runs with 4
workers, about 1 minute; the figures are printed.
"""

from __future__ import annotations

import glob
import os
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubectl_parity import KUBECTL, compared, context_kubeconfig, differences, kubectl_dry_run, our_dry_run

from applyset.kube import client as core_kube  # noqa: E402  (kubectl_parity puts it on the path)

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = REPO_ROOT / "docs" / "kubectl-compatibility.md"
EXTENSIONS = (".yaml", ".yml", ".json")
KUBERNETES = "k8s.io/kubernetes@v1.34.4"
# Directories kubectl's own tests apply whole (hack/testdata), read recursively.
WHOLE_DIRECTORIES = ("recursive/rc", "recursive/pod", "recursive/deployment", "prune", "prune-reap",
                     "sorted-pods", "null-propagation", "diff", "filter", "CRD")


def module_cache() -> Path:
    try:
        found = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        found = ""
    return Path(found or Path.home() / "go" / "pkg" / "mod")


@dataclass
class Input:
    name: str  # as listed in the docs: module-relative path
    paths: list
    recursive: bool = False


def corpus_inputs(tmp_path: Path) -> tuple[list[Input], dict]:
    cache = module_cache()
    kubernetes = cache / KUBERNETES
    kwoks = sorted(glob.glob(str(cache / "sigs.k8s.io" / "kwok@v*")))
    if not kubernetes.is_dir() or not kwoks:
        pytest.skip(f"the Go module cache ({cache}) lacks {KUBERNETES} or sigs.k8s.io/kwok: "
                    "run the control plane build (hack/local-cluster build) first")
    kwok = Path(kwoks[-1])
    sources = {"kubernetes": KUBERNETES, "kwok": kwok.name}
    inputs = []
    for root in (kubernetes / "hack" / "testdata", kubernetes / "test" / "fixtures"):
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in EXTENSIONS:
                inputs.append(Input(f"{KUBERNETES}/{path.relative_to(kubernetes)}", [path]))
    for directory in WHOLE_DIRECTORIES:
        path = kubernetes / "hack" / "testdata" / directory
        inputs.append(Input(f"{KUBERNETES}/hack/testdata/{directory}/ (whole)", [path], recursive=True))
    for path in sorted((kwok / "kustomize").rglob("*")):
        if path.is_file() and path.suffix in EXTENSIONS and path.name != "kustomization.yaml":
            inputs.append(Input(f"{kwok.name}/{path.relative_to(kwok)}", [path]))
    for kustomization in sorted((kwok / "kustomize").rglob("kustomization.yaml")):
        directory = kustomization.parent
        built = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
        if built.returncode != 0:
            continue  # kustomize itself refuses it: not an input for apply
        target = tmp_path / "kustomize" / f"{directory.relative_to(kwok).as_posix().replace('/', '-')}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(built.stdout, encoding="utf-8")
        inputs.append(Input(f"{kwok.name}/{directory.relative_to(kwok)}/ (kubectl kustomize)", [target]))
    return inputs, sources


@pytest.fixture(scope="module")
def corpus_crds(cluster):
    """The CRDs the corpus itself holds (kwok's, and the examples in hack/testdata/CRD), installed
    for real first, so that their custom resources are compared instead of classed as lacking."""
    cache = module_cache()
    files = sorted(glob.glob(str(cache / "sigs.k8s.io" / "kwok@v*" / "kustomize" / "crd" / "bases" / "*.yaml")))
    files += sorted(glob.glob(str(cache / KUBERNETES / "hack" / "testdata" / "CRD" / "example-crd-1-*scoped.yaml")))
    files += sorted(glob.glob(str(cache / KUBERNETES / "hack" / "testdata" / "CRD" / "example-crd-1-namespaced.yaml")))
    if not files:
        yield
        return
    args = [arg for path in files for arg in ("-f", path)]
    env = cluster.env()
    subprocess.run([KUBECTL, "apply", "--server-side", "--field-manager=corpus-setup", *args],
                   check=True, capture_output=True, env=env, timeout=120)
    subprocess.run([KUBECTL, "wait", "--for=condition=established", "--timeout=60s", *args],
                   check=True, capture_output=True, env=env, timeout=90)
    yield
    subprocess.run([KUBECTL, "delete", "--ignore-not-found", "--wait=false", *args], capture_output=True,
                   env=env, timeout=120)


def documented_differences() -> str:
    text = DOCS.read_text(encoding="utf-8")
    return text[text.index("## Conformance corpus"):]


def test_corpus_same_verdict_as_kubectl(cluster, namespace, corpus_crds, tmp_path):
    inputs, sources = corpus_inputs(tmp_path)
    kubeconfig = context_kubeconfig(cluster, namespace, tmp_path)
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig}, parallelism=8)

    def run(numbered):
        number, item = numbered
        theirs = kubectl_dry_run(kubeconfig, item.paths, recursive=item.recursive)
        ours = our_dry_run(client, namespace, item.paths, parent=f"corpus-{number}")
        return item, theirs, ours

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, enumerate(inputs)))
    seconds = time.monotonic() - started

    classes = Counter()
    listed = []  # (input, what differs)
    objects_compared = 0
    verbose = os.environ.get("APPLYSET_CORPUS_VERBOSE")
    for item, theirs, ours in results:
        if verbose:
            print(f"  {item.name}: kubectl {'accepts' if theirs.accepted else 'refuses: ' + theirs.error[-150:]}; "
                  f"ours {'accepts' if ours.accepted else 'refuses: ' + ours.error[-150:]}".replace("\n", " "))
        if theirs.accepted:
            if not ours.accepted:
                classes["kubectl accepts, ours refuses"] += 1
                listed.append((item.name, f"ours refuses: {ours.error.splitlines()[-1][:200]}"))
                continue
            objects_compared += compared(theirs, ours)
            found = differences(theirs, ours)
            if found:
                classes["both accept, objects differ"] += 1
                listed.append((item.name, "objects differ: " + "; ".join(found)[:300]))
            else:
                classes["both accept, same objects"] += 1
        elif theirs.lacks:
            classes[f"kubectl needs {theirs.lacks}"] += 1
        elif ours.accepted:
            classes["kubectl refuses, ours accepts"] += 1
            listed.append((item.name, f"kubectl refuses: {theirs.error.splitlines()[-1][:200]}"))
        else:
            classes["both refuse"] += 1
    accepted_by_kubectl = sum(1 for _i, theirs, _o in results if theirs.accepted)
    same_verdict = accepted_by_kubectl - classes["kubectl accepts, ours refuses"]
    share = same_verdict / accepted_by_kubectl if accepted_by_kubectl else 0.0
    print(f"\nconformance corpus ({sources['kubernetes']}, {sources['kwok']}; reference {Path(KUBECTL).name}): "
          f"{len(inputs)} inputs in {seconds:.1f}s; kubectl accepts {accepted_by_kubectl}, "
          f"ours gives the same verdict on {same_verdict} ({share:.1%}); {objects_compared} objects compared",
          flush=True)
    for name, count in sorted(classes.items()):
        print(f"  {count:4d}  {name}")
    for name, what in listed:
        print(f"  differs: {name}: {what}")
    assert accepted_by_kubectl >= 50, "too few accepted inputs to mean anything"
    assert share >= 0.98
    undocumented = [name for name, _what in listed if f"`{name}`" not in documented_differences()]
    assert not undocumented, f"differences missing from docs/kubectl-compatibility.md: {undocumented}"
    if os.environ.get("APPLYSET_CORPUS_STRICT"):
        assert not listed
