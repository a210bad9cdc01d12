"""Side-by-side benchmark: our module (ansible-playbook), our core library, kubectl --applyset,
kpt live apply, kubernetes.core's k8s module, and a minimal ceiling client.

For every (N, namespaces) configuration and every repetition, each tool runs the scenario chain
initial -> noop -> change -> preview -> prune in its own namespaces, in an order that rotates and
reverses between repetitions; then its namespaces are deleted (untimed) and the next tool runs.
Each scenario is one process (the tool's CLI, or a Python process for the library and the ceiling),
timed from start to exit, with:

* peak RSS: of the module process for ansible-playbook (the interpreter is wrapped by
  ``/usr/bin/time``), of the process itself for the others (``wait4`` rusage);
* CPU time of the tool's process tree, and of kube-apiserver + etcd (from ``/proc``);
* API requests by verb and resource: deltas of the API server's ``apiserver_request_total``,
  without the series only the control plane's own components touch (leases, nodes, events, pods,
  replica sets, endpoint slices, and ``/status`` subresources);
* a check of the result: the number of workload objects in the tool's namespaces afterwards.
"""

from __future__ import annotations

import json
import os
import secrets
import statistics
import subprocess
import time
from pathlib import Path

import latency
import workload
from harness.cluster import Admin, install_crds, request_delta, start_cluster
from harness.machine import machine_info
from harness.matrix import apply_presets, is_default_matrix, parse_matrix
from harness.paths import ANSIBLE_PKG_SPEC, BENCH, log
from harness.process import run_process
from harness.tools import TOOL_CLASSES, CeilingTool, Config, K8sTool, Tool, setup_k8s
from harness.trees import describe_tree, supports_reapply, use_tree
from summary import summarize, tool_order


def run_scenario(tool: Tool, scenario: str, admin: Admin, timeout: float) -> dict:
    argv, env = tool.command(scenario)
    before = admin.metrics()
    cpu0 = admin.server_cpu()
    out_file = tool.dir / f"out-{scenario}.log"
    res = run_process(argv, env, str(tool.dir), out_file, timeout)
    cpu1 = admin.server_cpu()
    after = admin.metrics()
    res["server_cpu_s"] = round(cpu1 - cpu0, 3) if admin.server_pids else None
    res["requests"] = request_delta(before, after)
    if tool.rss_from_wrapper:
        res["module"] = tool.module_process(scenario)
        res["module_rss_kb"] = res["module"].get("rss_kb")
    else:
        res["module_rss_kb"] = res["rss_kb"]
    if hasattr(tool, "reapply_mode"):
        res["reapply"] = tool.reapply_mode()
    if tool.name.partition("@")[0] in ("core", "ceiling"):
        try:
            res["client_report"] = json.loads(out_file.read_text().strip().splitlines()[-1])
        except (ValueError, IndexError):
            res["client_report"] = None
    found = admin.count_objects(tool.namespaces)
    res["objects_after"] = found
    res["ok"] = res["rc"] == 0 and found == tool.expected(scenario)
    if not res["ok"]:
        tail = out_file.read_text(errors="replace")[-1500:]
        log(f"  !! {tool.name} {scenario}: rc={res['rc']} objects={found} expected={tool.expected(scenario)}\n{tail}")
    return res


def idle_background(admin: Admin, seconds: float) -> dict:
    """What the control plane itself sends in the tool series while nothing runs."""
    if seconds <= 0:
        return {}
    before = admin.metrics()
    time.sleep(seconds)
    delta = request_delta(before, admin.metrics())
    return {"seconds": seconds, **delta}


def tune_ceiling(admin: Admin, cfg_base: Config, candidates, n: int, reps: int) -> dict:
    """Pick the ceiling's parallelism: fastest median initial apply of N objects."""
    timings = {}
    for p in candidates:
        cfg = Config(n=n, nsc=1, workdir=cfg_base.workdir / "tune", kubeconfig=cfg_base.kubeconfig,
                     parallelism=cfg_base.parallelism, ceiling_parallelism=p, prefix=cfg_base.prefix,
                     rtt_ms=cfg_base.rtt_ms, kinds=cfg_base.kinds)
        tool = CeilingTool(cfg)
        tool.prepare()  # the manifests name the run's namespaces
        runs = []
        admin.create_namespaces(tool.namespaces)
        for _ in range(reps):
            argv, env = tool.command("initial")
            r = run_process(argv, env, str(tool.dir), tool.dir / "out-tune.log", 600)
            runs.append(r["wall_s"])
            admin.clear_namespaces(tool.namespaces)
        admin.delete_namespaces(tool.namespaces)
        timings[p] = runs
        log(f"  ceiling parallelism {p:3d}: {', '.join(f'{t:.2f}s' for t in runs)}")
    best = min(timings, key=lambda p: statistics.median(timings[p]))
    return {"n": n, "timings_s": {str(k): v for k, v in timings.items()}, "best": best}


