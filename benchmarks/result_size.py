#!/usr/bin/env python3
"""The size of applyset_apply's result as JSON, per result_detail, at N members (issue 50).

AWX keeps a job event's result only up to 700,000 bytes (MAX_EVENT_RES_DATA) and drops a larger
one whole. For each N this runs the core against a real control plane (the local one this script
starts, or --kubeconfig) as the module does: a first deploy of N small ConfigMaps (every member
created), a preview with a tenth of them changed, and a no-op re-run; and shapes each report as the
module does (Report.to_dict, Secret data hidden, result_budget.fit), printing the bytes of JSON of
the whole result (result_detail: full) and of auto, changed and summary, and how many objects each
lists.

Usage: benchmarks/result_size.py [--sizes 1000,5000,25000] [--kubeconfig PATH] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))
sys.path.insert(0, str(ROOT / "hack"))

from applyset import engine  # noqa: E402
from applyset.inputs import manifests, redact  # noqa: E402
from applyset.kube import client as kube  # noqa: E402
from applyset.run import result_budget  # noqa: E402
from applyset.run.options import Options  # noqa: E402


def configmaps(count: int, version: str = "1", changed_every: int = 0) -> list:
    """``count`` small ConfigMaps; with ``changed_every``, every such one has another value."""
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:05d}"},
             "data": {"v": version if not (changed_every and i % changed_every == 0) else "changed"}}
            for i in range(count)]


def shaped_sizes(report: engine.Report) -> dict:
    """Bytes and objects listed of the module's result, per result_detail (as its _shape does)."""
    result = redact.hide_secret_data(report.to_dict())
    result.pop("diff", None)  # not in diff mode
    sizes = {}
    for detail in result_budget.DETAILS:
        fitted = result_budget.fit(result, detail).result
        sizes[detail] = {"bytes": result_budget.size_of(fitted), "objects": len(fitted.get("objects", []))}
    return sizes


def measure(client, namespace: str, count: int) -> dict:
    """The sizes of a first deploy, a preview with a tenth changed and a no-op re-run of ``count`` members."""
    def run(objs, dry_run=False):
        started = time.monotonic()
        report = engine.Engine(client, f"secrets/set-{count}", namespace,
                               Options.from_settings(dry_run=dry_run)).apply(manifests.load_definition(objs))
        return shaped_sizes(report), round(time.monotonic() - started, 1)

    out = {}
    out["first deploy"], first_s = run(configmaps(count))
    out["preview, 10% changed"], _ = run(configmaps(count, changed_every=10), dry_run=True)
    out["no-op"], _ = run(configmaps(count))
    print(f"N={count}: first deploy took {first_s} s", file=sys.stderr)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,5000,25000")
    parser.add_argument("--kubeconfig", help="an existing cluster (default: start the local control plane)")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    local = state = None
    kubeconfig = args.kubeconfig
    if kubeconfig is None:
        from local_cluster.cluster import LocalCluster

        state = Path(tempfile.mkdtemp(prefix="applyset-result-size-"))
        local = LocalCluster(state_dir=state)
        local.up(log=lambda msg: print(msg, file=sys.stderr))
        kubeconfig = str(local.kubeconfig)
    figures = {}
    try:
        client = kube.connect({"kubeconfig": kubeconfig}, parallelism=8)
        for count in (int(n) for n in args.sizes.split(",")):
            namespace = f"result-size-{count}-{int(time.time())}"
            client.request("POST", "/api/v1/namespaces",
                           body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            figures[count] = measure(client, namespace, count)
            client.request("DELETE", f"/api/v1/namespaces/{namespace}")
    finally:
        if local is not None:
            local.down(log=lambda msg: print(msg, file=sys.stderr))
            shutil.rmtree(state, ignore_errors=True)
    print(f"| N | run | {' | '.join(result_budget.DETAILS)} |")
    print("|---:|---|" + "---:|" * len(result_budget.DETAILS))
    for count, runs in figures.items():
        for name, sizes in runs.items():
            cells = " | ".join(f"{sizes[d]['bytes']:,} B ({sizes[d]['objects']:,} objects)" for d in result_budget.DETAILS)
            print(f"| {count:,} | {name} | {cells} |")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
