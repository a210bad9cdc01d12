"""docs/architecture.md names what exists: every file and public function its safety table and its
route table cite, and the apply route's steps in their order."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))

import code_shape  # noqa: E402
from applyset import routes  # noqa: E402
from applyset.rules.legacy import LegacyAdoption  # noqa: E402
from applyset.run import runner  # noqa: E402
from applyset.run.options import Options  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "plugins" / "module_utils" / "applyset"
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def table(heading: str) -> list[list[str]]:
    """The rows (cells) of the first table after ``heading``, header and rule left out."""
    section = DOC[DOC.index(heading):]
    rows = []
    for line in section.splitlines()[1:]:
        if rows and not line.startswith("|"):
            break
        if line.startswith("|") and not set(line) <= set("|- "):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[1:]


def names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def resolve(name: str):
    """The object a ``package.module.attr`` name of the core stands for (AttributeError if none)."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found = importlib.import_module("applyset." + ".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            found = getattr(found, attr)
        return found
    raise AttributeError(name)


CITED = sorted({n for row in table("## Where each safety rule lives") for n in names(row[1])}
               | {n for row in table("**apply** (a real run") for n in names(row[1])})


@pytest.mark.parametrize("name", CITED)
def test_every_code_name_cited_exists_and_is_public(name):
    assert not any(part.startswith("_") for part in re.split(r"[./]", name)), f"{name} is private"
    if name.endswith(".py"):
        assert (CORE / name).exists(), name
    elif "." in name and re.fullmatch(r"[A-Za-z_][\w.]*", name):
        assert resolve(name) is not None
    else:
        assert name.isupper() or name in ("GUARD_RULES",), f"{name}: neither a file nor module.name"


def test_every_test_file_the_safety_table_cites_exists():
    cited = {n for row in table("## Where each safety rule lives") for cell in row[2:] for n in names(cell)}
    existing = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    assert cited and cited <= existing, sorted(cited - existing)


def test_the_apply_table_lists_the_apply_route_in_order():
    documented = [row[0] for row in table("**apply** (a real run")]
    full = Options.from_settings(wait=True, adopt_legacy=LegacyAdoption(selector="app=x"))
    assert documented == runner.names(routes.for_apply(full).steps)


def test_the_package_table_has_one_row_per_layer_in_the_order_code_shape_declares():
    rows = [names(row[0])[0].removesuffix("/").removesuffix(".py") for row in table("## The packages")]
    assert rows == list(code_shape.layer_ranks())  # lowest first; layers beside each other in their order


def test_every_module_of_a_package_is_named_in_its_row():
    for row in table("## The packages"):
        package = CORE / names(row[0])[0].rstrip("/")
        if package.is_dir():
            modules = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
            assert modules <= set(names(row[1])), (package.name, sorted(modules - set(names(row[1]))))
