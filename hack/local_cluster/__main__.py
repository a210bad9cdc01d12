"""Command line: ``hack/local-cluster up|down|status|kubeconfig|build``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .build import BuildError, main as build_main
from .cluster import DEFAULT_STATE_DIR, ClusterError, LocalCluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hack/local-cluster",
        description="Run a local Kubernetes control plane (etcd, kube-apiserver, "
        "kube-controller-manager, kube-scheduler, kwok) built from upstream Go modules.",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(os.environ.get("APPLYSET_CLUSTER_DIR", DEFAULT_STATE_DIR)),
        help="where certificates, logs, etcd data and the kubeconfig live (default: %(default)s)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="build or reuse the binaries, start the cluster, wait until ready")
    sub.add_parser("down", help="stop the processes this state directory started")
    sub.add_parser("status", help="print a JSON report: pids, liveness, memory")
    sub.add_parser("kubeconfig", help="print the admin kubeconfig path")
    build = sub.add_parser("build", help="only build (or find) the binaries and print their paths")
    build.add_argument("--helm", action="store_true", help="also helm3 and helm4 (the chart tests' helm)")
    args = parser.parse_args(argv)

    if args.command == "build":
        return build_main(helm=args.helm)
    cluster = LocalCluster(state_dir=args.state_dir.resolve())
    try:
        if args.command == "up":
            cluster.up(log=lambda msg: print(msg, file=sys.stderr))
            print(cluster.kubeconfig)
        elif args.command == "down":
            cluster.down(log=lambda msg: print(msg, file=sys.stderr))
        elif args.command == "status":
            report = cluster.status()
            print(json.dumps(report, indent=2))
            return 0 if report["running"] else 3
        elif args.command == "kubeconfig":
            if not cluster.load():
                print("error: no local cluster is running; start one with `hack/local-cluster up`", file=sys.stderr)
                return 1
            print(cluster.kubeconfig)
    except (BuildError, ClusterError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
