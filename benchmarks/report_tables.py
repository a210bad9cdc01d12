"""The report's tables of times, requests, CPU and memory (loopback, the 11-kind workload)."""

from __future__ import annotations

from report_format import SCENARIO_TITLE, fmt_s, index, ratio, short, tools_in
from summary import SCENARIOS


def time_tables(data: dict) -> list[str]:
    idx = index(data["summary"])
    lines = []
    configs = sorted({(n, ns) for (_, n, ns, _) in idx})
    for n, nsc in configs:
        lines += [f"#### N = {n:,}, {nsc} namespace{'s' if nsc > 1 else ''}, round trip 0 ms (loopback)", "",
                  "Wall time in seconds: median of the runs (min–max spread in % of the median).", "",
                  "| tool | " + " | ".join(SCENARIO_TITLE[s] for s in SCENARIOS) + " |",
                  "|---|" + "---:|" * len(SCENARIOS)]
        for tool in tools_in(idx):
            cells = []
            present = False
            for s in SCENARIOS:
                r = idx.get((tool, n, nsc, s))
                if r is None:
                    cells.append("–")
                    continue
                present = True
                bad = "" if r["ok"] else " ✗"
                cells.append(f"{fmt_s(r['median_s'])} ({r['spread_pct']:.0f}%){bad}")
            if present:
                runs = max(idx[k]["runs"] for k in idx if k[0] == tool and k[1] == n and k[2] == nsc)
                lines.append(f"| {short(tool)} (×{runs}) | " + " | ".join(cells) + " |")
        # ratios
        ratio_rows = []
        for num, den, label in (("ansible", "kubectl", "ansible-playbook / kubectl"),
                                ("ansible", "kubectl-nv", "ansible-playbook / kubectl --validate=false"),
                                ("core", "kubectl", "core / kubectl"),
                                ("core", "ceiling", "core / ceiling"),
                                ("ansible", "ceiling", "ansible-playbook / ceiling")):
            cells = []
            for s in SCENARIOS:
                a, b = idx.get((num, n, nsc, s)), idx.get((den, n, nsc, s))
                cells.append(ratio(a and a["median_s"], b and b["median_s"]))
            if any(c != "–" for c in cells):
                ratio_rows.append(f"| *{label}* | " + " | ".join(cells) + " |")
        cells = []
        for s_ in SCENARIOS:
            a, b = idx.get(("core", n, nsc, s_)), idx.get(("ceiling", n, nsc, s_))
            cells.append(ratio(a and a["min_s"], b and b["min_s"]))
        if any(c != "–" for c in cells):
            ratio_rows.append("| *core / ceiling, best runs (min / min)* | " + " | ".join(cells) + " |")
        lines += ratio_rows + [""]
    return lines


def request_tables(data: dict, n: int) -> list[str]:
    idx = index(data["summary"])
    lines = scenario_table(idx, f"#### API requests at N = {n:,}, 1 namespace (server `/metrics` deltas, one run)",
                           "---|", lambda tool, s: _requests_cell(idx.get((tool, n, 1, s))))
    core_rows = [(s, idx.get(("core", n, 1, s))) for s in SCENARIOS]
    if any(r and r.get("client_requests") for _, r in core_rows):
        lines += [f"Our core library's own count of what it sent at N = {n:,} (client side, exact):", "",
                  "| scenario | requests |", "|---|---|"]
        for s, r in core_rows:
            if r and r.get("client_requests"):
                lines.append(f"| {SCENARIO_TITLE[s]} | " + ", ".join(f"{k} {v}" for k, v in r["client_requests"].items()) + " |")
        lines.append("")
    return lines


def ansible_split(data: dict) -> list[str]:
    idx = index(data["summary"])
    rows = [(k, r) for k, r in sorted(idx.items(), key=lambda kv: (kv[0][1], kv[0][2], SCENARIOS.index(kv[0][3])))
            if k[0] == "ansible" and r.get("module_median_s")]
    if not rows:
        return []
    lines = ["#### Where ansible-playbook's time goes (medians, seconds)", "",
             "| N / namespaces | scenario | ansible-playbook wall | of which the module process | core library wall | "
             "ansible-playbook CPU (tree) | module CPU | core CPU |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (t, n, nsc, s), r in rows:
        c = idx.get(("core", n, nsc, s))
        lines.append(f"| {n:,} / {nsc} | {SCENARIO_TITLE[s]} | {fmt_s(r['median_s'])} | {fmt_s(r['module_median_s'])} | "
                     f"{fmt_s(c['median_s']) if c else '–'} | {r['cpu_s']:.1f} | {r['module_cpu_s']:.1f} | "
                     f"{c['cpu_s']:.1f} |" if c else "")
    lines.append("")
    return [line for line in lines if line is not None]


def memory_table(data: dict) -> list[str]:
    idx = index(data["summary"])
    configs = sorted({(n, ns) for (_, n, ns, _) in idx})
    lines = ["#### Peak memory (MiB, largest over all runs and scenarios)", "",
             "Module process for ansible-playbook and kubernetes.core (the interpreter that runs the module, under "
             "`/usr/bin/time`); the process itself for the others.", "",
             "| tool | " + " | ".join(f"N={n:,}/{ns}ns" for n, ns in configs) + " |",
             "|---|" + "---:|" * len(configs)]
    def peak(tool, config):
        n, ns = config
        vals = [idx[(tool, n, ns, s)]["peak_rss_mib"] for s in SCENARIOS
                if (tool, n, ns, s) in idx and idx[(tool, n, ns, s)]["peak_rss_mib"]]
        return f"{max(vals):.0f}" if vals else "–"

    lines += tool_rows(idx, configs, peak)
    lines.append("")
    return lines


def cpu_table(data: dict, n: int) -> list[str]:
    idx = index(data["summary"])
    return scenario_table(idx, f"#### CPU seconds at N = {n:,}, 1 namespace (median): tool process tree / "
                          "kube-apiserver + etcd", "---:|", lambda tool, s: _cpu_cell(idx.get((tool, n, 1, s))))


def scenario_table(idx: dict, title: str, align: str, cell) -> list[str]:
    """A row per tool, a column per scenario: ``cell(tool, scenario)``."""
    return [title, "", "| tool | " + " | ".join(SCENARIO_TITLE[s] for s in SCENARIOS) + " |",
            "|---|" + align * len(SCENARIOS), *tool_rows(idx, SCENARIOS, cell), ""]


def tool_rows(idx: dict, columns, cell) -> list[str]:
    """A row per tool with anything to show: ``cell(tool, column)`` for each column ("–": nothing)."""
    rows = []
    for tool in tools_in(idx):
        cells = [cell(tool, column) for column in columns]
        if any(c != "–" for c in cells):
            rows.append(f"| {short(tool)} | " + " | ".join(cells) + " |")
    return rows


def _requests_cell(r) -> str:
    if r is None:
        return "–"
    verbs = {k: v for k, v in r["requests"].items() if k not in ("total",)}
    return f"**{r['requests'].get('total', 0)}**: " + ", ".join(f"{k} {v}" for k, v in sorted(verbs.items()))


def _cpu_cell(r) -> str:
    return "–" if r is None else f"{r['cpu_s']:.1f} / {r['server_cpu_s'] if r['server_cpu_s'] is not None else '–'}"