def tuned_config(admin: Admin, cfg: Config, names, args, results) -> Config:
    """``cfg`` with the ceiling's parallelism tuned at the block's round trip and workload (once per
    pair; a loopback block of the default workload keeps the run's tuning)."""
    if "ceiling" not in names or args.ceiling_parallelism != "auto" or (cfg.rtt_ms == 0 and cfg.kinds == "all"):
        return cfg
    key = f"rtt={cfg.rtt_ms},kinds={cfg.kinds}"
    if key not in results["ceiling_tuning_by_block"]:
        log(f"tuning the ceiling's parallelism at N={args.tune_n}, {key}")
        results["ceiling_tuning_by_block"][key] = tune_ceiling(admin, cfg, (16, 32, 64), args.tune_n, 2)
    return Config(**{**vars(cfg), "ceiling_parallelism": results["ceiling_tuning_by_block"][key]["best"]})


def run_block(admin: Admin, cfg: Config, names, reps: int, scenarios, args, results: dict, out: Path) -> None:
    """Every repetition of one matrix block: each tool's chain, in rotating order, then a cleanup."""
    tools = [TOOL_CLASSES[name.split("@")[0]](cfg, name) for name in names]
    for tool in tools:
        tool.prepare()
        admin.create_namespaces(tool.namespaces)
    where = f"round trip {cfg.rtt_ms} ms" + (", ConfigMaps only" if cfg.kinds == "cm" else "")
    for rep in range(reps):
        order = tools[rep % len(tools):] + tools[:rep % len(tools)]
        if rep % 2:
            order.reverse()
        log(f"N={cfg.n} namespaces={cfg.nsc} {where} rep {rep + 1}/{reps}: {' '.join(t.name for t in order)}")
        for position, tool in enumerate(order):
            tool.before_rep(admin)
            line = []
            chain = [s_ for s_ in tool.scenarios if s_ in scenarios]
            for scenario in chain:
                res = run_scenario(tool, scenario, admin, args.timeout)
                # the chain tells the report what a scenario must write (a prune
                # without the 10% change before it also applies the changed tenth)
                res.update(tool=tool.name, n=cfg.n, namespaces=cfg.nsc, rep=rep, scenario=scenario,
                           position=position, loadavg=os.getloadavg()[0], chain=chain, rtt_ms=cfg.rtt_ms,
                           kinds=cfg.kinds)
                results["runs"].append(res)
                line.append(f"{scenario} {res['wall_s']:.2f}s{'' if res['ok'] else ' FAILED'}")
            cleanup = admin.clear_namespaces(tool.namespaces)
            tool.after_rep(admin)
            log(f"  {tool.name:8s} {' | '.join(line)}  (cleanup {cleanup:.1f}s)")
            out.write_text(json.dumps(results, indent=1))  # a checkpoint after every chain


