"""The modules' EXAMPLES run as written, and their RETURN documentation holds (issue 18).

Each module's EXAMPLES block is one play, run in order against the real control plane. Only
namespaces are substituted (``shop`` and ``legacy`` become fresh test namespaces). What the
examples presuppose is set up first and named here (``argocd``, which an example creates, becomes a
namespace that does not exist yet): the files under ``manifests/`` that their
``src`` points at, the custom resource parent kind ``applysets.example.com`` with its marker
label, and, for info and verify, the sets they look at (the shop, and a set kubectl made).

Every module result an example produces is then checked against the module's RETURN: each key
documented as ``returned: always`` is there, and each documented key that is there has the
documented type (one level into ``contains``).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from ansible_cli import REPO_ROOT, ansible_env, run_playbook
from helm_bins import helm_binaries
from kubeapi import wait_for
from test_faults import two_namespaces  # noqa: F401  (a fixture: the test's namespace and a second one)

MODULES = ("applyset_apply", "applyset_info", "applyset_verify")
CR_PARENT_CRD = "applysets.example.com"
TYPES = {"dict": dict, "list": list, "str": str, "bool": bool, "int": int, "float": (int, float)}


def module_doc_text(module: str, constant: str) -> str:
    tree = ast.parse((REPO_ROOT / "plugins" / "modules" / f"{module}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == constant:
            return node.value.value
    raise AssertionError(f"{module} has no {constant}")


def module_doc(module: str, constant: str):
    return yaml.safe_load(module_doc_text(module, constant))


# The marker for the rare module example that cannot run here (a chart repository on the network),
# a comment on the line right before its task:  # example: not run: <reason>
NOT_RUN_TASK = re.compile(r"^# example: not run: (.+)$")


def not_run_examples(module: str) -> dict:
    """{number of the example: why it is not run} for the examples marked not runnable."""
    reasons, number, pending = {}, -1, None
    for line in module_doc_text(module, "EXAMPLES").splitlines():
        marker = NOT_RUN_TASK.match(line)
        if marker:
            pending = marker.group(1)
        elif line.startswith("- "):
            number += 1
            if pending:
                reasons[number] = pending
            pending = None
    return reasons


def substitute(value, namespaces: dict):
    """The example with its namespaces replaced; nothing else changes."""
    if isinstance(value, dict):
        return {k: (namespaces.get(v, v) if k == "namespace" and isinstance(v, str) else substitute(v, namespaces))
                for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, namespaces) for v in value]
    return value


MIGRATE_JOB = """
    apiVersion: batch/v1
    kind: Job
    metadata: {name: migrate}
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: migrate, image: registry.example/migrate:1}]
    """


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


def example_files(root: Path, ns_a: str, ns_b: str) -> None:
    """The files the examples' ``src`` point at (inputs, not part of the examples)."""
    write(root / "manifests" / "shop" / "10-config.yaml", """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: shop-settings}
        data: {currency: EUR}
        """)
    write(root / "manifests" / "shop" / "20-web.yaml", """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          replicas: 1
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec:
              containers: [{name: web, image: registry.example/web:1}]
        """)
    write(root / "manifests" / "argocd" / "migrate.yaml", MIGRATE_JOB)
    # What helm template of the shop's chart would print (the take-over example's src).
    (root / "rendered").mkdir()
    (root / "rendered" / "shop.yaml").write_text("---\n".join(
        (root / "manifests" / "shop" / name).read_text() for name in ("10-config.yaml", "20-web.yaml")))
    write(root / "manifests" / "cache" / "cache.yaml", """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: cache-settings}
        data: {size: 64Mi}
        """)
    write(root / "manifests" / "platform" / "quotas.yaml", f"""
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: platform-a, namespace: {ns_a}}}
        data: {{team: a}}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: platform-b, namespace: {ns_b}}}
        data: {{team: b}}
        """)


@pytest.fixture
def new_namespace(kube, namespace):
    """A namespace that does not exist yet (an example creates it), removed afterwards."""
    name = f"{namespace[:50]}-n"
    yield name
    kube.delete(f"/api/v1/namespaces/{name}")
    kube.delete("/apis/example.com/v1/applysets/platform")


