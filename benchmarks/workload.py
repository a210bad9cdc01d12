"""Workload generator: N objects over 11 kinds in 1 or more namespaces, in four variants.

Variants (the scenario chain of one benchmark repetition):

* ``base``      - N objects; every object carries the annotation ``bench.example.com/rev: "1"``.
* ``changed``   - the same N objects; every tenth object (``i % 10 == 9``) changed: rev "2" and a
                  changed field in its body (10%).
* ``pruned``    - ``changed`` without the objects with ``i % 10 in {0, 3, 6}`` (30% removed); the
                  remaining 70% are identical to ``changed``, so applying ``pruned`` is a no-op for
                  them plus a prune of the removed 30%.

Object ``i`` gets kind ``KINDS[i % 11]`` and namespace ``namespaces[i % len(namespaces)]``, so the
changed and removed objects are spread over every kind and namespace. Every object names its
namespace explicitly, so each tool reads exactly the same documents.

Kinds: ConfigMap, Secret, ServiceAccount, Service (headless: the local control plane's service
range is a /24), Role, RoleBinding, Deployment (replicas 0: the benchmark measures apply tools, not
the scheduler), NetworkPolicy, PodDisruptionBudget, Ingress, and Widget, a namespaced custom
resource of the CRD ``widgets.bench.example.com`` that the harness installs once beforehand (kubectl
cannot apply a CRD and its custom resources in one run).
"""

from __future__ import annotations

import base64
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import yaml

BENCH_GROUP = "bench.example.com"
REV_ANNOTATION = f"{BENCH_GROUP}/rev"

KINDS = (
    "ConfigMap", "Secret", "ServiceAccount", "Service", "Role", "RoleBinding", "Deployment",
    "NetworkPolicy", "PodDisruptionBudget", "Ingress", "Widget",
)
SHORT = {
    "ConfigMap": "cm", "Secret": "secret", "ServiceAccount": "sa", "Service": "svc", "Role": "role",
    "RoleBinding": "rb", "Deployment": "deploy", "NetworkPolicy": "netpol", "PodDisruptionBudget": "pdb",
    "Ingress": "ing", "Widget": "widget",
}
API_VERSION = {
    "ConfigMap": "v1", "Secret": "v1", "ServiceAccount": "v1", "Service": "v1",
    "Role": "rbac.authorization.k8s.io/v1", "RoleBinding": "rbac.authorization.k8s.io/v1",
    "Deployment": "apps/v1", "NetworkPolicy": "networking.k8s.io/v1", "PodDisruptionBudget": "policy/v1",
    "Ingress": "networking.k8s.io/v1", "Widget": f"{BENCH_GROUP}/v1",
}
PLURAL = {
    "ConfigMap": "configmaps", "Secret": "secrets", "ServiceAccount": "serviceaccounts", "Service": "services",
    "Role": "roles", "RoleBinding": "rolebindings", "Deployment": "deployments",
    "NetworkPolicy": "networkpolicies", "PodDisruptionBudget": "poddisruptionbudgets", "Ingress": "ingresses",
    "Widget": "widgets",
}
VARIANTS = ("base", "changed", "pruned")
ALL_KINDS = KINDS


@contextmanager
def kinds(which: str):
    """Within: the workload of ``which`` ("all": the 11 kinds; "cm": ConfigMaps only, the shape of
    issue 30's latency targets)."""
    global KINDS
    KINDS = ALL_KINDS if which == "all" else ("ConfigMap",)
    try:
        yield
    finally:
        KINDS = ALL_KINDS

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{BENCH_GROUP}"},
    "spec": {
        "group": BENCH_GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
        }],
    },
}

# A cluster-scoped parent type for sets that span namespaces (kubectl needs one; ours may use it).
APPLYSET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"applysets.{BENCH_GROUP}", "labels": {"applyset.kubernetes.io/is-parent-type": "true"}},
    "spec": {
        "group": BENCH_GROUP,
        "scope": "Cluster",
        "names": {"plural": "applysets", "singular": "applyset", "kind": "ApplySet", "listKind": "ApplySetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        }],
    },
}


def changed(i: int) -> bool:
    return i % 10 == 9


def removed(i: int) -> bool:
    return i % 10 in (0, 3, 6)


def kind_of(i: int) -> str:
    return KINDS[i % len(KINDS)]


def name_of(i: int) -> str:
    return f"{SHORT[kind_of(i)]}-{i:05d}"


def make_object(i: int, namespace: str, rev: int) -> dict:
    """Object ``i`` at revision ``rev`` (1 = base, 2 = changed)."""
    kind = kind_of(i)
    name = name_of(i)
    app = f"app-{i % 50:02d}"
    meta = {
        "name": name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "bench"},
        "annotations": {REV_ANNOTATION: str(rev)},
    }
    obj = {"apiVersion": API_VERSION[kind], "kind": kind, "metadata": meta}
    obj.update(_BODY[kind](i, rev, app, name, namespace))
    return obj


# What each kind carries besides its metadata, at revision ``rev``: fn(i, rev, app, name, namespace).

def _configmap(i, rev, app, name, namespace) -> dict:
    return {"data": {
        "app.properties": "\n".join(f"key{k}=value-{i}-{k}-{rev}" for k in range(8)),
        "LOG_LEVEL": "debug" if rev > 1 else "info",
        "replicas": str(i % 7),
    }}


