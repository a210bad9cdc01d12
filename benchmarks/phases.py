"""Where the time goes (issue 48): each phase of our run beside helm's, side by side in one run.

    .venv/bin/python benchmarks/phases.py [--runs 3] [--helm PATH] [--charts podinfo,ingress-nginx]
                                          [--configmaps 1000] [--rtts 0,50] [--json OUT]

On the local control plane (``hack/local-cluster up``; or KUBECONFIG):

* charts (``tests/integration/data/charts/src``): ``helm upgrade --install --debug`` and our module
  (one ``ansible-playbook`` with the task, Ansible's start included) one after the other for each
  scenario: the install, an upgrade with the same values (a no-op for us) and one with a values
  change. Each side in a namespace of its own, with release and IngressClass names of its own.
* ConfigMaps: N of them (ConfigMaps only, as ``benchmarks/run``'s latency block) at each round
  trip through the latency profile's delaying proxy (``latency.Link``): our initial apply, a no-op
  and a change of every tenth, beside the wire limit (``ceiling.py``, 64 parallel server-side apply
  PATCHes and nothing else) applying the same objects.
* a one-task ``ping`` playbook each repetition: Ansible's own start and end, which every task pays.

Our phases come from the module itself (``APPLYSET_PHASE_TIMES``, run/phases.py); Ansible's part is
the playbook's wall time less the module process's. Helm's come from its ``--debug`` lines, each
timed as it arrives: the time from one line to the next is the phase the first line opens (its
words say which: the release's history, the chart's render, the resources' writes, hooks), the
time before the first line helm's start, the time after the last its end. Prints medians (of
``--runs``) and writes every run's figures with ``--json``. Not a test: it prints figures.
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

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "hack"))

import latency  # noqa: E402
import workload  # noqa: E402

CHARTS = REPO / "tests" / "integration" / "data" / "charts" / "src"
BIN = Path(sys.executable).parent
# The install's values and the change's, per chart; the IngressClass name is set per side.
VALUES = {"podinfo": ({"replicaCount": 1}, {"replicaCount": 2, "ui": {"message": "v2"}}),
          "ingress-nginx": ({"controller": {"service": {"type": "ClusterIP"}, "admissionWebhooks": {"enabled": False}}},
                            {"controller": {"service": {"type": "ClusterIP"}, "admissionWebhooks": {"enabled": False},
                                            "replicaCount": 2, "metrics": {"enabled": True}}})}
CHART_SCENARIOS = ("install", "same values", "values change")
CM_SCENARIOS = ("initial", "no-op", "change")
# Our phases as the table shows them, from the record's laps and steps (see ours_phases).
OUR_PHASES = ("ansible start and end", "module start and imports", "arguments", "connect", "imports and input",
              "read-parent (discovery)", "render", "reads", "decide", "writes", "hooks", "waits", "result")
HELM_PHASES = ("start", "history", "render", "writes", "hooks", "end")


def helm_phase(line: str) -> str:
    """Which of ``HELM_PHASES`` a ``--debug`` line of helm 3 or 4 opens."""
    text = line.lower()
    if "hook" in text:
        return "hooks"
    if "resource" in text or "patch" in text or "no changes" in text:
        return "writes"
    if "dependencies" in text or "chart" in text or "apply method" in text:
        return "render"
    return "history"


def run_helm(argv: list, env: dict) -> dict:
    """Run helm with ``--debug``, each stderr line timed on arrival: its wall time and phases."""
    started = time.monotonic()
    proc = subprocess.Popen([*argv, "--debug"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    stamps, lines = [], []
    for line in proc.stderr:  # type: ignore[union-attr]
        stamps.append((time.monotonic(), helm_phase(line)))
        lines.append(line)
    proc.wait()
    ended = time.monotonic()
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, argv[:4]))} failed:\n{''.join(lines[-30:])}")
    phases = dict.fromkeys(HELM_PHASES, 0.0)
    previous, phase = started, "start"
    for at, opened in stamps:  # from one line to the next: the phase the first one opens
        phases[phase] += at - previous
        previous, phase = at, opened
    phases["end"] += ended - previous
    return {"wall": ended - started, "phases": phases}


def run_ours(playbook: Path, env: dict, record_file: Path) -> dict:
    """Run ``ansible-playbook`` with the module's phase times on: its wall time and phases."""
    record_file.unlink(missing_ok=True)
    started = time.monotonic()
    proc = subprocess.run([str(BIN / "ansible-playbook"), str(playbook)], capture_output=True, text=True,
                          env={**env, "APPLYSET_PHASE_TIMES": str(record_file)}, cwd=REPO)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"ansible-playbook {playbook.name} failed:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
    record = json.loads(record_file.read_text().splitlines()[-1])
    return {"wall": wall, "phases": ours_phases(record, wall), "requests": record["requests"],
            "writes": record["writes"]}


