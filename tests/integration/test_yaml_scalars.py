"""YAML scalars read as kubectl reads them, proven against kubectl on the live cluster.

Each scalar is written three ways, one document per file:

* as a value of a custom resource with an open schema (``spec: {v: SCALAR}``), where the server
  stores whatever type arrives;
* as a key there (``spec: {SCALAR: x}``);
* as a ConfigMap value (``data: {v: SCALAR}``), where the server takes strings only.

kubectl (``apply --server-side --dry-run=server``) and this collection (the core engine, applying
for real) read the same files. For every document both refuse it, or both make the server store
the same value. kubectl runs twice: once over all files (its per-object lines tell which it
accepts; with ``-o json`` it prints nothing when any object fails), then over the accepted files
with ``-o json`` for the objects. About 10 s.

The table in docs/kubectl-compatibility.md ("How YAML is read") is this test's result: the test
fails when the documented table differs from what it measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubeapi import wait_for
from kubectl_parity import KUBECTL

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "plugins" / "module_utils"))
from applyset import engine  # noqa: E402
from applyset.run.options import Options
from applyset.kube import client as core_kube  # noqa: E402
from applyset.inputs import manifests  # noqa: E402
from applyset.inputs import manifest_checks
from applyset.errors import ApplySetError  # noqa: E402

DOCS = REPO_ROOT / "docs" / "kubectl-compatibility.md"
TABLE_HEADING = "### The scalar table"

GROUP = "yamltest.applyset.example"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"scalars.{GROUP}"},
    "spec": {
        "group": GROUP, "scope": "Namespaced",
        "names": {"plural": "scalars", "singular": "scalar", "kind": "Scalar", "listKind": "ScalarList"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}],
    },
}

# Written as plain scalars unless quoted or tagged here. Booleans in YAML 1.1's spellings, ints in
# every base, floats, nulls, base 60, indicators, timestamps, tags, and numbers at the edges of
# 64 bits.
SCALARS = [
    "y", "Y", "yes", "No", "on", "OFF", "true", "False", "n", "tRUE",
    "~", "null", "NULL", "",
    "0o17", "0O17", "017", "08", "0x1F", "0b101", "-0b101", "1_000", "+12", "-0",
    "1e3", "1E3", "1.", ".5", "-.5", "+.5", "1_000.5", "3.14159265358979", "1e21", "1e-7",
    ".inf", "-.Inf", ".nan", "1e400",
    "9223372036854775807", "9223372036854775808", "18446744073709551616", "0xFFFFFFFFFFFFFFFF",
    "12:30", "1:30.5", "190:20:30",
    "=", "<<", "-", ".", "0.5.6", "1,000", "v1", "nginx:1.25", "100m", "64Mi",
    "2001-12-14", "2001-12-14T21:59:43Z",
    '"y"', "'0o17'", "!!str 1", '!!int "12"', "!!float 1", "!!binary aGVsbG8=", "!!bool yes", "!!int 1.5",
    "! 12", "!custom 12",
]


def documents(index: int, scalar: str) -> dict[str, str]:
    """file name -> text, for the three forms of one scalar."""
    head = f"apiVersion: {GROUP}/v1\nkind: Scalar\nmetadata:\n  name: {{name}}\n"
    return {
        f"s{index:02d}-value.yaml": head.format(name=f"v-{index}") + f"spec:\n  v: {scalar}\n",
        f"s{index:02d}-key.yaml": head.format(name=f"k-{index}") + f"spec:\n  {scalar}: x\n",
        f"s{index:02d}-cm.yaml": (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-{index}\n"
                                  f"data:\n  v: {scalar}\n"),
    }


def canonical(value):
    """JSON as the server holds it: ints within 64 bits, other numbers floats."""
    return json.loads(json.dumps(value), parse_int=lambda t: int(t) if -2 ** 63 <= int(t) < 2 ** 63 else float(t))


def stored_part(obj: dict):
    """What the document set: the spec of a Scalar, the data of a ConfigMap."""
    return canonical(obj.get("data") if obj["kind"] == "ConfigMap" else obj.get("spec"))


@pytest.fixture(scope="module")
def scalar_crd(kube):
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    if kube.get(f"{path}/{CRD['metadata']['name']}") is None:
        kube.create(path, CRD)
    wait_for(lambda: kube.get(f"/apis/{GROUP}/v1") is not None, what="the Scalar kind to be served")
    yield
    kube.delete(f"{path}/{CRD['metadata']['name']}")


def kubectl(cluster, namespace, files: list[Path], *extra) -> subprocess.CompletedProcess:
    args = [KUBECTL, "apply", "--server-side", "--dry-run=server", "-n", namespace, *extra]
    for path in files:
        args += ["-f", str(path)]
    return subprocess.run(args, capture_output=True, text=True, env=cluster.env(), timeout=300)


def kubectl_results(cluster, namespace, files: dict[str, Path]) -> dict[str, object]:
    """file name -> stored part, or None when kubectl refuses the document."""
    first = kubectl(cluster, namespace, list(files.values()))
    accepted_names = {line.split()[0].split("/")[-1] for line in first.stdout.splitlines()
                      if "serverside-applied" in line}
    by_object = {_object_name(name): name for name in files}
    accepted = [files[by_object[name]] for name in sorted(accepted_names)]
    results = dict.fromkeys(files)
    if accepted:
        second = kubectl(cluster, namespace, accepted, "-o", "json")
        assert second.returncode == 0, second.stderr
        listed = json.loads(second.stdout)
        for obj in listed.get("items", [listed]):
            results[by_object[obj["metadata"]["name"]]] = stored_part(obj)
    return results


def _object_name(file_name: str) -> str:
    index, form = file_name[1:3], file_name.split("-")[1].split(".")[0]
    return {"value": "v", "key": "k", "cm": "c"}[form] + f"-{int(index)}"


def our_results(cluster, kube, namespace, files: dict[str, Path]) -> dict[str, object]:
    """file name -> stored part, or None when we refuse the document (reading it or applying it)."""
    results = dict.fromkeys(files)
    loaded = {}
    for name, path in files.items():
        try:
            found = manifests.load_sources([str(path)])
            manifest_checks.validate(found)
        except ApplySetError:
            continue
        loaded[name] = found
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig}, parallelism=8)
    applied = set()
    # One set per kind: a failed apply holds back the later ranks of its run (ConfigMaps go
    # before custom resources), while all objects of one rank are attempted.
    for kind, suffix in (("ConfigMap", "-cm.yaml"), ("Scalar", ("-value.yaml", "-key.yaml"))):
        run = engine.Engine(client, f"scalars-{kind.lower()}", namespace, Options.from_settings(max_prune_percent=100))
        try:
            report = run.apply([m for name, found in loaded.items() if name.endswith(suffix) for m in found])
        except ApplySetError as err:  # values the server refuses fail their object, not the comparison
            report = err.report
        applied |= {o.name for o in report.objects if o.action in ("created", "configured", "unchanged")}
    for name in loaded:
        object_name = _object_name(name)
        if object_name not in applied:
            continue
        if name.endswith("-cm.yaml"):
            obj = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/{object_name}")
        else:
            obj = kube.get(f"/apis/{GROUP}/v1/namespaces/{namespace}/scalars/{object_name}")
        results[name] = stored_part(obj)
    return results


def shown(result, form: str) -> str:
    if result is None:
        return "refused"
    if form == "key":
        [key] = result
        return f"`{json.dumps(key)}`"
    return f"`{json.dumps(result['v'])}`"


def markdown_table(rows) -> str:
    lines = ["| written | as a value | as a key | as a ConfigMap value |", "|---|---|---|---|"]
    for scalar, value, key, configmap in rows:
        written = f"`{scalar}`" if scalar else "(empty)"
        lines.append(f"| {written} | {value} | {key} | {configmap} |")
    return "\n".join(lines)


def documented_table() -> str:
    """The table under TABLE_HEADING in the docs."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    table = []
    for line in lines[lines.index(TABLE_HEADING) + 1:]:
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    return "\n".join(table)