def _secret(i, rev, app, name, namespace) -> dict:
    return {"type": "Opaque", "data": {
        "username": base64.b64encode(f"user-{i}".encode()).decode(),
        "password": base64.b64encode(f"password-{i}-rev{rev}".encode()).decode(),
    }}


def _service_account(i, rev, app, name, namespace) -> dict:
    return {"automountServiceAccountToken": rev > 1}


def _service(i, rev, app, name, namespace) -> dict:
    return {"spec": {
        "clusterIP": "None",
        "selector": {"app.kubernetes.io/name": app},
        "ports": [{"name": "http", "port": 80, "targetPort": 8080 + (rev - 1), "protocol": "TCP"}],
    }}


def _role(i, rev, app, name, namespace) -> dict:
    verbs = ["get", "list", "watch"] + (["update"] if rev > 1 else [])
    return {"rules": [
        {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": verbs},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]},
    ]}


def _role_binding(i, rev, app, name, namespace) -> dict:
    subjects = [{"kind": "ServiceAccount", "name": f"sa-{i:05d}", "namespace": namespace}]
    if rev > 1:
        subjects.append({"kind": "ServiceAccount", "name": "default", "namespace": namespace})
    return {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"role-{i:05d}"},
            "subjects": subjects}


def _deployment(i, rev, app, name, namespace) -> dict:
    return {"spec": {
        "replicas": 0,
        "selector": {"matchLabels": {"app.kubernetes.io/name": app, "bench/i": str(i)}},
        "template": {
            "metadata": {"labels": {"app.kubernetes.io/name": app, "bench/i": str(i)}},
            "spec": {"containers": [{
                "name": "app",
                "image": f"registry.example.com/bench/app:1.{rev}.0",
                "ports": [{"containerPort": 8080}],
                "env": [{"name": "INDEX", "value": str(i)}, {"name": "REV", "value": str(rev)}],
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
            }]},
        },
    }}


def _network_policy(i, rev, app, name, namespace) -> dict:
    return {"spec": {
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
        "policyTypes": ["Ingress"],
        "ingress": [{"ports": [{"protocol": "TCP", "port": 8080 + (rev - 1)}]}],
    }}


def _pod_disruption_budget(i, rev, app, name, namespace) -> dict:
    return {"spec": {"maxUnavailable": rev, "selector": {"matchLabels": {"app.kubernetes.io/name": app}}}}


def _ingress(i, rev, app, name, namespace) -> dict:
    return {"spec": {"rules": [{
        "host": f"{name}.bench.example.com",
        "http": {"paths": [{
            "path": "/" if rev == 1 else "/v2", "pathType": "Prefix",
            "backend": {"service": {"name": f"svc-{i:05d}", "port": {"number": 80}}},
        }]},
    }]}}


def _widget(i, rev, app, name, namespace) -> dict:
    return {"spec": {"size": i % 9, "color": "blue" if rev == 1 else "green", "tags": ["bench", app]}}


_BODY = {"ConfigMap": _configmap, "Secret": _secret, "ServiceAccount": _service_account, "Service": _service,
         "Role": _role, "RoleBinding": _role_binding, "Deployment": _deployment, "NetworkPolicy": _network_policy,
         "PodDisruptionBudget": _pod_disruption_budget, "Ingress": _ingress, "Widget": _widget}


def objects(n: int, namespaces: list[str], variant: str) -> list[dict]:
    out = []
    for i in range(n):
        if variant == "pruned" and removed(i):
            continue
        rev = 2 if variant in ("changed", "pruned") and changed(i) else 1
        out.append(make_object(i, namespaces[i % len(namespaces)], rev))
    return out


def removed_refs(n: int, namespaces: list[str]) -> list[dict]:
    """What the prune scenario removes, as (apiVersion, plural, namespace, name) for the ceiling client."""
    return [{"apiVersion": API_VERSION[kind_of(i)], "plural": PLURAL[kind_of(i)],
             "namespace": namespaces[i % len(namespaces)], "name": name_of(i)}
            for i in range(n) if removed(i)]


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump_docs(docs: list[dict]) -> str:
    """Block-style YAML, as people write manifests."""
    return yaml.dump_all(docs, Dumper=_DUMPER, sort_keys=False, default_flow_style=False, explicit_start=True)


def write_variant(directory: Path, docs: list[dict], *, single_file: bool = False, extra: dict | None = None) -> None:
    """Write ``docs`` as one multi-document YAML file per kind (or one ``all.yaml``)."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    if single_file:
        (directory / "all.yaml").write_text(_dump_docs(docs))
    else:
        by_kind: dict[str, list[dict]] = {}
        for d in docs:
            by_kind.setdefault(d["kind"], []).append(d)
        for kind, group in sorted(by_kind.items()):
            (directory / f"{PLURAL[kind]}.yaml").write_text(_dump_docs(group))
    for fname, doc in (extra or {}).items():
        (directory / fname).write_text(_dump_docs([doc]))


def manifest_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())


if __name__ == "__main__":  # a quick look: python benchmarks/workload.py 100 /tmp/wl
    import sys

    n, target = int(sys.argv[1]), Path(sys.argv[2])
    for v in VARIANTS:
        write_variant(target / v, objects(n, ["bench-0", "bench-1", "bench-2"], v))
    print(f"wrote {n} objects x {len(VARIANTS)} variants to {target} ({os.path.getsize(target / 'base' / 'configmaps.yaml')} bytes of ConfigMaps)")
