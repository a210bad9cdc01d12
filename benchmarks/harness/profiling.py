"""``benchmarks/run profile``: pyinstrument profiles of one scenario, of the core library in-process
and of ansible-playbook's controller."""

from __future__ import annotations

import secrets
import subprocess
import time
from pathlib import Path

from harness.cluster import Admin, install_crds, start_cluster
from harness.paths import BENCH, PY, ROOT, log
from harness.process import run_process
from harness.tools import AnsibleTool, Config, CoreTool
from harness.trees import use_tree
from summary import SCENARIOS


def run_profile(args) -> int:
    """Profile one scenario at N objects: the core library in-process, then ansible-playbook's controller."""
    use_tree(args.tree)
    kubeconfig, state_dir, lc = start_cluster(args)
    try:
        admin = Admin(kubeconfig, state_dir)
        install_crds(admin)
        time.sleep(2)
        cfg = Config(n=args.n, nsc=1, workdir=Path(args.workdir), kubeconfig=kubeconfig,
                     parallelism=args.parallelism, ceiling_parallelism=16,
                     prefix=f"b{secrets.token_hex(2)}" if args.kubeconfig else "b")
        out_dir = BENCH / "results"
        out_dir.mkdir(parents=True, exist_ok=True)
        for tool in (CoreTool(cfg), AnsibleTool(cfg)):
            tool.prepare()
            admin.create_namespaces(tool.namespaces)
            chain = SCENARIOS[:SCENARIOS.index(args.scenario) + 1]
            for scenario in chain:
                argv, env = tool.command(scenario)
                target = out_dir / f"profile-{tool.name}-{args.n}-{scenario}.txt"
                if scenario == args.scenario:
                    if tool.name == "core":
                        argv += ["--profile", str(target)]
                    else:  # the controller process; the module's own time is the core's, plus AnsiballZ
                        argv = [str(PY), "-m", "pyinstrument", "--no-color", "--unicode", "-o", str(target),
                                "-r", "text", *argv]
                res = run_process(argv, env, str(tool.dir), tool.dir / f"out-profile-{scenario}.log", 900)
                log(f"  {tool.name} {scenario}: {res['wall_s']:.2f}s rc={res['rc']}"
                    + (f" -> {target.relative_to(ROOT)}" if scenario == args.scenario else ""))
            admin.clear_namespaces(tool.namespaces)
            tool.after_rep(admin)
            admin.delete_namespaces(tool.namespaces)
        return 0
    finally:
        if lc and not args.keep_cluster:
            subprocess.run(lc + ["down"])
