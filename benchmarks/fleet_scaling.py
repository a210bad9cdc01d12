#!/usr/bin/env python3
"""How fleet runs scale with the number of clusters: 1, 2, 3 local control planes (docs/fleet.md).

    benchmarks/fleet-scaling                      # start 3 local control planes, measure, stop them
    benchmarks/fleet-scaling --kubeconfigs a:b:c  # use running clusters (the shop in shop-demo is replaced)
    benchmarks/fleet-scaling --reps 3

For each fleet size N it times, with the same inventory plugin and playbooks a user runs:
the first deploy (preview of all N, then the canary-first rollout), a re-deploy that changes
nothing, the preview alone (--tags preview), the fleet audit, and the uninstall. The same
re-deploy with --forks 1 shows what the parallelism (forks) buys. Results are printed as a table
with the per-cluster cost (the slope from N=1 to N=3) and written to
benchmarks/results/fleet-scaling.json. Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO / "hack"))
sys.path.insert(0, str(REPO / "tests" / "integration"))
from kubeapi import KubeAPI, wait_for  # noqa: E402
from local_cluster.cluster import LocalCluster  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "fleet-scaling.json"
NAMES = ("c1", "c2", "c3")


def env() -> dict:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("K8S_AUTH_")}
    environ.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), PATH=f"{BIN}{os.pathsep}{environ.get('PATH', '')}",
                   ANSIBLE_NOCOLOR="1", ANSIBLE_INVENTORY_UNPARSED_FAILED="1", KUBECONFIG=os.devnull)
    return environ


def timed(cmd: list) -> float:
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env(), cwd=REPO)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return seconds


def inventory(work: Path, kubeconfigs: list, size: int) -> Path:
    path = work / f"fleet-{size}.kubeconfig.yml"
    path.write_text(yaml.safe_dump({
        "plugin": "applyset.kubernetes.kubeconfig",
        "kubeconfigs": [{"path": k, "name": n} for k, n in zip(kubeconfigs[:size], NAMES)],
    }))
    return path


def playbook(name: str, inv: Path, *args) -> list:
    return [str(BIN / "ansible-playbook"), str(REPO / "playbooks" / name), "-i", str(inv), *args]


def uninstall(inv: Path) -> list:
    args = {"parent": "shop", "namespace": "shop-demo", "state": "absent", "wait": True, "wait_timeout": 300,
            "guard": {"allow_prune_kinds": ["Namespace", "CustomResourceDefinition"]},
            "kubeconfig": "{{ applyset_kubeconfig }}", "context": "{{ applyset_context }}"}
    return [str(BIN / "ansible"), "kubernetes_clusters", "-i", str(inv), "-m", "applyset.kubernetes.applyset_apply",
            "-a", json.dumps(args)]


def wait_until_namespace_gone(kubeconfigs: list) -> None:
    """A deploy into a namespace that is still being deleted fails; start each round from none."""
    for path in kubeconfigs:
        kube = KubeAPI(path)
        wait_for(lambda: kube.get("/api/v1/namespaces/shop-demo") is None, timeout=300, what="shop-demo gone")


def measure(work: Path, kubeconfigs: list, size: int, reps: int) -> dict:
    inv = inventory(work, kubeconfigs, size)
    runs: dict[str, list] = {}
    for _ in range(reps):
        steps = [
            ("deploy (preview + rollout)", playbook("fleet-deploy.yml", inv)),
            ("re-deploy, nothing changes", playbook("fleet-deploy.yml", inv)),
            ("re-deploy, --forks 1", playbook("fleet-deploy.yml", inv, "--forks", "1")),
            ("preview only", playbook("fleet-deploy.yml", inv, "--tags", "preview")),
            ("audit", playbook("fleet-audit.yml", inv, "-e", f"audit_output_dir={work}/audit-{size}")),
            ("uninstall (waits until gone)", uninstall(inv)),
        ]
        for name, cmd in steps:
            runs.setdefault(name, []).append(timed(cmd))
        wait_until_namespace_gone(kubeconfigs)
    return {name: round(statistics.median(values), 2) for name, values in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfigs", help="three kubeconfig paths separated by ':' (default: start clusters)")
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="applyset-fleet-scaling-"))
    started = []
    try:
        if args.kubeconfigs:
            kubeconfigs = args.kubeconfigs.split(os.pathsep)
        else:
            for name in NAMES:
                local = LocalCluster(state_dir=work / name)
                local.up(log=lambda msg: print(msg, file=sys.stderr))
                started.append(local)
            kubeconfigs = [str(local.kubeconfig) for local in started]
        assert len(kubeconfigs) == 3, "three clusters are needed"
        subprocess.run(uninstall(inventory(work, kubeconfigs, 3)), capture_output=True, env=env(), cwd=REPO)
        for path in kubeconfigs:  # leftovers of other runs (a stale set, a half-deleted namespace)
            KubeAPI(path).delete("/api/v1/namespaces/shop-demo")
        wait_until_namespace_gone(kubeconfigs)
        results = {size: measure(work, kubeconfigs, size, args.reps) for size in (1, 2, 3)}
    finally:
        for local in started:
            local.down(log=lambda msg: print(msg, file=sys.stderr))
        shutil.rmtree(work, ignore_errors=True)

    steps = list(results[1])
    print(f"\nfleet scaling, median of {args.reps} run(s), seconds (wall), {os.cpu_count()} cores")
    print(f"{'step':32} {'1 cluster':>10} {'2 clusters':>11} {'3 clusters':>11} {'per cluster':>12}")
    for step in steps:
        row = [results[n][step] for n in (1, 2, 3)]
        print(f"{step:32} {row[0]:>10.1f} {row[1]:>11.1f} {row[2]:>11.1f} {(row[2] - row[0]) / 2:>12.1f}")
    RESULTS.write_text(json.dumps({
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "reps": args.reps, "seconds": {str(n): results[n] for n in results},
        "per_cluster": {step: round((results[3][step] - results[1][step]) / 2, 2) for step in steps},
    }, indent=2) + "\n")
    print(f"written to {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