def test_scalars_read_as_kubectl_reads_them(cluster, kube, namespace, scalar_crd, tmp_path):
    assert len(SCALARS) >= 40
    files = {}
    for index, scalar in enumerate(SCALARS):
        for name, text in documents(index, scalar).items():
            (tmp_path / name).write_text(text, encoding="utf-8")
            files[name] = tmp_path / name
    started = time.monotonic()
    theirs = kubectl_results(cluster, namespace, files)
    kubectl_seconds = time.monotonic() - started
    started = time.monotonic()
    ours = our_results(cluster, kube, namespace, files)
    our_seconds = time.monotonic() - started

    differ, rows = [], []
    for index, scalar in enumerate(SCALARS):
        cells = []
        for form in ("value", "key", "cm"):
            name = f"s{index:02d}-{form}.yaml"
            if theirs[name] != ours[name]:
                differ.append(f"{scalar!r} as {form}: kubectl {theirs[name]!r}, ours {ours[name]!r}")
            cells.append(shown(theirs[name], "key" if form == "key" else "value"))
        rows.append((scalar, *cells))
    table = markdown_table(rows)
    print(f"\nYAML scalars: {len(SCALARS)} scalars, {len(files)} documents, "
          f"{len(files) - len(differ)} same, {len(differ)} differ "
          f"(kubectl {kubectl_seconds:.1f}s, ours {our_seconds:.1f}s)\n{table}", flush=True)
    assert not differ, "\n".join(differ)
    if os.environ.get("APPLYSET_WRITE_SCALAR_TABLE"):
        text = DOCS.read_text(encoding="utf-8")
        DOCS.write_text(text.replace(documented_table(), table), encoding="utf-8")
    assert documented_table() == table, "docs/kubectl-compatibility.md's scalar table is out of date " \
                                        "(APPLYSET_WRITE_SCALAR_TABLE=1 rewrites it)"
