"""The summary rows of a benchmark's runs: one row per (tool, N, namespaces, scenario, round trip,
workload kinds), with medians.

``bench.py`` writes the rows into a results file; ``report.py`` rebuilds them when it merges
several files. Both import them from here (and the scenario chain and the tool order they
sort by), so neither imports the other for them.
"""

from __future__ import annotations

import statistics

SCENARIOS = ("initial", "noop", "change", "preview", "prune")
ALL_TOOLS = ("ansible", "core", "kubectl", "kubectl-nv", "kpt", "k8s", "ceiling", "ping")


def tool_order(name: str) -> tuple:
    base, _, variant = name.partition("@")
    return (ALL_TOOLS.index(base), int(variant) if variant.isdigit() else 0, variant)


def summarize(runs: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["tool"], r["n"], r["namespaces"], r["scenario"], r.get("rtt_ms", 0),
                           r.get("kinds", "all")), []).append(r)
    rows = []
    for (tool, n, nsc, scenario, rtt, kinds), rs in sorted(
            groups.items(), key=lambda kv: (kv[0][4], kv[0][5], kv[0][1], kv[0][2], tool_order(kv[0][0]),
                                            SCENARIOS.index(kv[0][3]))):
        walls = sorted(r["wall_s"] for r in rs)
        med = statistics.median(walls)
        rss = [r["module_rss_kb"] for r in rs if r.get("module_rss_kb")]
        reqs = rs[len(rs) // 2]["requests"]  # requests of a middle run (they hardly vary)
        modes = {r.get("reapply") for r in rs}
        rows.append({
            "tool": tool, "n": n, "namespaces": nsc, "scenario": scenario, "runs": len(rs),
            "rtt_ms": rtt, "kinds": kinds,
            "reapply": modes.pop() if len(modes) == 1 else "mixed",
            "chain": rs[0].get("chain"),
            "ok": all(r["ok"] for r in rs),
            "median_s": round(med, 3), "min_s": round(walls[0], 3), "max_s": round(walls[-1], 3),
            "spread_pct": round(100 * (walls[-1] - walls[0]) / med, 1) if med else None,
            "cpu_s": round(statistics.median(r["cpu_s"] or 0 for r in rs), 3),
            "server_cpu_s": (round(statistics.median(r["server_cpu_s"] for r in rs), 3)
                             if all(r.get("server_cpu_s") is not None for r in rs) else None),
            "peak_rss_mib": round(max(rss) / 1024, 1) if rss else None,
            "module_median_s": (round(statistics.median(r["module"]["wall_s"] for r in rs), 3)
                                if all((r.get("module") or {}).get("wall_s") for r in rs) else None),
            "module_cpu_s": (round(statistics.median(r["module"]["cpu_s"] for r in rs), 3)
                             if all((r.get("module") or {}).get("cpu_s") is not None for r in rs) else None),
            "result_kb": (round(max(r["module"]["result_bytes"] for r in rs) / 1024, 1)
                          if all((r.get("module") or {}).get("result_bytes") for r in rs) else None),
            "requests": reqs["by_verb"],
            "requests_by_resource": reqs["by_resource"],
            "client_requests": (rs[len(rs) // 2].get("client_report") or {}).get("requests"),
            "round_trips": (rs[len(rs) // 2].get("client_report") or {}).get("round_trips"),
            "peak_in_flight": (rs[len(rs) // 2].get("client_report") or {}).get("peak_in_flight"),
        })
    return rows
