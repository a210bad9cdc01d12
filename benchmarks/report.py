"""Turn a results file into the plot and the tables of docs/performance.md.

``benchmarks/run report [RESULTS.json ...] [--update-docs]``: several files are merged (their runs
pooled); without a file, the most recently written ``benchmarks/results/bench-*.json`` (a run made here)
is used, else the committed ``benchmarks/results/default-matrix.json``. Writes ``docs/performance.png`` and
``benchmarks/results/summary.md``; with ``--update-docs`` also replaces the part of
``docs/performance.md`` between the ``BEGIN GENERATED`` and ``END GENERATED`` markers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import workload  # noqa: E402
from latency_report import is_loopback_default, latency_tables  # noqa: E402
from report_format import SCENARIO_TITLE, SHORT, fmt_s, index, short  # noqa: E402
from report_plot import plot  # noqa: E402
from report_tables import ansible_split, cpu_table, memory_table, request_tables, time_tables  # noqa: E402
from summary import SCENARIOS, summarize  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
# The committed run of the default matrix, which the page's generated part comes from.
DEFAULT_MATRIX_RESULTS = "default-matrix.json"
DOC = ROOT / "docs" / "performance.md"
PLOT = ROOT / "docs" / "performance.png"
BEGIN, END = "<!-- BEGIN GENERATED (benchmarks/run report --update-docs) -->", "<!-- END GENERATED -->"


def latest() -> Path:
    """The newest run made here (``bench-<time>.json``, the harness's default ``--out``), else the
    committed run of the default matrix."""
    files = sorted(RESULTS.glob("bench-*.json"), key=lambda p: p.stat().st_mtime)
    if files:
        return files[-1]
    if (RESULTS / DEFAULT_MATRIX_RESULTS).exists():
        return RESULTS / DEFAULT_MATRIX_RESULTS
    raise SystemExit("no results in benchmarks/results; run benchmarks/run first")


# ----- what a run of ours must send -----------------------------------------------------------------
#
# "Writes" are the requests that change something: POST, PUT, PATCH (server-side apply included) and
# DELETE, server-side dry runs left out. The server's /metrics labels a dry run only when dryRun is
# in the query; a DELETE carries it in its body, so the check-mode preview's dry-run DELETEs are
# counted as DELETEs there and are told apart by the scenario.
WRITE_VERBS = ("POST", "PUT", "PATCH", "APPLY", "DELETE")
OURS = ("ansible", "core")


def reapply_mode(row: dict) -> str:
    """How the run treated unchanged members. Results from before issue 11 record nothing: their
    collection applied every member on every run ("always")."""
    return row.get("reapply") or "always"


def _resource(kind: str) -> str:
    """A kind's resource as /metrics names it: plural.group (the core group has none)."""
    group = workload.API_VERSION[kind].rpartition("/")[0]
    return workload.PLURAL[kind] + (f".{group}" if group else "")


def parent_resource(nsc: int) -> str:
    """The benchmark's parent: a Secret in the namespace, or the cluster-scoped ApplySet for several."""
    return "secrets" if nsc == 1 else f"applysets.{workload.BENCH_GROUP}"


def member_writes(n: int, scenario: str, mode: str, after_change: bool = True) -> dict:
    """The members' writes a scenario needs, by verb ("apply", "dry-run apply", "delete") and resource.

    With reapply: changed only members whose live state differs are sent: all at the initial apply,
    none on the no-op, the changed tenth on the 10% change; the preview and the prune (whose other
    70% equal the 10%-changed variant) only delete, as dry runs for the preview, and apply the
    changed tenth too when the chain had no 10% change before them (``after_change`` false). With
    reapply: always (results from before issue 11) every member that stays is applied on every run."""
    stays = [i for i in range(n) if not workload.removed(i)]
    gone = [i for i in range(n) if workload.removed(i)]
    changed = [i for i in range(n) if workload.changed(i)]
    if mode == "changed":
        carried = () if after_change else [i for i in changed if not workload.removed(i)]
        applied = {"initial": range(n), "noop": (), "change": changed, "preview": carried, "prune": carried}[scenario]
    else:
        applied = range(n) if scenario in ("initial", "noop", "change") else stays
    deleted = gone if scenario in ("preview", "prune") else ()
    out = {"apply": {}, "dry-run apply": {}, "delete": {}}
    for verb, items in (("dry-run apply" if scenario == "preview" else "apply", applied), ("delete", deleted)):
        for i in items:
            res = _resource(workload.kind_of(i))
            out[verb][res] = out[verb].get(res, 0) + 1
    return out


def hints_change(n: int, nsc: int, scenario: str) -> bool:
    """Do the parent's hints (group-kinds, namespaces) change in this scenario? Only at the first
    apply here: the 10% change keeps every object, and the removed 30% leave every kind in place."""
    if scenario == "initial":
        return True
    before = {workload.kind_of(i) for i in range(n)}
    after = {workload.kind_of(i) for i in range(n) if scenario not in ("preview", "prune") or not workload.removed(i)}
    return before != after


def ours_may_touch(nsc: int) -> set[str]:
    """The resources a run of ours touches here: the workload's kinds, the parent's, the namespaces
    it writes into (a GET each) and the parent type's CRD (a GET when the parent is a custom resource)."""
    return ({_resource(kind) for kind in workload.KINDS}
            | {parent_resource(nsc), "namespaces", "customresourcedefinitions.apiextensions.k8s.io"})


def server_counts(row: dict) -> dict:
    """Writes and dry runs by resource, and requests in all, from the server's counts, on the
    resources a run of ours may touch (and discovery): what other clients of a shared control
    plane send elsewhere is left out; what they send to the same resources is not (the control
    plane's own periodic discovery included: run on a quiet control plane of its own)."""
    relevant = ours_may_touch(row["namespaces"])
    writes: dict[str, int] = {}
    dry: dict[str, int] = {}
    requests = 0
    for key, count in (row.get("requests_by_resource") or {}).items():
        name, _, resource = key.rpartition(" ")
        verb = name.split()[0]
        if resource not in relevant and resource != "discovery" or verb == "WATCH":
            continue
        requests += count
        if verb not in WRITE_VERBS:
            continue
        target = dry if "(dry run)" in name or (verb == "DELETE" and row["scenario"] == "preview") else writes
        target[resource] = target.get(resource, 0) + count
    return {"writes": writes, "dry": dry, "requests": requests}


def check_writes(row: dict) -> dict:
    """One run of ours against what it must send (reapply: changed).

    The core library counts what it sent itself, exactly (members, parent, anything else); for
    ansible-playbook the server's counts are used, per resource: what the parent's resource gets
    beyond its members is the parent's writes. Returns the figures, ``ok`` and ``why``."""
    n, nsc, scenario = row["n"], row["namespaces"], row["scenario"]
    want_writes, want_dry = _wanted(row)
    client = row.get("client_requests") or {}
    if client:
        figures = _client_figures(client, scenario == "preview", want_writes, want_dry)
    else:
        figures = _server_figures(row, want_writes, want_dry)
    writes, parent = figures["writes"], figures["parent"]
    out = {"writes": writes, "members": writes - parent, "parent": parent, "dry": figures["dry"],
           "requests": figures["requests"], "bound": len(workload.KINDS) * nsc + 4, "source": figures["source"],
           "wrong": figures["wrong"], "hints_change": hints_change(n, nsc, scenario)}
    why = _why_not(out, scenario)
    out["ok"] = not why
    out["why"] = "; ".join(why)
    return out


def _wanted(row: dict) -> tuple[dict, dict]:
    """The member writes and the dry runs the run must send, by resource."""
    preview = row["scenario"] == "preview"
    want_writes: dict[str, int] = {}
    want_dry: dict[str, int] = {}
    for verb, per_res in member_writes(row["n"], row["scenario"], "changed", after_change(row)).items():
        target = want_dry if verb == "dry-run apply" or (verb == "delete" and preview) else want_writes
        for res, k in per_res.items():
            target[res] = target.get(res, 0) + k
    return want_writes, want_dry


def _client_figures(client: dict, preview: bool, want_writes: dict, want_dry: dict) -> dict:
    """What the core library counted it sent: members, parent and anything else, exactly."""
    wrong: dict[str, tuple] = {}
    member_verbs = ("PATCH apply", "DELETE other")
    parent = sum(v for k, v in client.items() if "parent" in k and k.split()[0] in WRITE_VERBS)
    members = sum(client.get(k, 0) for k in member_verbs)
    others = {k: v for k, v in client.items()
              if k.split()[0] in WRITE_VERBS and "parent" not in k and k not in member_verbs}
    writes = parent + sum(others.values()) + (0 if preview else members)
    dry = members if preview else 0
    if (0 if preview else members) != sum(want_writes.values()):
        wrong["members"] = (members, sum(want_writes.values()))
    if dry != sum(want_dry.values()):
        wrong["dry runs"] = (dry, sum(want_dry.values()))
    wrong.update({k: (v, 0) for k, v in others.items()})
    return {"writes": writes, "parent": parent, "dry": dry, "requests": sum(client.values()), "source": "client",
            "wrong": wrong}


def _server_figures(row: dict, want_writes: dict, want_dry: dict) -> dict:
    """The server's counts per resource; the parent's writes are what its resource got beyond members."""
    wrong: dict[str, tuple] = {}
    got = server_counts(row)
    parent_res = parent_resource(row["namespaces"])
    # fewer writes there than the members need is a shortfall of members, not negative parent writes
    parent = max(0, got["writes"].get(parent_res, 0) - want_writes.get(parent_res, 0))
    for have, want, label in ((got["writes"], want_writes, ""), (got["dry"], want_dry, " (dry runs)")):
        for res in set(have) | set(want):
            expected = want.get(res, 0) + (parent if not label and res == parent_res else 0)
            if have.get(res, 0) != expected:
                wrong[res + label] = (have.get(res, 0), expected)
    return {"writes": sum(got["writes"].values()), "parent": parent, "dry": sum(got["dry"].values()),
            "requests": got["requests"], "source": "server", "wrong": wrong}


def _why_not(out: dict, scenario: str) -> list[str]:
    """Why a run's figures are not what the scenario must send (empty: they are)."""
    why = []
    writes, parent, requests, bound = out["writes"], out["parent"], out["requests"], out["bound"]
    if out["wrong"]:
        why.append("differs from the expectation: " + ", ".join(
            f"{what} {a} (expected {b})" for what, (a, b) in sorted(out["wrong"].items())))
    if scenario == "noop":
        if writes:
            why.append(f"{writes} writes on a no-op")
        if requests > bound:
            why.append(f"{requests} requests > kinds × namespaces + 4 = {bound}")
    elif scenario == "change" and parent and not out["hints_change"]:
        why.append(f"{parent} parent writes while the hints do not change (the run's claim)")
    elif scenario == "preview" and parent:
        why.append(f"{parent} parent writes in check mode")
    return why


def after_change(row: dict) -> bool:
    """Did the run's chain have the 10% change before this scenario? Results files record the
    chain since issue 11; before, a chain that left it out ran only at N=5,000 with reapply: always."""
    return "change" in (row.get("chain") or SCENARIOS)


def expectation_text(row: dict) -> str:
    n, nsc, s = row["n"], row["namespaces"], row["scenario"]
    e = member_writes(n, s, "changed", after_change(row))
    applies, deletes = sum(e["apply"].values()), sum(e["delete"].values())
    bound = len(workload.KINDS) * nsc + 4
    if s == "initial":
        return f"{applies:,} member applies + parent writes"
    if s == "noop":
        return f"0 writes, ≤ {bound} requests (kinds × namespaces + 4)"
    if s == "change":
        return (f"{applies:,} changed + parent writes (met only with 0 parent writes, or when the hints change: "
                f"{'they do' if hints_change(n, nsc, s) else 'they do not'})")
    if s == "preview":
        dry_applies = sum(e["dry-run apply"].values())
        return f"0 writes; {deletes:,} dry-run DELETEs, {dry_applies} dry-run applies of changed members"
    return f"{deletes:,} deletes + {applies} applies of changed members + parent writes"


def measured_text(row: dict, c: dict) -> str:
    s = row["scenario"]
    if s == "noop":
        text = f"{c['writes']} writes, {c['requests']} requests"
    elif s == "preview":
        text = f"{c['writes']} writes; {c['dry']:,} dry runs"
    else:
        text = f"{c['writes']:,} writes = {c['members']:,} members + {c['parent']} parent"
    return text + f" ({c['source']} count)"


def writes_table(data: dict) -> list[str]:
    """Our runs with reapply: changed against what they must write (nothing for older results)."""
    rows = [r for r in data["summary"] if r["tool"] in OURS and reapply_mode(r) == "changed"]
    if not rows:
        return []
    rows.sort(key=lambda r: (r["n"], r["namespaces"], OURS.index(r["tool"]), SCENARIOS.index(r["scenario"])))
    lines = ["#### Writes of ours against what the run must write (`reapply: changed`, one run each)", "",
             "Writes: POST, PUT, PATCH (server-side apply) and DELETE without dry run. The core library counts "
             "what it sent itself (client count, exact); ansible-playbook's are the server's `/metrics` deltas on "
             "discovery and the resources a run of ours touches: the workload's, the parent's, namespaces and the "
             "parent type's CRD (server count; the parent's writes are what its resource gets beyond the members; other clients of a shared control plane add to it, and so does the control "
             "plane's own periodic discovery, see the idle background above). The server "
             "labels a DELETE's dry run only in the query, and ours carries it in the body, so the preview's DELETEs "
             "are counted as its dry runs.", "",
             "| tool | N / namespaces | scenario | expected | measured | met |", "|---|---|---|---|---|---|"]
    for r in rows:
        c = check_writes(r)
        lines.append(f"| {short(r['tool'])} | {r['n']:,} / {r['namespaces']} | {SCENARIO_TITLE[r['scenario']]} | "
                     f"{expectation_text(r)} | {measured_text(r, c)} | {'yes' if c['ok'] else 'no: ' + c['why']} |")
    lines.append("")
    return lines


def target_table(title: str, rows) -> list[str]:
    """A table of (target, measured, met) rows; met None: not measured."""
    lines = [title, "", "| target | measured | met |", "|---|---|---|"]
    for target, measured, ok in rows:
        lines.append(f"| {target} | {measured} | {'yes' if ok else 'no' if ok is not None else 'not measured'} |")
    lines.append("")
    return lines


def targets(data: dict) -> list[str]:
    idx = index(data["summary"])
    return target_table("#### Targets, as computed from this run",
                        _peer_targets(idx) + _ceiling_targets(idx) + _request_targets(idx) + _growth_targets(idx))


def _peer_targets(idx: dict) -> list[tuple]:
    rows = []
    for s in ("initial", "noop", "prune"):
        for nsc in (1, 3):
            a = idx.get(("ansible", 1000, nsc, s))
            for kt in ("kubectl", "kubectl-nv"):
                k = idx.get((kt, 1000, nsc, s))
                if a and k:
                    r = a["median_s"] / k["median_s"]
                    rows.append((f"ansible-playbook ≤ 0.5× {SHORT[kt]}, {SCENARIO_TITLE[s]}, N=1,000, {nsc} ns",
                                 f"{fmt_s(a['median_s'])} s vs {fmt_s(k['median_s'])} s = {r:.2f}×", r <= 0.5))
    return rows


def _ceiling_targets(idx: dict) -> list[tuple]:
    rows = []
    for n in (1000, 5000):
        for nsc in (1, 3):
            for s in SCENARIOS:
                c, z = idx.get(("core", n, nsc, s)), idx.get(("ceiling", n, nsc, s))
                if c and z:
                    r = c["median_s"] / z["median_s"]
                    best = c["min_s"] / z["min_s"]
                    rows.append((f"core ≤ 1.3× ceiling, {SCENARIO_TITLE[s]}, N={n:,}, {nsc} ns",
                                 f"median {fmt_s(c['median_s'])} s vs {fmt_s(z['median_s'])} s = {r:.2f}×; "
                                 f"best {fmt_s(c['min_s'])} s vs {fmt_s(z['min_s'])} s = {best:.2f}×; "
                                 f"CPU {c['cpu_s']:.1f} s vs {z['cpu_s']:.1f} s", r <= 1.3))
    return rows


def _request_targets(idx: dict) -> list[tuple]:
    """Requests of results from before issue 11 (reapply: always): one write per applied object,
    metadata-only prune LISTs, discovery <= 3; later results are judged in the writes table."""
    rows = []
    for (tool, n, nsc, s), r in sorted(idx.items()):
        if tool != "core" or not r.get("client_requests") or nsc != 1 or reapply_mode(r) != "always":
            continue
        cr = r["client_requests"]
        applies = cr.get("PATCH apply", 0)
        expected = n - (int(n * 0.3) if s in ("preview", "prune") else 0)
        discovery = cr.get("GET discovery", 0)
        full = cr.get("LIST full", 0)
        ok = applies == expected and discovery <= 3 and (full == 0 or s == "preview")
        rows.append((f"requests, core, {SCENARIO_TITLE[s]}, N={n:,}",
                     f"{applies} member PATCHes for {expected} objects, parent writes "
                     f"{cr.get('PATCH parent', 0) + cr.get('POST parent (create)', 0)}, discovery {discovery}, "
                     f"LIST metadata {cr.get('LIST metadata', 0)}, LIST full {full}", ok))
    return rows


def _growth_targets(idx: dict) -> list[tuple]:
    """The module's memory at N=5,000, and time growing linearly from 1,000 to 5,000."""
    rows = []
    for n in (5000,):
        vals = [r["peak_rss_mib"] for (t, nn, _, _), r in idx.items() if t == "ansible" and nn == n and r["peak_rss_mib"]]
        rows.append((f"module process peak RSS ≤ 200 MB at N={n:,}", f"{max(vals):.0f} MiB" if vals else "–",
                     (max(vals) * 1.048576 <= 200) if vals else None))
    for tool in ("core", "ansible", "ceiling", "kubectl"):
        for s in ("initial", "noop"):
            a, b = idx.get((tool, 1000, 1, s)), idx.get((tool, 5000, 1, s))
            if a and b:
                growth = b["median_s"] / a["median_s"]
                rows.append((f"linear growth, {SHORT[tool]}, {SCENARIO_TITLE[s]}: time(5,000)/time(1,000) ≈ 5",
                             f"{growth:.2f}", growth <= 6.0))
    return rows


def issue11_targets(data: dict) -> list[str]:
    """The targets of issue 11, from the runs made with reapply: changed (none in older results)."""
    idx = index(data["summary"])
    ours = {k: r for k, r in idx.items() if k[0] in OURS and reapply_mode(r) == "changed"}
    if not ours:
        return []
    spaces = sorted({k[2] for k in ours}) or [1]
    rows = (_noop_time_targets(idx, ours, spaces) + _noop_request_targets(ours, spaces)
            + _change_targets(ours, spaces) + _initial_targets(idx, ours) + _run_targets(data, ours))
    return target_table("#### Targets of issue 11 (re-runs that write nothing), as computed from this run", rows)


def _noop_time_targets(idx: dict, ours: dict, spaces) -> list[tuple]:
    rows = []
    for n, limit in ((1000, 0.5), (5000, 0.3)):
        for nsc in spaces:
            a, z = ours.get(("ansible", n, nsc, "noop")), idx.get(("ceiling", n, nsc, "noop"))
            target = f"no-op re-run through ansible-playbook ≤ {limit}× the ceiling's no-op, N={n:,}, {nsc} ns"
            if a and z:
                r = a["median_s"] / z["median_s"]
                rows.append((target, f"{fmt_s(a['median_s'])} s vs {fmt_s(z['median_s'])} s = {r:.2f}× "
                             f"(medians of {a['runs']} and {z['runs']} runs)", r <= limit))
            elif nsc == 1:
                rows.append((target, "–", None))
    return rows


def _noop_request_targets(ours: dict, spaces) -> list[tuple]:
    rows = []
    for n in (1000, 5000):
        for nsc in spaces:
            a = ours.get(("ansible", n, nsc, "noop"))
            bound = len(workload.KINDS) * nsc + 4
            target = f"no-op re-run through ansible-playbook: 0 writes, ≤ {bound} requests (kinds × namespaces + 4), N={n:,}, {nsc} ns"
            if a:
                c = check_writes(a)
                rows.append((target, measured_text(a, c) + ("" if c["ok"] else f"; {c['why']}"), c["ok"]))
            elif nsc == 1:
                rows.append((target, "–", None))
    return rows


def _change_targets(ours: dict, spaces) -> list[tuple]:
    rows = []
    for n in (1000, 5000):
        for tool in OURS:
            for nsc in spaces:
                r = ours.get((tool, n, nsc, "change"))
                if not r:
                    if tool == "ansible" and nsc == 1:
                        rows.append((f"10% changed: writes = changed objects (+ parent if its hints change), N={n:,}, 1 ns", "–", None))
                    continue
                c = check_writes(r)
                hints = "the hints change" if c["hints_change"] else "the hints do not change"
                rows.append((f"10% changed, {short(tool)}: writes = changed objects (+ parent if its hints change), N={n:,}, {nsc} ns",
                             f"{c['writes']:,} writes = {c['members']:,} changed + {c['parent']} parent ({hints}; {c['source']} "
                             f"count)" + ("" if c["ok"] else f"; {c['why']}"), c["ok"]))
    return rows


def _initial_targets(idx: dict, ours: dict) -> list[tuple]:
    rows = []
    for n in (1000, 5000):
        a, z = ours.get(("ansible", n, 1, "initial")), idx.get(("ceiling", n, 1, "initial"))
        target = f"initial apply through ansible-playbook ≤ 1.3× the ceiling, N={n:,}, 1 ns"
        if a and z:
            r = a["median_s"] / z["median_s"]
            rows.append((target, f"{fmt_s(a['median_s'])} s vs {fmt_s(z['median_s'])} s = {r:.2f}× "
                         f"(medians of {a['runs']} and {z['runs']} runs)", r <= 1.3))
        else:
            rows.append((target, "–", None))
    return rows


def _run_targets(data: dict, ours: dict) -> list[tuple]:
    """The module's memory at N=5,000 and the default run's total time."""
    vals = [r["peak_rss_mib"] for (t, n, _, _), r in ours.items() if t == "ansible" and n == 5000 and r["peak_rss_mib"]]
    rows = [("module process peak RSS ≤ 200 MB at N=5,000, full-object LISTs",
             f"{max(vals):.0f} MiB" if vals else "–", (max(vals) * 1.048576 <= 200) if vals else None)]
    total = data.get("total_wall_s")
    if data.get("default_matrix") and total:
        rows.append(("`make bench` default run < 40 min", f"{total / 60:.1f} min in all (start to results file)",
                     total < 40 * 60))
    else:
        rows.append(("`make bench` default run < 40 min",
                     "not the default matrix" + (f" (this run: {total / 60:.1f} min in all)" if total else ""), None))
    return rows


def render(data: dict, source: Path) -> str:
    latency = latency_tables(data)
    # The older tables: loopback, the 11-kind workload (the latency blocks follow them).
    data = dict(data, summary=[r for r in data["summary"] if is_loopback_default(r)])
    m = data.get("machine", {})
    cfg = data.get("config", {})
    sources = [source] + [Path(p) for p in data.get("merged", [])]
    shown = ", ".join(f"`{p.relative_to(ROOT) if p.is_absolute() and p.is_relative_to(ROOT) else p}`" for p in sources)
    tree = data.get("tree") or {}
    tuning = data.get("ceiling_tuning")
    tuned = ""
    if tuning:
        tuned = " (picked at the start from " + ", ".join(
            f"{p}: {' / '.join(f'{t:.1f}' for t in ts)} s" for p, ts in tuning["timings_s"].items()) + f" at N={tuning['n']:,})"
    lines = [f"Results: {shown} (first started {data.get('started')}; collection `plugins/` hash "
             f"{tree.get('plugins_sha256')}, repository HEAD then {(tree.get('repo_head') or '')[:7]}).",
             "",
             f"Machine: {m.get('cores')} cores ({m.get('cpu')}), {m.get('memory_gib')} GiB, Linux {m.get('kernel')}, "
             f"Python {m.get('python')}; load average at start {', '.join(f'{x:.2f}' for x in m.get('loadavg_start', []))}. "
             f"{m.get('kubectl')}; kpt {m.get('kpt')}; {m.get('ansible_core')}; kubernetes.core {m.get('kubernetes_core')}. "
             f"Our module's parallelism: {cfg.get('parallelism')}; the ceiling's: {data.get('ceiling_parallelism')}{tuned}."
             + (f" Our module's `reapply`: {data['reapply']}." if data.get("reapply") else "")
             + (f" The run took {data['total_wall_s'] / 60:.1f} min in all ({data['elapsed_s'] / 60:.1f} min of "
                f"chains and cleanups{', the default matrix' if data.get('default_matrix') else ''})."
                if data.get("total_wall_s") else ""),
             ""]
    if data.get("skipped_tools"):
        lines += ["Skipped tools: " + "; ".join(f"{k}: {v}" for k, v in data["skipped_tools"].items()), ""]
    bg = data.get("background") or {}
    if bg:
        lines += [f"Idle background in the counted series over {bg.get('seconds')} s: {bg.get('by_verb')}.", ""]
    if not data["summary"]:  # only latency blocks in this run
        return "\n".join(lines + latency)
    lines += ["![time against N](performance.png)", ""]
    lines += time_tables(data)
    sizes = sorted({r["n"] for r in data["summary"]})
    n_req = 1000 if 1000 in sizes else sizes[-1]
    lines += request_tables(data, n_req)
    lines += writes_table(data)
    lines += cpu_table(data, n_req)
    lines += ansible_split(data)
    lines += memory_table(data)
    lines += targets(data)
    lines += issue11_targets(data)
    lines += latency
    return "\n".join(lines)


def load(paths: list[Path]) -> dict:
    """One results file, or several merged (runs appended; machine and config of the first)."""
    data = json.loads(paths[0].read_text())
    for r in data["runs"]:
        r.setdefault("reapply", data.get("reapply"))
    for extra in paths[1:]:
        more = json.loads(extra.read_text())
        for r in more["runs"]:
            r.setdefault("reapply", more.get("reapply"))
        data["runs"] += more["runs"]
        data.setdefault("merged", []).append(str(extra))
    if len(paths) > 1 or "summary" not in data:
        data["summary"] = summarize(data["runs"])
    return data


def main(results=None, update_docs: bool = False) -> int:
    paths = [Path(p) for p in results] if isinstance(results, (list, tuple)) and results else \
        [Path(results)] if isinstance(results, str) else [latest()]
    source = paths[0]
    data = load(paths)
    plotted = plot(dict(data, summary=[r for r in data["summary"] if is_loopback_default(r)]), PLOT)
    text = render(data, source)
    (RESULTS / "summary.md").write_text(text + "\n")
    print(f"wrote {RESULTS / 'summary.md'}" + (f" and {PLOT}" if plotted else ""))
    if update_docs:
        doc = DOC.read_text()
        if BEGIN not in doc or END not in doc:
            raise SystemExit(f"{DOC} has no generated-section markers")
        head, _, rest = doc.partition(BEGIN)
        _, _, tail = rest.partition(END)
        DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")
        print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or None))