def ours_phases(record: dict, wall: float) -> dict:
    """``OUR_PHASES`` from a module's record (run/phases.py) and the playbook's ``wall`` time."""
    laps = {name: seconds for name, seconds, _cpu in record["laps"]}
    out = dict.fromkeys(OUR_PHASES, 0.0)
    out["ansible start and end"] = wall - record["total"]
    out["module start and imports"] = laps.get("module start", 0.0)
    for name in ("arguments", "connect", "imports and input", "result"):
        out[name] = laps.get(name, 0.0)
    effects = {"read": "reads", "decide": "decide", "dry-run": "writes", "claim": "writes", "write": "writes",
               "release": "writes", "wait": "waits"}
    for name, effect, seconds, *_rest in record["steps"]:
        phase = {"read-parent": "read-parent (discovery)", "render-chart": "render"}.get(name, effects[effect])
        out[phase] += seconds
    out["hooks"] = record["spans"].get("hooks", 0.0)
    out["writes"] = max(0.0, out["writes"] - out["hooks"])  # the hooks run inside the apply step
    return out


def playbook(path: Path, task: dict) -> Path:
    path.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": [task]}]))
    return path


def kubectl(env: dict, *args: str) -> None:
    subprocess.run(["kubectl", *args], env=env, capture_output=True)


def chart_values(chart: str, values: dict, side: str) -> dict:
    if chart != "ingress-nginx":
        return values
    controller = {**values["controller"], "ingressClassResource": {"name": f"nginx-{side}"}}
    return {**values, "controller": controller}


def bench_chart(chart: str, runs: int, helm: str, env: dict, work: Path) -> dict:
    """Every run's figures of ``chart``: helm's and ours per scenario, and the ping playbook."""
    out: dict = {"helm": {s: [] for s in CHART_SCENARIOS}, "ours": {s: [] for s in CHART_SCENARIOS}, "ping": []}
    ping = playbook(work / "ping.json", {"ansible.builtin.ping": {}})
    for run in range(runs):
        token = secrets.token_hex(3)
        names = {side: f"{side}{run}{token}" for side in ("h", "o")}
        for name in names.values():
            kubectl(env, "create", "namespace", f"bench-{name}")
        for scenario, values in zip(CHART_SCENARIOS, (VALUES[chart][0], VALUES[chart][0], VALUES[chart][1])):
            file = work / f"values-{names['h']}.json"
            file.write_text(json.dumps(chart_values(chart, values, names["h"])))
            out["helm"][scenario].append(run_helm([helm, "upgrade", "--install", "--namespace", f"bench-{names['h']}",
                                                   names["h"], str(CHARTS / chart), "-f", str(file)], env))
            task = {"applyset.kubernetes.applyset_apply": {
                "parent": names["o"], "namespace": f"bench-{names['o']}",
                "helm": {"chart": str(CHARTS / chart), "values": chart_values(chart, values, names["o"]),
                         "binary": helm}}}
            out["ours"][scenario].append(run_ours(playbook(work / "chart.json", task), env, work / "phases.jsonl"))
        out["ping"].append(run_ours_plain(ping, env))
        for name in names.values():
            kubectl(env, "delete", "namespace", f"bench-{name}", "--wait=false")
            kubectl(env, "delete", "clusterrole,clusterrolebinding,ingressclass", "-l",
                    f"app.kubernetes.io/instance={name}", "--wait=false")
    return out


