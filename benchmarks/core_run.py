#!/usr/bin/env python3
"""Run our core library directly (no Ansible): what applyset_apply does, minus the module glue.

Usage: core_run.py KUBECONFIG MANIFEST_DIR --parent PARENT_JSON [--namespace NS] [--parallelism P]
                   [--dry-run] [--no-prune] [--reapply changed|always] [--profile OUT.txt]

PARENT_JSON is the module's ``parent`` option as JSON (a string or a dict). Prints one JSON line:
the report's summary, the client's request count and every request classified by what it is for
(discovery, parent, list-metadata, list-full, apply, delete, ...), counted on the client side.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import os

ROOT = Path(os.environ.get("BENCH_TREE") or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.errors import ApplySetError  # noqa: E402

try:  # the core in packages (issue 37)
    from applyset.inputs import manifest_checks, manifests
    from applyset.kube import client as kube
    from applyset.kube import http_requests as httprequests
    from applyset.run.options import Options
except ImportError:  # a tree from before: one folder, the same names
    from applyset import httprequests, kube, manifests
    from applyset import manifests as manifest_checks
    from applyset.engine import Options
METADATA_LIST = httprequests.METADATA_LIST


def classify(method: str, path: str, query: dict | None, accept: str, content_type: str | None) -> str:
    if method == "GET" and path in ("/api", "/apis"):
        return "GET discovery"
    if method == "GET" and query and "limit" in query:
        return "LIST metadata" if accept == METADATA_LIST else "LIST full"
    if method == "PATCH" and content_type == httprequests.APPLY_PATCH:
        return "PATCH apply"
    return f"{method} other"


def instrument(client: kube.KubeClient, log: list) -> None:
    if hasattr(client, "send"):  # every request is built (httprequests), then sent through send()
        original_send = client.send

        def send(req):
            log.append((classify(req.method, req.path, dict(req.query), req.accept, req.content_type), req.path))
            return original_send(req)

        client.send = send
        return
    original = client.request  # a tree from before send(): its verbs call request()

    def request(method, path, *, query=None, body=None, content_type=None, accept="application/json", retry=None):
        log.append((classify(method, path, query, accept, content_type), path))
        return original(method, path, query=query, body=body, content_type=content_type, accept=accept, retry=retry)

    client.request = request


def tally(log: list, parent_path: str | None) -> dict:
    counts: dict[str, int] = {}
    for kind, path in log:
        if parent_path and path == parent_path:
            kind = kind.split()[0] + " parent"
        elif kind == "POST other":
            kind = "POST parent (create)"
        elif path.startswith("/apis/apiextensions.k8s.io/") and kind.startswith("GET"):
            kind = "GET crd (parent type check)"
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("kubeconfig")
    ap.add_argument("manifests")
    ap.add_argument("--parent", required=True)
    ap.add_argument("--namespace")
    ap.add_argument("--parallelism", type=int, default=None, help="the option's value (default: not set)")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--no-prune", action="store_true")
    ap.add_argument("--reapply", choices=("changed", "always"),
                    help="the engine's reapply option (left out: the engine's default; older trees have none)")
    ap.add_argument("--profile", help="write a pyinstrument text profile here")
    return ap.parse_args(argv)


def client_options(parallelism) -> dict:
    """Not set: None, which follows the round trip (flow.py, issue 30); a tree from before it takes
    no None, and gets its own default."""
    try:
        if importlib.util.find_spec("applyset.kube.flow" if hasattr(kube, "KubeClient") and kube.__name__.endswith(
                ".client") else "applyset.flow") is None:
            raise ImportError("no flow module")
        return {"parallelism": parallelism}
    except ImportError:
        return {} if parallelism is None else {"parallelism": parallelism}


def main(argv=None) -> int:
    args = parse_args(argv)
    profiler = None
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001)
        profiler.start()

    loaded = manifests.load_sources([args.manifests])
    manifest_checks.validate(loaded)
    client = kube.connect({"kubeconfig": args.kubeconfig}, **client_options(args.parallelism))
    log: list = []
    instrument(client, log)
    extra = {"reapply": args.reapply} if args.reapply else {}
    opts = Options.from_settings(prune=not args.no_prune, dry_run=args.dry_run, max_prune_percent=50, **extra)
    run = engine.Engine(client, json.loads(args.parent), args.namespace, opts)
    try:
        report, error = run.apply(loaded), None
    except ApplySetError as err:
        if err.report is None:
            raise
        report, error = err.report, err
    if profiler:
        profiler.stop()
        Path(args.profile).write_text(profiler.output_text(unicode=True, color=False, show_all=False))
    parent_path = None
    if run.parent is not None:
        p = run.parent
        parent_path = p.resource.path(p.namespace or None, p.name)
    out = {"summary": report.summary(), "changed": report.changed, "requests_sent": client.requests_sent,
           "round_trips": getattr(client, "round_trips", None), "peak_in_flight": getattr(getattr(client, "flow", None), "peak", None),
           "requests": tally(log, parent_path), "warnings": report.warnings[:5]}
    if error is not None:
        out["error"] = str(error)
    print(json.dumps(out))
    return 1 if error is not None else 0


if __name__ == "__main__":
    sys.exit(main())
