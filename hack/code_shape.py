#!/usr/bin/env python3
"""The shape of the code: file, class and function sizes, and import cycles.

    python3 hack/code_shape.py [--limits] [DIR ...]

Prints the largest file, class and function of each directory given (the core library,
plugins/module_utils/applyset, by default) and every import cycle among the Python files of
the tree. With --limits it exits 1 when the core breaks a target of docs/architecture.md: a
file over 600 lines, a class over 300 lines, a function over 50 lines of code (blank lines,
comments and docstrings not counted), or any import cycle. tests/unit/test_code_shape.py
runs the same checks.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "plugins" / "module_utils" / "applyset"
MAX_FILE_LINES = 600
MAX_CLASS_LINES = 300
MAX_FUNCTION_CODE_LINES = 50
# Where import cycles are looked for: every directory of Python files that import each other.
CYCLE_ROOTS = ("plugins", "benchmarks", "tests", "hack")


@dataclass(frozen=True)
class Size:
    """One measured thing: ``kind`` is file, class or function; ``lines`` as the limits count them."""

    kind: str
    where: str
    lines: int


def _docstring_lines(tree: ast.AST) -> set:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def measure(path: Path) -> list[Size]:
    """The sizes of one file: the file's lines, each class's lines, each function's lines of code."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text)
    docs = _docstring_lines(tree)
    name = path.relative_to(ROOT).as_posix()
    sizes = [Size("file", name, len(lines))]
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            sizes.append(Size("class", f"{name}:{node.name}", node.end_lineno - node.lineno + 1))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            code = sum(1 for ln in range(node.lineno, node.end_lineno + 1)
                       if ln not in docs and lines[ln - 1].strip() and not lines[ln - 1].strip().startswith("#"))
            sizes.append(Size("function", f"{name}:{node.name}", code))
    return sizes


def over_limits(directory: Path = CORE) -> list[Size]:
    """What in ``directory`` breaks the size targets."""
    limit = {"file": MAX_FILE_LINES, "class": MAX_CLASS_LINES, "function": MAX_FUNCTION_CODE_LINES}
    return [s for path in sorted(directory.rglob("*.py")) for s in measure(path) if s.lines > limit[s.kind]]


def _imports(path: Path, siblings: set) -> set:
    """The sibling modules a file imports, at any depth (lazy imports in functions count)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 1 and not node.module:
                found.update(a.name for a in node.names)
            elif node.module and (node.level == 1 or node.level == 0):
                head = node.module.split(".")[0]
                found.add(head)
                if node.level == 0 and node.module.startswith("applyset."):
                    found.add(node.module.split(".")[1])
                if node.level == 0 and head == "applyset":
                    found.update(a.name for a in node.names)
    return found & siblings - {path.stem}


def import_cycles(roots=CYCLE_ROOTS) -> list[list[str]]:
    """Every import cycle among the modules of one directory (each cycle once, as file paths)."""
    cycles = []
    directories = sorted({p.parent for r in roots for p in (ROOT / r).rglob("*.py")})
    for directory in directories:
        files = {p.stem: p for p in directory.glob("*.py")}
        graph = {stem: _imports(path, set(files)) for stem, path in files.items()}
        cycles += [[(directory / f"{m}.py").relative_to(ROOT).as_posix() for m in c] for c in _cycles(graph)]
    return cycles


def _cycles(graph: dict) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), and self-imports."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(argv: list[str]) -> int:
    check = "--limits" in argv
    directories = [ROOT / a for a in argv if not a.startswith("--")] or [CORE]
    for directory in directories:
        sizes = [s for path in sorted(directory.rglob("*.py")) for s in measure(path)]
        print(f"{directory.relative_to(ROOT)}:")
        for kind in ("file", "class", "function"):
            top = sorted((s for s in sizes if s.kind == kind), key=lambda s: -s.lines)[:3]
            print(f"  largest {kind}s: " + ", ".join(f"{s.where.split('/')[-1]} {s.lines}" for s in top))
    cycles = import_cycles()
    print("import cycles: " + ("; ".join(" <-> ".join(c) for c in cycles) if cycles else "none"))
    broken = over_limits() if check else []
    for s in broken:
        print(f"over the limit: {s.kind} {s.where} has {s.lines} lines")
    return 1 if check and (broken or cycles) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