def run_ours_plain(path: Path, env: dict) -> float:
    started = time.monotonic()
    subprocess.run([str(BIN / "ansible-playbook"), str(path)], capture_output=True, env=env, cwd=REPO, check=True)
    return time.monotonic() - started


def bench_configmaps(n: int, rtt: int, runs: int, env: dict, work: Path) -> dict:
    """Every run's figures of ``n`` ConfigMaps at a round trip of ``rtt`` ms: ours and the wire limit."""
    out: dict = {"ours": {s: [] for s in CM_SCENARIOS}, "wire limit": [], "ping": []}
    ping = playbook(work / "ping.json", {"ansible.builtin.ping": {}})
    with latency.Link(env["KUBECONFIG"], rtt, work / "link") as link:
        tool_env = {**env, "KUBECONFIG": link.kubeconfig}
        for run in range(runs):
            token = secrets.token_hex(3)
            ns_ours, ns_wire = f"bench-cm-o{run}{token}", f"bench-cm-w{run}{token}"
            for ns in (ns_ours, ns_wire):
                kubectl(env, "create", "namespace", ns)
            dirs = {}
            with workload.kinds("cm"):
                for variant, ns in (("base", ns_ours), ("changed", ns_ours), ("wire", ns_wire)):
                    dirs[variant] = work / f"cm-{variant}"
                    workload.write_variant(dirs[variant], workload.objects(n, [ns], "base" if variant == "wire"
                                                                          else variant))
            started = time.monotonic()
            subprocess.run([sys.executable, str(HERE / "ceiling.py"), link.kubeconfig, str(dirs["wire"]),
                            "--id", f"applyset-wire-{token}", "--parallelism", "64"], env=tool_env, check=True,
                           capture_output=True)
            out["wire limit"].append(time.monotonic() - started)
            for scenario, variant in zip(CM_SCENARIOS, ("base", "base", "changed")):
                task = {"applyset.kubernetes.applyset_apply": {"parent": "bench", "namespace": ns_ours,
                                                               "src": str(dirs[variant])}}
                out["ours"][scenario].append(run_ours(playbook(work / "cm.json", task), tool_env,
                                                      work / "phases.jsonl"))
            out["ping"].append(run_ours_plain(ping, tool_env))
            for ns in (ns_ours, ns_wire):
                kubectl(env, "delete", "namespace", ns, "--wait=false")
    return out


def median(values) -> float:
    return statistics.median(values) if values else 0.0


def median_phases(results: list, names) -> dict:
    return {name: median([r["phases"][name] for r in results]) for name in names}


