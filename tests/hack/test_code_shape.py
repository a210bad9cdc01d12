"""The shape targets of the core library (issue 25), kept: no file over 600 lines, no class over 300,
no function over 50 lines of code, no import cycle anywhere in the tree (hack/code_shape.py); and
the core's layers (issue 37): no import goes up ``LAYERS``, no module re-exports another's names."""

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


def test_no_import_of_the_core_goes_up_its_layers():
    assert code_shape.layer_breaks() == []


def test_no_core_module_re_exports_a_name_and_every_package_init_is_empty():
    assert code_shape.re_exports() == []


def test_every_package_and_root_module_of_the_core_is_a_declared_layer():
    core = code_shape.CORE
    declared = {p.name for p in core.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    declared |= {p.stem for p in core.glob("*.py") if p.name != "__init__.py"}
    assert declared == set(code_shape.layer_ranks())


def _tree(tmp_path, monkeypatch, files: dict):
    core = tmp_path / "core"
    for name, text in files.items():
        (core / name).parent.mkdir(parents=True, exist_ok=True)
        (core / name).write_text(text)
    monkeypatch.setattr(code_shape, "ROOT", tmp_path)
    return core


def test_an_import_up_the_layers_is_refused_and_one_down_is_not(tmp_path, monkeypatch):
    core = _tree(tmp_path, monkeypatch, {
        "__init__.py": "", "errors.py": "X = 1\n", "engine.py": "from .low import rule\n",
        "low/__init__.py": "", "low/rule.py": "from .. import errors\nfrom ..high.step import run\n",
        "high/__init__.py": "", "high/step.py": "from ..low import rule\nrun = 1\n"})
    assert code_shape.layer_breaks(core, ("errors", "low", "high", "engine")) == [
        "core/low/rule.py:2: low imports high, a layer above it"]


def test_layers_beside_each_other_import_those_below_and_never_each_other(tmp_path, monkeypatch):
    core = _tree(tmp_path, monkeypatch, {
        "__init__.py": "", "errors.py": "X = 1\n", "engine.py": "from . import errors\nfrom .verify import check\n",
        "verify/__init__.py": "", "verify/check.py": "from .. import errors\n"})
    assert code_shape.layer_breaks(core, ("errors", ("engine", "verify"))) == [
        "core/engine.py:2: engine imports verify, a layer beside it"]
    assert code_shape.layer_ranks(("errors", ("engine", "verify"))) == {"errors": 0, "engine": 1, "verify": 1}


def test_an_import_for_annotations_only_may_name_a_type_of_any_layer(tmp_path, monkeypatch):
    core = _tree(tmp_path, monkeypatch, {
        "__init__.py": "", "low/__init__.py": "", "high/__init__.py": "", "high/step.py": "class Step: ...\n",
        "low/context.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..high.step import Step\n"})
    assert code_shape.layer_breaks(core, ("low", "high")) == []


def test_a_name_imported_through_a_module_that_only_imports_it_is_a_re_export(tmp_path, monkeypatch):
    core = _tree(tmp_path, monkeypatch, {
        "__init__.py": "", "a.py": "from .b import VALUE\nfrom .c import VALUE as OTHER\n",
        "b.py": "VALUE = 1\n", "c.py": "from .b import VALUE\n", "p/__init__.py": "import os\n"})
    assert code_shape.re_exports(core) == [
        "core/p/__init__.py: not empty",
        "core/a.py:2: VALUE is not defined in c.py; import it from its own module"]


def test_no_function_below_the_run_takes_the_runs_context():
    assert code_shape.context_parameters() == []


def test_a_function_below_the_run_that_takes_ctx_is_refused_and_a_step_is_not(tmp_path, monkeypatch):
    core = _tree(tmp_path, monkeypatch, {
        "__init__.py": "", "rules/__init__.py": "", "steps/__init__.py": "", "run/__init__.py": "",
        "rules/drift.py": "def mark(member, basis):\n    return member\n\n\ndef resolve(*, ctx):\n    return ctx\n",
        "steps/decide.py": "def decide(ctx):\n    return ctx\n"})
    assert code_shape.context_parameters(core, ("rules", "run", "steps")) == [
        "core/rules/drift.py:5: resolve takes ctx; rules is below run: pass it values, and leave the run to a step"]


def test_no_two_modules_or_classes_of_the_core_share_a_name():
    assert code_shape.shared_names() == []


def test_a_class_or_module_name_used_in_two_packages_is_refused(tmp_path, monkeypatch):
    core = _tree(tmp_path, monkeypatch, {
        "__init__.py": "", "rules/__init__.py": "", "steps/__init__.py": "",
        "rules/takeover.py": "class Refusal:\n    pass\n", "steps/takeover.py": "class Refusal:\n    pass\n"})
    assert code_shape.shared_names(core) == [
        "module takeover is defined in rules/takeover.py, steps/takeover.py",
        "class Refusal is defined in rules/takeover.py:1, steps/takeover.py:1"]
