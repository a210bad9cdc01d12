"""What a wait costs, and how soon a gate opens: the figures of issue 38 (waits that watch).

    .venv/bin/python benchmarks/watch_waits.py --kubeconfig K [--tree DIR] [--objects 1,100]
        [--ready-after 30] [--timeout 60] [--gates 5]

``--tree`` is a checkout whose ``plugins/module_utils`` is measured (default: this one), so the
same script measures main before the change (``git archive 4ce2e4b plugins/module_utils | tar
-x -C /tmp/before`` then ``--tree /tmp/before``) and after. Against the cluster of the
kubeconfig (hack/local-cluster), in a namespace of its own, with a CRD of its own:

1. ``wait_ready`` with ``--timeout`` on N custom resources (``--objects``) that a second client
   makes Ready after ``--ready-after`` seconds: the requests the waiting client sent, the wall
   time, and how long after the last status write the wait returned.
2. An ordered set (a custom resource, and a ConfigMap that ``depends-on`` it), applied by the
   engine; the custom resource is made Ready a second after it exists: the time from that write to
   the ConfigMap's existence, seen by a GET every 10 ms (``--gates`` runs, median and max).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path


def load(tree: Path):
    sys.path.insert(0, str(tree / "plugins" / "module_utils"))
    from applyset import engine
    from applyset.inputs import manifests
    from applyset.kube import client as kube
    from applyset.run.options import Options
    from applyset.spec import GroupKind
    from applyset.wait import waiting
    return engine, manifests, kube, Options, GroupKind, waiting


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--kubeconfig", required=True)
    args.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    args.add_argument("--objects", default="1,100")
    args.add_argument("--ready-after", type=float, default=30.0)
    args.add_argument("--timeout", type=float, default=60.0)
    args.add_argument("--gates", type=int, default=5)
    opts = args.parse_args()
    engine, manifests, kube, Options, GroupKind, waiting = load(opts.tree)
    auth = {"kubeconfig": opts.kubeconfig}
    writer = kube.connect(auth)
    group = f"b{uuid.uuid4().hex[:8]}.bench.example.com"
    namespace = f"watch-bench-{uuid.uuid4().hex[:6]}"
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    writer.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    writer.request("POST", crds, body=_crd(group))
    try:
        res = _discovered(kube.connect(auth), GroupKind, group)
        print(f"tree: {opts.tree}")
        for count in [int(n) for n in opts.objects.split(",")]:
            _wait_figures(kube, waiting, writer, auth, res, namespace, group, count, opts)
        _gate_figures(engine, manifests, kube, Options, writer, auth, namespace, group, opts.gates)
    finally:
        writer.request("DELETE", f"{crds}/widgets.{group}")
        writer.request("DELETE", f"/api/v1/namespaces/{namespace}")
    return 0


def _crd(group: str) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def _discovered(client, GroupKind, group):
    for _ in range(100):
        res = client.discover().for_group_kind(GroupKind(group, "Widget"))
        if res is not None:
            return res
        time.sleep(0.2)
    raise SystemExit("the CRD was not served")


def _widget(group, name, ready, annotations=None):
    return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name, "annotations": annotations or {}},
            "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "Bench"}]}}


def _set_ready(writer, namespace, group, names):
    for name in names:
        writer.request("PATCH", f"/apis/{group}/v1/namespaces/{namespace}/widgets/{name}",
                       body={"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Bench"}]}},
                       content_type="application/merge-patch+json", retry=True)


def _wait_figures(kube, waiting, writer, auth, res, namespace, group, count, opts):
    names = [f"w{count}-{i}" for i in range(count)]
    for name in names:
        writer.request("POST", f"/apis/{group}/v1/namespaces/{namespace}/widgets", body=_widget(group, name, "False"))
    done: dict = {}

    def later():
        time.sleep(opts.ready_after)
        _set_ready(writer, namespace, group, names)
        done["at"] = time.monotonic()

    thread = threading.Thread(target=later, daemon=True)
    client = kube.connect(auth)
    client.discover()
    before = client.requests_sent
    started = time.monotonic()
    thread.start()
    waiting.wait_ready(client, [(res, namespace, n) for n in names], timeout=opts.timeout)
    ended = time.monotonic()
    thread.join()
    print(f"wait on {count} custom resources, ready after {opts.ready_after:g}s, timeout {opts.timeout:g}s: "
          f"{client.requests_sent - before} requests, {ended - started:.2f}s wall, "
          f"returned {1000 * (ended - done['at']):.0f} ms after the last status write")


def _gate_figures(engine, manifests, kube, Options, writer, auth, namespace, group, runs):
    delays = []
    for run in range(runs):
        dep, cm = f"gate-{run}", f"after-{run}"
        depends = f"{group}/namespaces/{namespace}/Widget/{dep}"
        definition = [_widget(group, dep, "False"),
                      {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
                       "metadata": {"name": cm, "annotations": {"config.kubernetes.io/depends-on": depends}}}]
        eng = engine.Engine(kube.connect(auth), f"configmaps/gates-{run}", namespace, Options.from_settings(wait_timeout=60))
        thread = threading.Thread(target=lambda: eng.apply(manifests.load_definition(definition)), daemon=True)
        thread.start()
        path = f"/apis/{group}/v1/namespaces/{namespace}/widgets/{dep}"
        while _missing(writer, path):
            time.sleep(0.05)
        time.sleep(1.0)
        _set_ready(writer, namespace, group, [dep])
        ready_at = time.monotonic()
        while _missing(writer, f"/api/v1/namespaces/{namespace}/configmaps/{cm}"):
            time.sleep(0.01)
        delays.append(time.monotonic() - ready_at)
        thread.join(60)
    print(f"gate: dependency Ready -> dependent written, {runs} runs: median {1000 * statistics.median(delays):.0f} ms, "
          f"max {1000 * max(delays):.0f} ms")


def _missing(writer, path) -> bool:
    try:
        writer.request("GET", path)
    except Exception as err:  # 404 while it does not exist yet
        if getattr(err, "status", None) == 404:
            return True
        raise
    return False


if __name__ == "__main__":
    sys.exit(main())