def print_chart(chart: str, figures: dict) -> None:
    ping = median(figures["ping"])
    print(f"\n#### {chart}: seconds, medians of {len(figures['ping'])} (ping playbook {ping:.2f} s)\n")
    print("| | " + " | ".join(f"helm: {s} | ours: {s}" for s in CHART_SCENARIOS) + " |")
    print("|---" * (1 + 2 * len(CHART_SCENARIOS)) + "|")

    def row(label: str, helm: list | None, ours: list | None, form: str = "{:.3f}") -> None:
        cells = []
        for i in range(len(CHART_SCENARIOS)):
            cells += [form.format(helm[i]) if helm else "", form.format(ours[i]) if ours else ""]
        print(f"| {label} | " + " | ".join(cells) + " |")

    helm_walls = [median([r["wall"] for r in figures["helm"][s]]) for s in CHART_SCENARIOS]
    our_walls = [median([r["wall"] for r in figures["ours"][s]]) for s in CHART_SCENARIOS]
    row("**whole command**", helm_walls, our_walls, "**{:.2f}**")
    row("ours / helm", None, [o / h for o, h in zip(our_walls, helm_walls)], "{:.2f}×")
    row("ours less ping / helm", None, [(o - ping) / h for o, h in zip(our_walls, helm_walls)], "{:.2f}×")
    helm = [median_phases(figures["helm"][s], HELM_PHASES) for s in CHART_SCENARIOS]
    ours = [median_phases(figures["ours"][s], OUR_PHASES) for s in CHART_SCENARIOS]
    for name in HELM_PHASES:
        row(f"helm: {name}", [h[name] for h in helm], None)
    for name in OUR_PHASES:
        row(f"ours: {name}", None, [o[name] for o in ours])
    for key in ("requests", "writes"):
        row(f"ours: {key}", None, [median([r[key] for r in figures["ours"][s]]) for s in CHART_SCENARIOS], "{:.0f}")


def print_configmaps(n: int, rtt: int, figures: dict) -> None:
    ping, wire = median(figures["ping"]), median(figures["wire limit"])
    print(f"\n#### {n:,} ConfigMaps at {rtt} ms: seconds, medians of {len(figures['ping'])} "
          f"(ping playbook {ping:.2f} s, wire limit {wire:.2f} s)\n")
    print("| | " + " | ".join(CM_SCENARIOS) + " |")
    print("|---" * (1 + len(CM_SCENARIOS)) + "|")
    walls = [median([r["wall"] for r in figures["ours"][s]]) for s in CM_SCENARIOS]
    print("| **whole command** | " + " | ".join(f"**{w:.2f}**" for w in walls) + " |")
    print("| module time (run − ping) / wire limit | " + " | ".join(f"{(w - ping) / wire:.2f}×" for w in walls) + " |")
    ours = {s: median_phases(figures["ours"][s], OUR_PHASES) for s in CM_SCENARIOS}
    for name in OUR_PHASES:
        print(f"| {name} | " + " | ".join(f"{ours[s][name]:.3f}" for s in CM_SCENARIOS) + " |")
    print("| requests / writes | " + " | ".join(
        f"{median([r['requests'] for r in figures['ours'][s]]):.0f} / "
        f"{median([r['writes'] for r in figures['ours'][s]]):.0f}" for s in CM_SCENARIOS) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--helm", help="the helm to compare with and render with (default: helm4 built by make helm)")
    parser.add_argument("--charts", default="podinfo,ingress-nginx", help="comma-separated; empty for none")
    parser.add_argument("--configmaps", type=int, default=1000, help="N; 0 for none")
    parser.add_argument("--rtts", default="0,50", help="round trips in ms for the ConfigMaps, comma-separated")
    parser.add_argument("--json", help="write every run's figures here")
    args = parser.parse_args()
    from local_cluster import build

    helm = args.helm or str(build.ensure_helm()["helm4"])
    kubeconfig = os.environ.get("KUBECONFIG") or subprocess.run(
        [str(REPO / "hack" / "local-cluster"), "kubeconfig"], capture_output=True, text=True, check=True).stdout.strip()
    env = {**os.environ, "KUBECONFIG": kubeconfig, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
           "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    results: dict = {"helm": subprocess.run([helm, "version", "--template", "{{.Version}}"], capture_output=True,
                                            text=True).stdout, "charts": {}, "configmaps": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for chart in filter(None, args.charts.split(",")):
            results["charts"][chart] = bench_chart(chart, args.runs, helm, env, work)
            print_chart(chart, results["charts"][chart])
        for rtt in (int(x) for x in filter(None, args.rtts.split(","))) if args.configmaps else ():
            results["configmaps"][rtt] = bench_configmaps(args.configmaps, rtt, args.runs, env, work)
            print_configmaps(args.configmaps, rtt, results["configmaps"][rtt])
    print(f"\nhelm {results['helm']}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
