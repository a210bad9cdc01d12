"""The shape targets of the core library (issue 25), kept: no file over 600 lines, no class over 300,
no function over 50 lines of code, no import cycle anywhere in the tree (hack/code_shape.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))

import code_shape  # noqa: E402


def test_no_file_class_or_function_of_the_core_is_over_its_limit():
    assert [f"{s.kind} {s.where}: {s.lines} lines" for s in code_shape.over_limits()] == []


def test_no_import_cycle_anywhere_in_the_tree():
    assert code_shape.import_cycles() == []


def test_the_measure_counts_code_lines_not_docstrings_or_comments(tmp_path, monkeypatch):
    source = tmp_path / "sample.py"
    source.write_text('def f():\n    """Doc\n    string."""\n    # a comment\n\n    return 1\n')
    monkeypatch.setattr(code_shape, "ROOT", tmp_path)
    sizes = {s.kind: s.lines for s in code_shape.measure(source)}
    assert sizes == {"file": 6, "function": 2}


def test_a_cycle_through_a_lazy_import_is_found():
    assert code_shape._cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
