"""What ``benchmarks/run`` measures: the default matrix and the presets, and the ``--matrix`` entries
read into blocks (N, namespace count, tools, repetitions, scenarios, block options)."""

from __future__ import annotations

import latency
from summary import ALL_TOOLS, SCENARIOS

# What `benchmarks/run` measures by default (N:namespace counts:tools[:repetitions[:scenarios]]),
# most important first, so that a run cut short still has the issue-11 targets. Each block covers
# targets of docs/performance.md; the estimates are from the per-run wall times of
# bench-main.json and bench-extra.json (`git show 7229bbe:benchmarks/results/NAME`: a loaded
# 2-core machine, before `reapply: changed`; a no-op or 10%-changed chain of ours is now cheaper)
# plus ~25% for the untimed cleanup between chains:
DEFAULT_BLOCKS = (
    # ours against the ceiling, every scenario: the no-op, 10%-changed and initial-apply targets,
    # the request expectations, core vs ceiling. ~80 s per repetition: ~5.5 min.
    ("1000:1:ansible,core,ceiling:3", 5.5),
    # the N=5,000 targets (no-op <= 0.3x the ceiling, initial apply <= 1.3x, module memory
    # <= 200 MB with full-object LISTs) and the slope. ~140 s per repetition + 5,000-object
    # cleanups: ~7 min.
    ("5000:1:ansible,ceiling:2:initial,noop,change", 7.0),
    # kinds x namespaces: the no-op's request bound with 3 namespaces (33 LISTs + 4). ~1.5 min.
    ("1000:3:ansible,core,ceiling:1:initial,noop,change", 1.5),
    # every peer, small: ~73 s per repetition (kubectl 28 s, ansible-playbook 14 s, k8s 13 s): ~4.5 min.
    ("100:1:all:3", 4.5),
    # the peers at N=1,000, once: kubectl's chain alone takes ~6 min (client-side validation,
    # 5 prune DELETEs/s), kubectl --validate=false ~0.5 min, kpt ~1.5 min: ~9.5 min.
    ("1000:1:kubectl,kubectl-nv,kpt:1", 9.5),
    # issue 30's latency targets: 1,000 ConfigMaps at a 50 ms round trip (delaying proxy), ours against
    # the minimal client (64 parallel PATCHes), the ceiling tuned there and a one-task ping playbook.
    ("1000:1:ansible,core,ceiling,ceiling@64,ping:2:initial,noop,change:rtt=50,kinds=cm", 4.0),
)
# Scale (issue 30 point 5, `--preset scale`): N = 10,000 and 25,000, one repetition of every
# scenario but the preview, ours through ansible-playbook against the ceiling. Estimated from N=10,000
# on loopback (initial 31 s, ceiling 22 s, a no-op 4 s) scaled linearly, plus the cleanups:
# ~9 min for 10,000, ~20 min for 25,000.
SCALE_BLOCKS = (("10000:1:ansible,ceiling:1:initial,noop,change,prune", 9.0),
                ("25000:1:ansible,ceiling:1:initial,noop,change,prune", 20.0))
PRESETS = {"scale": " ".join(entry for entry, _ in SCALE_BLOCKS)}
# With the ceiling's tuning (~1.5 min) and the idle measurement: ~30 minutes on a quiet 2-core
# machine (the old default took ~55). Left out: kubectl and kpt at N=5,000 (one kubectl chain
# takes over 20 minutes), kubernetes.core at N=1,000 (~1.5 min per chain, it cannot prune), the
# prune at N=5,000 (no issue-11 target; the 10% change is there instead).
DEFAULT_MATRIX = " ".join(entry for entry, _ in DEFAULT_BLOCKS)
DEFAULT_MINUTES = round(sum(minutes for _, minutes in DEFAULT_BLOCKS) + 2)
# --smoke (what CI runs): kubectl only applies here, its prune waits 200 ms per DELETE (client-side
# rate limit).
SMOKE_MATRIX = "50:1:ansible,core,ceiling 50:1:kubectl:1:initial,noop"


def apply_presets(args) -> None:
    """Put the matrix of --smoke or --preset in ``args`` (and the smoke run's repetitions, ceiling
    parallelism and idle time); the results file records ``args`` as changed here."""
    if args.smoke:
        args.matrix = SMOKE_MATRIX
        args.reps = 1
        if args.ceiling_parallelism == "auto":
            args.ceiling_parallelism = "16"
        args.idle = min(args.idle, 2)
    if args.preset:
        args.matrix = PRESETS[args.preset]


def is_default_matrix(args) -> bool:
    """Does the run measure the whole default matrix (what the report compares with its targets)?"""
    return args.matrix == DEFAULT_MATRIX and not (args.sizes or args.namespaces or args.tools)


def parse_matrix(args) -> list[tuple]:
    """The blocks of ``args.matrix`` that --sizes, --namespaces and --tools keep, in order:
    (n, namespace count, tool names, repetitions, scenarios, options {"rtt": ms, "kinds": ...})."""
    only_n = {int(x) for x in args.sizes.split(",")} if args.sizes else None
    only_ns = {int(x) for x in args.namespaces.split(",")} if args.namespaces else None
    only_tools = set(args.tools.split(",")) if args.tools else None
    matrix = []
    for entry in args.matrix.split():
        n, namespace_counts, names, reps, scenarios, options = _parse_entry(entry, args)
        for nsc in namespace_counts:
            if (only_n and n not in only_n) or (only_ns and nsc not in only_ns):
                continue
            names_here = [t for t in names if not only_tools or t in only_tools]
            if names_here:
                matrix.append((n, nsc, names_here, reps, scenarios, options))
    return matrix


def _parse_entry(entry: str, args) -> tuple:
    """N:NAMESPACE_COUNTS:TOOLS[:REPS[:SCENARIOS[:OPTIONS]]], read; an unknown tool or scenario exits."""
    fields = entry.split(":")
    n_text, ns_text, tools_text = fields[:3]
    reps = int(fields[3]) if len(fields) > 3 and fields[3] else args.reps
    scenarios = tuple(fields[4].split(",")) if len(fields) > 4 and fields[4] else SCENARIOS
    options = latency.parse_options(fields[5] if len(fields) > 5 else "")
    if args.rtt is not None:
        options["rtt"] = args.rtt
    if set(scenarios) - set(SCENARIOS):
        raise SystemExit(f"unknown scenarios in --matrix: {fields[4]}")
    names = list(ALL_TOOLS) if tools_text == "all" else tools_text.split(",")
    unknown = {t.split("@")[0] for t in names} - set(ALL_TOOLS)
    if unknown:
        raise SystemExit(f"unknown tools in --matrix: {', '.join(sorted(unknown))}")
    return int(n_text), [int(x) for x in ns_text.split(",")], names, reps, scenarios, options
