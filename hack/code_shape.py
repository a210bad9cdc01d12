#!/usr/bin/env python3
"""The shape of the code: file, class and function sizes, import cycles, and the core's layers.

    python3 hack/code_shape.py [--limits] [DIR ...]

Prints the largest file, class and function of each directory given (the core library,
plugins/module_utils/applyset, by default), every import cycle among the Python files of the
tree, and every import of the core that breaks its layers. With --limits it exits 1 when the
core breaks a target of docs/architecture.md: a file over 600 lines, a class over 300 lines, a
function over 50 lines of code (blank lines, comments and docstrings not counted), any import
cycle, an import that goes up the core's layers (``LAYERS``; an import under ``if TYPE_CHECKING:``
names types for annotations only and is exempt), a name imported from a module that only imports
it itself (a re-export), a function below ``run`` that takes the run's context (``ctx``), or two
modules or two classes of the core with the same name.
tests/hack/test_code_shape.py runs the same checks.
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
# The core's layers, lowest first: each a package of the core or a module of its root. A module
# may import its own package's modules and anything of a layer before its own, nothing after.
# A tuple is layers beside each other: the two tops, the engine (a run) and verify (reading sets),
# are what the modules call; neither imports the other.
LAYERS = ("object_meta", "errors", "spec", "kubeyaml", "inputs", "kube", "parent", "rules", "wait", "history",
          "run", "apply", "steps", "routes", ("engine", "verify"))


def layer_ranks(layers=LAYERS) -> dict[str, int]:
    """Each layer's rank, lowest first: its place in ``layers``; layers beside each other share one."""
    return {name: rank for rank, entry in enumerate(layers)
            for name in (entry if isinstance(entry, tuple) else (entry,))}


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


def _layer_of(path: Path, core: Path) -> str:
    """The layer a core file belongs to: its package, or its own name at the root."""
    parts = path.relative_to(core).parts
    return parts[0] if len(parts) > 1 else path.stem


def _annotation_only(tree: ast.AST) -> set:
    """The import nodes under ``if TYPE_CHECKING:``: they name types for annotations and mypy, and
    Python never runs them, so they add no dependency between layers."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            found.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return found


def _relative_targets(path: Path, core: Path, runtime_only: bool = False):
    """``(line, target file or package dir, imported names or None)`` for each relative import of a
    core file (with ``runtime_only``, leaving out those under ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _annotation_only(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level == 0 or id(node) in skipped:
            continue
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        if node.module:
            target = base.joinpath(*node.module.split("."))
            yield node.lineno, target, [a.name for a in node.names]
        else:
            for a in node.names:
                yield node.lineno, base / a.name, None


def _exists(target: Path) -> Path | None:
    if target.with_suffix(".py").is_file():
        return target.with_suffix(".py")
    return target if target.is_dir() else None


def layer_breaks(core: Path = CORE, layers=LAYERS) -> list[str]:
    """Every import of the core that goes up its layers, or into a layer not declared (imports
    under ``if TYPE_CHECKING:`` name types only, and may name those of any layer)."""
    breaks = []
    ranks = layer_ranks(layers)
    for path in sorted(core.rglob("*.py")):
        own = _layer_of(path, core)
        for line, target, _names in _relative_targets(path, core, runtime_only=True):
            found = _exists(target)
            if found is None or core not in found.parents and found != core:
                continue
            if found == core:
                continue
            theirs = _layer_of(found if found.is_file() else found / "__init__.py", core)
            where = f"{path.relative_to(ROOT).as_posix()}:{line}"
            if own not in ranks or theirs not in ranks:
                breaks.append(f"{where}: {own} or {theirs} is not in LAYERS")
            elif ranks[theirs] > ranks[own]:
                breaks.append(f"{where}: {own} imports {theirs}, a layer above it")
            elif ranks[theirs] == ranks[own] and theirs != own:
                breaks.append(f"{where}: {own} imports {theirs}, a layer beside it")
    return breaks


def _defined(path: Path) -> set:
    """The names a module binds at its top level other than by importing them from the core."""
    names = set()
    body = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while body:
        node = body.pop()
        if isinstance(node, (ast.If, ast.Try)):
            body += node.body + node.orelse + getattr(node, "finalbody", [])
            body += [n for h in getattr(node, "handlers", []) for n in h.body]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import) or isinstance(node, ast.ImportFrom) and node.level == 0:
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def re_exports(core: Path = CORE) -> list[str]:
    """Names a core module imports from a module that does not define them, and non-empty ``__init__`` files."""
    found = [f"{p.relative_to(ROOT).as_posix()}: not empty" for p in sorted(core.rglob("__init__.py"))
             if p.read_text(encoding="utf-8").strip()]
    defined: dict = {}
    for path in sorted(core.rglob("*.py")):
        for line, target, names in _relative_targets(path, core):
            module = target.with_suffix(".py")
            if names is None or not module.is_file():
                continue
            if module not in defined:
                defined[module] = _defined(module)
            for name in names:
                if name not in defined[module] and not _exists(target / name):
                    found.append(f"{path.relative_to(ROOT).as_posix()}:{line}: {name} is not defined in "
                                 f"{module.relative_to(core).as_posix()}; import it from its own module")
    return found


# The first layer that may take the run's context (``run.runner.RunContext``, named ``ctx``): the
# layers below it take values and return values, and never read or write the run.
CONTEXT_LAYER = "run"


def context_parameters(core: Path = CORE, layers=LAYERS, first: str = CONTEXT_LAYER) -> list[str]:
    """Every function of a layer below ``first`` with a parameter named ``ctx`` (the run's context)."""
    found = []
    ranks = layer_ranks(layers)
    for path in sorted(core.rglob("*.py")):
        own = _layer_of(path, core)
        if own not in ranks or ranks[own] >= ranks[first]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            args = node.args
            named = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a]
            if "ctx" in named:
                found.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}: {getattr(node, 'name', 'lambda')} "
                             f"takes ctx; {own} is below {first}: pass it values, and leave the run to a step")
    return found


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


def shared_names(core: Path = CORE) -> list[str]:
    """Modules or classes of the core that share a name across packages: ``Options`` or
    ``helm_takeover`` must say which one a reader means without its package."""
    modules: dict[str, list[str]] = {}
    classes: dict[str, list[str]] = {}
    for path in sorted(core.rglob("*.py")):
        where = path.relative_to(core).as_posix()
        if path.name != "__init__.py":
            modules.setdefault(path.stem, []).append(where)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append(f"{where}:{node.lineno}")
    return [f"{kind} {name} is defined in {', '.join(places)}"
            for kind, found in (("module", modules), ("class", classes))
            for name, places in sorted(found.items()) if len(places) > 1]


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
    layering = layer_breaks() + re_exports() + context_parameters() + shared_names()
    print("layers (" + " < ".join(" | ".join(e) if isinstance(e, tuple) else e for e in LAYERS) + "): " + ("; ".join(layering) if layering else "kept"))
    broken = over_limits() if check else []
    for s in broken:
        print(f"over the limit: {s.kind} {s.where} has {s.lines} lines")
    return 1 if check and (broken or cycles or layering) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
