"""The latency profile's tables (issue 30): one table per block measured through the delaying proxy
(or on loopback with ConfigMaps only), every heading naming its round trip.

``report.render`` shows the loopback blocks of the default workload with its older tables (their
headings say "round trip 0 ms") and these after them.
"""

from __future__ import annotations

from summary import SCENARIOS, tool_order

TITLE = {"initial": "initial apply", "noop": "no-op re-run", "change": "10% changed", "preview": "check-mode preview",
         "prune": "30% removed (prune)"}


def is_loopback_default(row: dict) -> bool:
    """A row of the older tables: loopback, the 11-kind workload."""
    return row.get("rtt_ms", 0) == 0 and row.get("kinds", "all") == "all"


def where(rtt: int, kinds: str) -> str:
    link = f"round trip {rtt} ms" + (" (loopback)" if rtt == 0 else " (delaying proxy)")
    return link + (", ConfigMaps only" if kinds == "cm" else ", 11 kinds")


def _cell(row: dict | None) -> str:
    if row is None:
        return "–"
    bad = "" if row["ok"] else " ✗"
    return f"{row['median_s']:.2f} ({row['min_s']:.2f}–{row['max_s']:.2f}){bad}"


def _ratio(a: dict | None, b: dict | None, minus: bool = False) -> str:
    if not a or not b or not b["median_s"]:
        return "–"
    if minus:
        return f"{a['median_s'] - b['median_s']:+.2f} s"
    return f"{a['median_s'] / b['median_s']:.2f}×"


def block_table(rows: list[dict], tuning: dict) -> list[str]:
    """One block (same N, namespaces, round trip, workload): medians, ratios, round trips."""
    first = rows[0]
    n, nsc, rtt, kinds = first["n"], first["namespaces"], first.get("rtt_ms", 0), first.get("kinds", "all")
    idx = {(r["tool"], r["scenario"]): r for r in rows}
    scenarios = [s for s in SCENARIOS if any(r["scenario"] == s for r in rows)]
    tools = sorted({r["tool"] for r in rows}, key=tool_order)
    tuned = tuning.get(f"rtt={rtt},kinds={kinds}")
    lines = [f"#### N = {n:,}, {nsc} namespace{'s' if nsc > 1 else ''}, {where(rtt, kinds)}", "",
             f"Wall seconds at a **{rtt} ms round trip**: median (min–max) of the runs, all measured in the same "
             "run, tools alternating."
             + (f" The ceiling's parallelism, tuned at this round trip: {tuned['best']} (of "
                + ", ".join(tuned["timings_s"]) + ")." if tuned and "ceiling" in tools else ""), "",
             "| tool | " + " | ".join(TITLE[s] for s in scenarios) + " |", "|---|" + "---:|" * len(scenarios)]
    for tool in tools:
        runs = max(r["runs"] for r in rows if r["tool"] == tool)
        lines.append(f"| {tool} (×{runs}) | " + " | ".join(_cell(idx.get((tool, s))) for s in scenarios) + " |")
    for num, den, label, minus in (("ansible", "ceiling@64", "ansible-playbook ÷ minimal client (64 parallel PATCHes)", False),
                                   ("ansible", "ceiling", "ansible-playbook ÷ ceiling (tuned)", False),
                                   ("core", "ceiling", "core ÷ ceiling (tuned)", False),
                                   ("ansible", "kubectl", "ansible-playbook ÷ kubectl --applyset", False),
                                   ("ansible", "ping", "ansible-playbook − ping playbook", True)):
        cells = [_ratio(idx.get((num, s)), idx.get((den, s)), minus) for s in scenarios]
        if any(c != "–" for c in cells):
            lines.append(f"| *{label}* | " + " | ".join(cells) + " |")
    trips = [idx.get(("core", s)) for s in scenarios]
    if any(r and r.get("round_trips") for r in trips):
        lines.append("| *core: round trips on the critical path (peak requests in flight)* | " + " | ".join(
            f"{r['round_trips']} ({r.get('peak_in_flight')})" if r and r.get("round_trips") else "–" for r in trips)
            + " |")
    return lines + [""]


def latency_tables(data: dict) -> list[str]:
    """Every block outside the older tables, by round trip, then workload, N and namespaces."""
    blocks: dict[tuple, list[dict]] = {}
    for row in data["summary"]:
        if is_loopback_default(row):
            continue
        key = (row.get("rtt_ms", 0), row.get("kinds", "all"), row["n"], row["namespaces"])
        blocks.setdefault(key, []).append(row)
    if not blocks:
        return []
    lines = ["### Latency profile (issue 30)", "",
             "Blocks measured through `benchmarks/delayproxy.py`, a TCP proxy that delays every chunk by half the "
             "round trip each way (TLS passes through), or on loopback with ConfigMaps only. The harness's own "
             "requests (metrics, counts, cleanups) do not go through it.", ""]
    tuning = data.get("ceiling_tuning_by_block") or {}
    for key in sorted(blocks, key=lambda k: (k[1], k[2], k[3], k[0])):
        lines += block_table(blocks[key], tuning)
    return lines
