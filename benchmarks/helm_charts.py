"""A chart deployed by applyset_apply's helm option against helm install / helm upgrade (issue 40).

    .venv/bin/python benchmarks/helm_charts.py [--chart podinfo] [--runs 3] [--helm PATH]

On the local control plane (``hack/local-cluster up``; or KUBECONFIG), for each run a fresh
namespace per side: ``helm install`` then ``helm upgrade`` with a values change, and our module
(one ``ansible-playbook`` with the task, so Ansible's start is included) for the same chart,
values and change. ``--wait`` is off on both sides (the module's ``wait`` defaults to false).
Prints the median and every run's seconds, and an ``ansible-playbook`` run of one ``debug`` task
(Ansible's own start, which every task pays). Not a test; the issue's closing note quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHARTS = REPO / "tests" / "integration" / "data" / "charts" / "src"
# A values change that an upgrade applies (and, for ingress-nginx, a member it removes).
CHANGES = {"podinfo": ({"replicaCount": 1}, {"replicaCount": 2, "ui": {"message": "v2"}}),
           "ingress-nginx": ({"controller": {"service": {"type": "ClusterIP"}, "admissionWebhooks": {"enabled": False}}},
                             {"controller": {"service": {"type": "ClusterIP"}, "admissionWebhooks": {"enabled": False},
                                             "replicaCount": 2, "metrics": {"enabled": True}}})}


def timed(cmd: list, env: dict) -> float:
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd[:3]))} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return time.monotonic() - started


def playbook(path: Path, tasks: list) -> Path:
    path.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    return path


def cleanup_cluster_scoped(release: str, env: dict) -> None:
    """A release's cluster-scoped objects deleted (namespaces are deleted whole)."""
    subprocess.run(["kubectl", "delete", "clusterrole,clusterrolebinding,ingressclass,validatingwebhookconfiguration",
                    "-l", f"app.kubernetes.io/instance={release}", "--wait"], env=env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chart", default="podinfo", choices=sorted(CHANGES))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--helm", help="helm to compare with and render with (default: helm4 built by make helm)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "hack"))
    from local_cluster import build

    helm = args.helm or str(build.ensure_helm()["helm4"])
    kubeconfig = os.environ.get("KUBECONFIG") or subprocess.run(
        [str(REPO / "hack" / "local-cluster"), "kubeconfig"], capture_output=True, text=True, check=True).stdout.strip()
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "KUBECONFIG": kubeconfig, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    chart = str(CHARTS / args.chart)
    first, second = CHANGES[args.chart]
    times: dict[str, list] = {k: [] for k in ("helm install", "helm upgrade", "ours install", "ours upgrade",
                                              "text install", "text upgrade", "ansible start")}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for values, name in ((first, "first"), (second, "second")):
            (work / f"{name}.json").write_text(json.dumps(values))
        for run in range(args.runs):
            ns_helm, ns_ours = (f"bench-{side}-{secrets.token_hex(3)}" for side in ("helm", "ours"))
            for ns in (ns_helm, ns_ours):
                subprocess.run(["kubectl", "create", "namespace", ns], env=env, check=True, capture_output=True)
            base = [helm, "--namespace", ns_helm]
            # Release names of their own: a chart's cluster-scoped objects are named after the release.
            helm_release, our_release = f"h{run}", f"o{run}"
            times["helm install"].append(timed([*base, "install", helm_release, chart, "-f", str(work / "first.json")], env))
            times["helm upgrade"].append(timed([*base, "upgrade", helm_release, chart, "-f", str(work / "second.json")], env))
            # Gone before our side runs: a chart's fixed-name cluster-scoped objects (ingress-nginx's
            # IngressClass "nginx") would otherwise be Helm's.
            subprocess.run([*base, "uninstall", helm_release, "--wait"], env=env, capture_output=True)
            for values, label in ((first, "ours install"), (second, "ours upgrade")):
                task = {"applyset.kubernetes.applyset_apply": {
                    "parent": our_release, "namespace": ns_ours,
                    "helm": {"chart": chart, "values": values, "binary": helm}}}
                times[label].append(timed([str(bin_dir / "ansible-playbook"), str(playbook(work / "p.json", [task]))], env))
            cleanup_cluster_scoped(our_release, env)
            # The same objects given as text (rendered beforehand, without Capabilities): what rendering costs.
            ns_text = f"bench-text-{secrets.token_hex(3)}"
            subprocess.run(["kubectl", "create", "namespace", ns_text], env=env, check=True, capture_output=True)
            for name, label in (("first", "text install"), ("second", "text upgrade")):
                text = subprocess.run([helm, "template", f"t{run}", chart, "--namespace", ns_text, "-f",
                                       str(work / f"{name}.json")], capture_output=True, text=True, check=True).stdout
                task = {"applyset.kubernetes.applyset_apply": {"parent": f"t{run}", "namespace": ns_text,
                                                               "definition": text}}
                times[label].append(timed([str(bin_dir / "ansible-playbook"), str(playbook(work / "p.json", [task]))], env))
            subprocess.run(["kubectl", "delete", "namespace", ns_text, "--wait=false"], env=env, capture_output=True)
            times["ansible start"].append(timed([str(bin_dir / "ansible-playbook"), str(playbook(
                work / "d.json", [{"ansible.builtin.debug": {"msg": "start"}}]))], env))
            for ns in (ns_helm, ns_ours):
                subprocess.run(["kubectl", "delete", "namespace", ns, "--wait=false"], env=env, capture_output=True)
            cleanup_cluster_scoped(f"t{run}", env)
    version = subprocess.run([helm, "version", "--template", "{{.Version}}"], capture_output=True, text=True).stdout
    print(f"chart {args.chart}, helm {version}, {args.runs} runs, seconds (median; every run):")
    for label, values in times.items():
        print(f"  {label:14} {statistics.median(values):6.2f}   " + " ".join(f"{v:.2f}" for v in values))


if __name__ == "__main__":
    main()
