"""The benchmark's command line (``benchmarks/run``): run (the default), profile, setup, report."""

from __future__ import annotations

import argparse
import sys

from harness import runner
from harness.matrix import DEFAULT_BLOCKS, DEFAULT_MATRIX, DEFAULT_MINUTES, PRESETS, SCALE_BLOCKS
from harness.paths import ANSIBLE_PKG_SPEC, BENCH_STATE, K8S_VENV
from harness.profiling import run_profile
from harness.tools import setup_k8s
from summary import ALL_TOOLS, SCENARIOS

# The module's reapply option: "changed" (the default since issue 11) sends only members whose
# live state differs; "always" applies every member on every run (the behaviour before).
REAPPLY_MODES = ("changed", "always")
COMMANDS = ("run", "setup", "report", "profile")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.cmd == "setup":
        return setup_k8s()
    if args.cmd == "profile":
        return run_profile(args)
    if args.cmd == "report":
        import report

        return report.main(args.results, update_docs=args.update_docs)
    return runner.run_benchmark(args)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command and its options; without a command (or with options only) it is ``run``."""
    if not argv or argv[0] not in (*COMMANDS, "-h", "--help"):
        argv = ["run", *argv]
    return build_parser().parse_args(argv)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=runner.__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    add_run_options(sub.add_parser("run", help="run the benchmark (default)"))
    prof = sub.add_parser("profile", help="pyinstrument profiles of the core library and of ansible-playbook")
    prof.add_argument("--n", type=int, default=1000)
    prof.add_argument("--scenario", default="noop", choices=SCENARIOS)
    prof.add_argument("--tree", default="snapshot")
    prof.add_argument("--kubeconfig")
    prof.add_argument("--state-dir", default=str(BENCH_STATE / "cluster"))
    prof.add_argument("--keep-cluster", action="store_true")
    prof.add_argument("--workdir", default=str(BENCH_STATE / "work"))
    prof.add_argument("--parallelism", type=int, default=None)
    sub.add_parser("setup", help=f"install kubernetes.core ({ANSIBLE_PKG_SPEC} from PyPI) into {K8S_VENV}")
    rep = sub.add_parser("report", help="render the plot and tables from a results file")
    rep.add_argument("results", nargs="*", help="results files (merged); default: the newest")
    rep.add_argument("--update-docs", action="store_true")
    return ap


def add_run_options(run: argparse.ArgumentParser) -> None:
    add_matrix_options(run)
    run.add_argument("--parallelism", type=int, default=None,
                     help="our module's parallelism option (default: not set, it follows the round trip)")
    run.add_argument("--rtt", type=int, default=None,
                     help="round trip in ms for every block (through a delaying proxy), overriding the blocks' rtt=")
    run.add_argument("--reapply", choices=REAPPLY_MODES, default="changed",
                     help="our module's reapply option (recorded with every run; a tree without the option "
                     "always reapplies and is recorded so)")
    run.add_argument("--ceiling-parallelism", default="auto", help="a number, or auto (tune at --tune-n)")
    run.add_argument("--tune-n", type=int, default=1000)
    run.add_argument("--tree", default="snapshot",
                     help="collection tree to benchmark: 'snapshot' (a copy of this work tree's plugins taken at "
                     "the start, the default), '.' (the live work tree), git:REV (a commit), or a directory")
    run.add_argument("--kubeconfig", help="use this cluster (admin rights, /metrics readable) instead of starting one")
    run.add_argument("--state-dir", default=str(BENCH_STATE / "cluster"), help="state dir of the local control plane")
    run.add_argument("--keep-cluster", action="store_true")
    run.add_argument("--workdir", default=str(BENCH_STATE / "work"))
    run.add_argument("--out", help="results JSON (default benchmarks/results/bench-<time>.json)")
    run.add_argument("--timeout", type=float, default=900)
    run.add_argument("--idle", type=float, default=20, help="seconds of idle background measurement")
    run.add_argument("--no-setup", action="store_true",
                     help="do not pip-install kubernetes.core when it is missing (the k8s tool is skipped)")
    run.add_argument("--smoke", action="store_true",
                     help="CI smoke preset: N=50, 1 namespace, 1 rep; ours, the ceiling, and kubectl's apply")


def add_matrix_options(run: argparse.ArgumentParser) -> None:
    """What to measure: the matrix (or a preset) and the filters over it."""
    run.add_argument("--matrix", default=DEFAULT_MATRIX,
                     help="space-separated N:NAMESPACE_COUNTS:TOOLS[:REPS[:SCENARIOS[:OPTIONS]]] entries (TOOLS 'all' or "
                     "comma-separated; SCENARIOS comma-separated, in chain order, empty: all; OPTIONS rtt=MS "
                     "(a round trip through a delaying proxy: 0, 50, 150) and kinds=all|cm (ConfigMaps only)); "
                     f"default: {DEFAULT_MATRIX!r}, about {DEFAULT_MINUTES} minutes on a quiet 2-core machine ("
                     + ", ".join(f"{entry}: ~{minutes:g} min" for entry, minutes in DEFAULT_BLOCKS)
                     + ", plus ~2 min of ceiling tuning and idle measurement; estimated from the per-run wall "
                     "times in benchmarks/results)")
    run.add_argument("--preset", choices=sorted(PRESETS),
                     help="a named matrix instead of --matrix: scale = " + "; ".join(
                         f"{entry} (~{minutes:g} min)" for entry, minutes in SCALE_BLOCKS))
    run.add_argument("--sizes", help="only these N (comma-separated)")
    run.add_argument("--namespaces", help="only these namespace counts (comma-separated)")
    run.add_argument("--tools", help="only these tools (comma-separated): " + ",".join(ALL_TOOLS))
    run.add_argument("--reps", type=int, default=3)
