"""Names, keys and number formats that the report's tables share."""

from __future__ import annotations

from summary import ALL_TOOLS

TOOLS = ALL_TOOLS
SHORT = {"ansible": "ours: ansible-playbook", "core": "ours: core library", "kubectl": "kubectl --applyset",
         "kubectl-nv": "kubectl --validate=false",
         "kpt": "kpt live apply", "k8s": "kubernetes.core k8s", "ceiling": "ceiling client"}
SCENARIO_TITLE = {"initial": "initial apply", "noop": "no-op re-run", "change": "10% changed",
                  "preview": "check mode: prune preview", "prune": "30% removed (prune)"}


def tools_in(idx: dict) -> list[str]:
    """Known tools first, in their order, then variants such as ceiling@8."""
    found = {k[0] for k in idx}
    extra = sorted(found - set(TOOLS), key=lambda t: (t.partition("@")[0], t.partition("@")[2].zfill(8)))
    return [t for t in TOOLS if t in found] + extra


def short(tool: str) -> str:
    base, _, variant = tool.partition("@")
    if not variant:
        return SHORT.get(tool, tool)
    return f"{SHORT.get(base, base)}, " + (f"parallelism {variant}" if variant.isdigit() else f"tree {variant}")


def index(summary: list[dict]) -> dict:
    return {(r["tool"], r["n"], r["namespaces"], r["scenario"]): r for r in summary}


def fmt_s(v) -> str:
    if v is None:
        return "–"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"


def ratio(a, b) -> str:
    return f"{a / b:.2f}×" if a and b else "–"