def run_benchmark(args) -> int:
    run_started = time.monotonic()
    apply_presets(args)
    tree = use_tree(args.tree)
    log(f"benchmarking the collection tree {tree}")
    matrix = parse_matrix(args)
    tools_available, skipped = available_tools(matrix, args)
    kubeconfig, state_dir, cluster = start_cluster(args)
    # Two runs on one cluster (a smoke test while someone benchmarks) must not share namespaces.
    prefix = f"b{secrets.token_hex(2)}" if args.kubeconfig else "b"
    try:
        admin = Admin(kubeconfig, state_dir)
        prepare_cluster(admin, kubeconfig, tools_available, args.smoke)
        workdir = Path(args.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        results = new_results(args, tree, skipped, tools_available, prefix)
        log(f"machine: {results['machine']['cores']} cores, {results['machine']['cpu']}, load {os.getloadavg()}")
        results["background"] = idle_background(admin, args.idle)
        if results["background"]:
            log(f"idle background over {args.idle:.0f}s: {results['background']['by_verb']}")
        base_cfg = Config(n=0, nsc=1, workdir=workdir, kubeconfig=kubeconfig, parallelism=args.parallelism,
                          ceiling_parallelism=16, reapply=args.reapply, prefix=prefix)
        results["ceiling_parallelism"] = ceiling_parallelism(admin, base_cfg, matrix, args, results)
        results["ceiling_tuning_by_block"] = {}
        results["runs"] = []
        started = time.monotonic()
        out = Path(args.out) if args.out else BENCH / "results" / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        for block in matrix:
            run_matrix_block(admin, base_cfg, block, tools_available, args, results, out)
        return finish(results, started, run_started, out)
    finally:
        if cluster and not args.keep_cluster:
            subprocess.run(cluster + ["down"])


def available_tools(matrix, args) -> tuple[list[str], dict]:
    """The matrix's tools that can run here (kubernetes.core installed first unless --no-setup), in
    the report's order, and why the others are skipped."""
    wanted = sorted({t for _, _, names, _, _, _ in matrix for t in names}, key=tool_order)
    if "k8s" in wanted and K8sTool.unavailable() and not args.no_setup:
        log(f"installing kubernetes.core ({ANSIBLE_PKG_SPEC} from PyPI) for the k8s tool")
        setup_k8s()
    tools_available, skipped = [], {}
    for name in wanted:
        reason = TOOL_CLASSES[name.split("@")[0]].unavailable()
        if reason:
            skipped[name] = reason
            log(f"skipping {name}: {reason}")
        else:
            tools_available.append(name)
    return tools_available, skipped


def prepare_cluster(admin: Admin, kubeconfig: str, tools_available, smoke: bool) -> None:
    """The CRDs every run needs (and kpt's ResourceGroup when kpt runs), then a pause for discovery."""
    install_crds(admin)
    if "kpt" in tools_available:
        subprocess.run(["kpt", "live", "install-resource-group"], env={**os.environ, "KUBECONFIG": kubeconfig},
                       capture_output=True, check=True)
    time.sleep(0.5 if smoke else 2)  # let discovery settle after the CRDs


def new_results(args, tree: Path, skipped: dict, tools_available, prefix: str) -> dict:
    """The results file's header: machine, tree, options, tools (the runs and figures follow)."""
    return {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine_info(),
            "tree": describe_tree(args.tree, tree),
            "config": {k: v for k, v in vars(args).items() if k not in ("cmd",)},
            "skipped_tools": skipped, "tools": {n: TOOL_CLASSES[n.split("@")[0]].label for n in tools_available},
            # what the expectations of the report depend on: with "changed" a run sends only
            # the members that differ; "always" (and every results file without this field,
            # from before issue 11) one apply per member on every run
            "reapply": args.reapply if supports_reapply(tree) else "always",
            "default_matrix": is_default_matrix(args),
            "blocks": [], "namespace_prefix": prefix}


def ceiling_parallelism(admin: Admin, base_cfg: Config, matrix, args, results: dict) -> int:
    """The ceiling's parallelism for loopback blocks of the default workload: --ceiling-parallelism,
    or tuned once here (recorded as results["ceiling_tuning"])."""
    loopback_ceiling = any("ceiling" in names and opts["rtt"] == 0 and opts["kinds"] == "all"
                           for _, _, names, _, _, opts in matrix)
    if args.ceiling_parallelism == "auto" and not loopback_ceiling:
        return 16  # every block with the ceiling is tuned at its own round trip (tuned_config)
    if args.ceiling_parallelism == "auto":
        log(f"tuning the ceiling's parallelism at N={args.tune_n}")
        results["ceiling_tuning"] = tune_ceiling(admin, base_cfg, (8, 16, 32), args.tune_n, 2)
        return results["ceiling_tuning"]["best"]
    return int(args.ceiling_parallelism)


def run_matrix_block(admin: Admin, base_cfg: Config, block: tuple, tools_available, args, results: dict,
                     out: Path) -> None:
    """One block of the matrix behind its own delaying proxy and workload, then its namespaces deleted."""
    n, nsc, names_here, reps, scenarios, options = block
    with latency.Link(base_cfg.kubeconfig, options["rtt"], base_cfg.workdir) as link, workload.kinds(options["kinds"]):
        names = [t for t in names_here if t in tools_available]
        block_started = time.monotonic()
        base = Config(n=n, nsc=nsc, workdir=base_cfg.workdir, kubeconfig=link.kubeconfig, parallelism=args.parallelism,
                      ceiling_parallelism=results["ceiling_parallelism"], reapply=args.reapply, prefix=base_cfg.prefix,
                      rtt_ms=options["rtt"], kinds=options["kinds"])
        cfg = tuned_config(admin, base, names, args, results)
        run_block(admin, cfg, names, reps, scenarios, args, results, out)
        admin.delete_namespaces([ns for name in names for ns in TOOL_CLASSES[name.split("@")[0]](cfg, name).namespaces],
                                wait=not args.smoke)
        # for the estimates of the next default matrix: cleanups included
        results["blocks"].append({"n": n, "namespaces": nsc, "tools": names, "reps": reps,
                                  "scenarios": list(scenarios), "rtt_ms": options["rtt"],
                                  "kinds": options["kinds"], "ceiling_parallelism": cfg.ceiling_parallelism,
                                  "wall_s": round(time.monotonic() - block_started, 1)})


def finish(results: dict, started: float, run_started: float, out: Path) -> int:
    """The run's times and summary written to ``out``; 1 if any run failed its check."""
    results["elapsed_s"] = round(time.monotonic() - started, 1)
    # the whole invocation as `make bench` takes it (cluster start, tuning, idle and cleanups)
    results["total_wall_s"] = round(time.monotonic() - run_started, 1)
    results["summary"] = summarize(results["runs"])
    out.write_text(json.dumps(results, indent=1))
    log(f"results: {out} ({results['elapsed_s']}s of runs, {results['total_wall_s']}s in all)")
    failed = [r for r in results["runs"] if not r["ok"]]
    if failed:
        log(f"{len(failed)} runs failed their check")
    return 1 if failed else 0
