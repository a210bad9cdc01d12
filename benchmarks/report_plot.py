"""The report's plot (docs/performance.png): wall time against N per scenario, one line per tool."""

from __future__ import annotations

import sys
from pathlib import Path

from report_format import SCENARIO_TITLE, index, short, tools_in
from summary import SCENARIOS

STYLE = {"ansible": ("tab:blue", "o", "-"), "core": ("tab:cyan", "s", "-"), "kubectl": ("tab:red", "^", "-"),
         "kubectl-nv": ("tab:orange", "<", "-"),
         "kpt": ("tab:green", "v", "-"), "k8s": ("tab:purple", "D", "-"), "ceiling": ("black", "x", "--")}


def plot(data: dict, out: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install -r requirements-dev.txt)", file=sys.stderr)
        return False
    idx = index(data["summary"])
    fig, grid = plt.subplots(2, 3, figsize=(15, 9.5), sharey=True)
    axes = list(grid.flat[:len(SCENARIOS)])
    legend_ax = grid.flat[len(SCENARIOS)]
    for ax, scenario in zip(axes, SCENARIOS):
        draw_scenario(ax, idx, scenario)
    for ax in (grid[0][0], grid[1][0]):
        ax.set_ylabel("wall time, s (median; bars: min–max)")
    seen = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    legend_ax.axis("off")
    legend_ax.legend(list(seen.values()), list(seen.keys()), loc="center", fontsize=9, frameon=False)
    m = data.get("machine", {})
    fig.suptitle(f"ApplySet tools: wall time against N, log-log, round trip 0 ms (loopback) ({m.get('cores')} cores, "
                 f"{m.get('cpu', '')}, shared "
                 "with other work; solid: 1 namespace, dotted: 3 namespaces)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def draw_scenario(ax, idx: dict, scenario: str) -> None:
    """One scenario's panel: a line per tool and namespace count, min–max bars, a slope-1 guide."""
    for tool in tools_in(idx):
        for nsc, alpha, style_override in ((1, 1.0, None), (3, 0.55, ":")):
            pts = sorted((n, r) for (t, n, ns, s), r in idx.items() if t == tool and ns == nsc and s == scenario)
            if not pts:
                continue
            color, marker, line = STYLE.get(tool, ("grey", "+", ":"))
            xs = [n for n, _ in pts]
            ys = [r["median_s"] for _, r in pts]
            lo = [r["median_s"] - r["min_s"] for _, r in pts]
            hi = [r["max_s"] - r["median_s"] for _, r in pts]
            ax.errorbar(xs, ys, yerr=[lo, hi], color=color, marker=marker, linestyle=style_override or line,
                        alpha=alpha, capsize=2, markersize=5, linewidth=1.4,
                        label=f"{short(tool)}{'' if nsc == 1 else ' (3 ns)'}")
    all_n = sorted({n for (_, n, _, _) in idx})
    anchor = next((idx[k]["median_s"] for k in sorted(idx) if k[0] == "ceiling" and k[2] == 1 and k[3] == scenario
                   and k[1] == all_n[0]), None)
    if len(all_n) > 1 and anchor:  # a guide with slope 1 through the ceiling's first point: linear cost
        x0, x1 = all_n[0], all_n[-1]
        ax.plot([x0, x1], [anchor, anchor * x1 / x0], color="grey", linewidth=1, linestyle="-.", alpha=0.7,
                label="slope 1 = linear in N (through the ceiling's first point)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(SCENARIO_TITLE[scenario], fontsize=10)
    ax.set_xlabel("objects (N)")
    ax.grid(True, which="both", alpha=0.25)
    ax.tick_params(labelleft=True)
