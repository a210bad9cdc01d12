"""The modules call the core through its top (the engine, verify, inputs, options) and never a route
step: the automatic rollback is an engine entry point (engine.apply_or_roll_back), not something a
module assembles from steps/ (issue 46)."""

from __future__ import annotations

import ast
from pathlib import Path

MODULES = Path(__file__).resolve().parents[3] / "plugins" / "modules"
CORE = "ansible_collections.applyset.kubernetes.plugins.module_utils.applyset"


def core_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(CORE):
            found += [f"{node.module[len(CORE):].lstrip('.') or '.'}:{alias.name}" for alias in node.names]
    return found


def test_no_module_imports_a_step_or_the_runner():
    for path in sorted(MODULES.glob("*.py")):
        below = [name for name in core_imports(path) if name.startswith(("steps", "routes", "run.runner", "apply"))
                 or name in (".:steps", ".:routes", ".:apply")]
        assert not below, f"{path.name} imports {below}: call the engine's entry points instead"
