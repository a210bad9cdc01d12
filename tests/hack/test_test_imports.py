"""Tests import helpers by names of their own, never ``conftest``: ``make test`` collects
tests/unit and tests/integration in one session, where ``import conftest`` finds whichever
conftest module was collected first (issue 37's CI failure)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
IMPORTS_CONFTEST = re.compile(r"^\s*(from\s+conftest\s+import|import\s+conftest\b)", re.M)


def test_no_test_imports_a_conftest_by_name():
    offenders = [str(path.relative_to(TESTS)) for path in sorted(TESTS.rglob("*.py"))
                 if path.name != "test_test_imports.py" and IMPORTS_CONFTEST.search(path.read_text(encoding="utf-8"))]
    assert not offenders, f"import the helper from a module of its own, not conftest: {offenders}"