@pytest.fixture(scope="module")
def cr_parent_kind(kube):
    """The custom resource parent kind of the examples, with the marker label kubectl requires."""
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    created = kube.get(f"{path}/{CR_PARENT_CRD}") is None
    if created:
        kube.create(path, {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": CR_PARENT_CRD, "labels": {"applyset.kubernetes.io/is-parent-type": "true"}},
            "spec": {"group": "example.com", "scope": "Cluster",
                     "names": {"plural": "applysets", "singular": "applyset", "kind": "ApplySet"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
    # Served, and in discovery (which the modules read), not just its endpoint.
    wait_for(lambda: any(r.get("kind") == "ApplySet"
                         for r in (kube.get("/apis/example.com/v1") or {}).get("resources", [])),
             timeout=60, what="ApplySet CRD in discovery")
    yield
    if created:
        kube.delete(f"{path}/{CR_PARENT_CRD}")


def setup_tasks(module: str, ns: str) -> list:
    """What the examples of a module presuppose on the cluster, done through the module itself."""
    if module == "applyset_apply":
        return []
    return [
        {"name": "Setup: the shop set the examples look at",
         "applyset.kubernetes.applyset_apply": {"parent": "shop", "namespace": ns, "src": "manifests/shop/"}},
        {"name": "Setup: the platform set under a cluster-scoped custom resource parent",
         "applyset.kubernetes.applyset_apply": {
             "parent": {"apiVersion": "example.com/v1", "kind": "ApplySet", "metadata": {"name": "platform"}},
             "src": "manifests/platform/"}},
    ]


def kubectl_set(cluster, ns_legacy: str, tmp_path: Path) -> None:
    """A set kubectl made, for the examples that look at kubectl's sets."""
    manifest = tmp_path / "legacy.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "legacy-settings"}, "data": {"a": "1"}}))
    proc = subprocess.run(["kubectl", "apply", "-n", ns_legacy, "--server-side", "--prune",
                           "--applyset=configmaps/legacy", "-f", str(manifest)],
                          capture_output=True, text=True, timeout=120,
                          env=ansible_env(cluster, KUBECTL_APPLYSET="true"))
    assert proc.returncode == 0, proc.stderr


def example_play(module: str, namespaces: dict, out_file: Path) -> tuple[list, list]:
    """The play: setup, then every example in order, each module result registered."""
    tasks = setup_tasks(module, namespaces["shop"])
    registered = []
    not_run = not_run_examples(module)
    for number, task in enumerate(module_doc(module, "EXAMPLES")):
        if number in not_run:
            continue
        task = substitute(task, namespaces)
        if any(key.startswith("applyset.kubernetes.") for key in task):
            task.setdefault("register", f"example_{number}")
            registered.append((task["register"], task))
        tasks.append(task)
    results = "{" + ", ".join(f"'{name}': {name}" for name, _task in registered) + "}"
    tasks.append({"name": "Keep every example's result", "ansible.builtin.copy": {
        "content": "{{ " + results + " | to_nice_json }}", "dest": str(out_file), "mode": "0644"}})
    return [{"name": f"The EXAMPLES of {module}", "hosts": "localhost", "gather_facts": False,
             "tasks": tasks}], registered


def check_against_return(module: str, name: str, task: dict, result: dict) -> list:
    """Where the result does not look as RETURN says."""
    problems = []
    args = next(v for k, v in task.items() if k.startswith("applyset.kubernetes.")) or {}
    for key, doc in module_doc(module, "RETURN").items():
        returned = str(doc.get("returned", ""))
        expected = TYPES.get(doc.get("type"))
        if returned == "always" and key not in result:
            problems.append(f"{name}: {key} is documented as always returned but is missing")
        elif "O(query)" in returned and "query" in args and key not in result:
            problems.append(f"{name}: {key} is documented for query but is missing")
        if key not in result:
            continue
        value = result[key]
        if expected and not isinstance(value, expected):
            problems.append(f"{name}: {key} is {type(value).__name__}, documented as {doc.get('type')}")
            continue
        contains = doc.get("contains") or {}
        items = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
        for item in items:
            for sub, sub_doc in contains.items():
                sub_type = TYPES.get(sub_doc.get("type"))
                if isinstance(item, dict) and sub in item and item[sub] is not None and sub_type \
                        and not isinstance(item[sub], sub_type):
                    problems.append(f"{name}: {key}.{sub} is {type(item[sub]).__name__}, documented as "
                                    f"{sub_doc.get('type')}")
    return problems


@pytest.mark.parametrize("module", MODULES)
def test_the_examples_of_each_module_run_as_written_and_return_what_they_document(
        cluster, kube, two_namespaces, new_namespace, cr_parent_kind, tmp_path, module):
    ns, ns_legacy = two_namespaces
    example_files(tmp_path, ns, ns_legacy)
    kubectl_set(cluster, ns_legacy, tmp_path)
    namespaces = {"shop": ns, "legacy": ns_legacy, "argocd": new_namespace}
    play, registered = example_play(module, namespaces, tmp_path / "results.json")
    playbook = tmp_path / "examples.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    proc = run_playbook(cluster, playbook)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    results = json.loads((tmp_path / "results.json").read_text())
    problems = []
    for name, task in registered:
        problems += check_against_return(module, f"{task.get('name')} ({name})", task, results[name])
    assert not problems, "\n".join(problems)
    if module == "applyset_apply":  # the last example removes the shop
        assert kube.get(f"/api/v1/namespaces/{ns}/secrets/shop") is None


def test_the_return_docs_document_keys_with_known_types():
    for module in MODULES:
        for key, doc in module_doc(module, "RETURN").items():
            assert doc.get("type") in (*TYPES, "raw"), (module, key, doc.get("type"))
            assert doc.get("returned"), (module, key)


# ----- the YAML examples of README.md, docs/ and the role READMEs -----------------------------------------------

DOC_PAGES = ["README.md", *sorted(str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "docs").glob("*.md")),
             *sorted(str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "roles").glob("*/README.md"))]
# The marker for the rare example that cannot run here, on the line right before its fence:
#   <!-- example: not run: <reason> -->
NOT_RUN = re.compile(r"<!-- example: not run: (.+?) -->\s*$")
# Keys whose values are namespaces; and role variables whose set name defaults the namespace
# (the name stays, the namespace is given beside it).
NAMESPACE_KEYS = ("namespace",)
APP_KEYS = {"deploy_app": "deploy_namespace", "uninstall_app": "uninstall_namespace"}


def doc_examples(page: str) -> list:
    """(line, playbook-or-task-list, not-run reason) for each YAML block of tasks or plays."""
    text = (REPO_ROOT / page).read_text()
    found = []
    for match in re.finditer(r"^```yaml\n(.*?)^```", text, flags=re.S | re.M):
        try:
            data = yaml.safe_load(match.group(1))
        except yaml.YAMLError:
            continue
        if not (isinstance(data, list) and data and isinstance(data[0], dict)):
            continue  # a configuration file or a manifest, not something to run
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = NOT_RUN.search(before)
        found.append((text[:match.start()].count("\n") + 1, data, reason.group(1) if reason else None))
    return found


def substitute_names(value, names: dict):
    """Like ``substitute``, for namespaces, the namespaces that role set names default, and loops."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in NAMESPACE_KEYS and isinstance(item, str):
                out[key] = names.get(item, item)
            elif key in APP_KEYS and isinstance(item, str) and item in names:
                out[key] = item
                out.setdefault(APP_KEYS[key], names[item])
            elif key == "loop" and isinstance(item, list):
                out[key] = [names.get(i, i) if isinstance(i, str) else i for i in item]
            else:
                out[key] = substitute_names(item, names)
        return out
    if isinstance(value, list):
        return [substitute_names(v, names) for v in value]
    return value


def helm_on_path(bin_dir: Path, monkeypatch) -> None:
    """``helm`` on PATH, as on a user's machine: helm 4 as built for the tests (helm_bins.py)."""
    bin_dir.mkdir()
    (bin_dir / "helm").symlink_to(helm_binaries()["helm4"])
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


def doc_example_files(root: Path, names: dict) -> None:
    """Inputs the doc examples point at, besides example_files'."""
    # A chart kept beside the playbook (docs/helm-charts.md): podinfo's source, as the chart tests keep it.
    shutil.copytree(REPO_ROOT / "tests" / "integration" / "data" / "charts" / "src" / "podinfo", root / "charts" / "podinfo")
    # Literal paths (src: manifests/my-app/), and the looped ones by their namespace
    # (src: "manifests/{{ item }}/" with the namespace as item).
    for name, directory in (("my-app", "my-app"), ("common", "common"), ("looped", names.get("shop", "shop")),
                            ("billing", names.get("billing", "billing")), ("search", names.get("search", "search"))):
        write(root / "manifests" / directory / "settings.yaml", f"""
            apiVersion: v1
            kind: ConfigMap
            metadata: {{name: {name}-settings}}
            data: {{team: {name}}}
            """)
    write(root / "manifests" / "shop" / "30-migrate.yaml", MIGRATE_JOB)
    write(root / "templates" / "shop.yaml.j2", """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: shop-rendered}
        data: {from: "{{ 'a template' }}"}
        """)
    write(root / "templates" / "web.yaml.j2", """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: web-rendered}
        data: {replicas: "{{ replicas | default(shop_replicas) }}"}
        """)
    write(root / "overlays" / "prod" / "kustomization.yaml", """
        resources: [flags.yaml]
        """)
    write(root / "overlays" / "prod" / "flags.yaml", """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: prod-flags}
        data: {beta: "false"}
        """)


def page_playbook(page: str, names: dict) -> tuple[list, list]:
    """One playbook for a page: its examples in order (plays as they are, task lists in a play)."""
    plays, skipped = [], []
    for line, data, reason in doc_examples(page):
        if reason:
            skipped.append(f"{page}:{line}: {reason}")
            continue
        data = substitute_names(data, names)
        if "hosts" in data[0]:
            plays += data
        else:
            plays.append({"name": f"{page}:{line}", "hosts": "localhost", "gather_facts": False, "tasks": data})
    return plays, skipped


@pytest.fixture
def more_namespaces(kube, namespace):
    made = {name: f"{namespace[:48]}-{suffix}" for name, suffix in (("billing", "b"), ("search", "s"))}
    for created in made.values():
        kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": created}})
    yield made
    for created in made.values():
        kube.delete(f"/api/v1/namespaces/{created}")


@pytest.mark.parametrize("page", [p for p in DOC_PAGES if doc_examples(p)])
def test_the_yaml_examples_of_each_page_run_in_order(cluster, kube, two_namespaces, new_namespace, more_namespaces,
                                                     cr_parent_kind, tmp_path, monkeypatch, page):
    ns, ns_legacy = two_namespaces
    names = {"shop": ns, "legacy": ns_legacy, "argocd": new_namespace, "my-app": ns, **more_namespaces}
    example_files(tmp_path, ns, ns_legacy)
    doc_example_files(tmp_path, names)
    helm_on_path(tmp_path / "bin", monkeypatch)
    plays, skipped = page_playbook(page, names)
    print(f"\n{page}: {len(plays)} plays run; not run: {skipped or 'none'}")
    if not plays:
        pytest.skip(f"every example of {page} is marked not runnable: {skipped}")
    setup = {"name": "Setup: the shop set the examples look at", "hosts": "localhost", "gather_facts": False,
             "tasks": setup_tasks("applyset_info", ns)}
    playbook = tmp_path / "page.yml"
    playbook.write_text(yaml.safe_dump([setup, *plays], sort_keys=False))
    proc = run_playbook(cluster, playbook)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_examples_not_run_say_why_and_stay_rare():
    skipped = [s for page in DOC_PAGES for s in page_playbook(page, {})[1]]
    print("\n".join(skipped))
    total = sum(len(doc_examples(page)) for page in DOC_PAGES)
    assert len(skipped) * 4 <= total, skipped  # rare: at most a quarter
