"""The parent's syntax is documented once in meaning: applyset_info and applyset_verify repeat
applyset_apply's syntax lines word for word.

Why a test and not a doc fragment: Ansible merges a fragment's option with a module's by replacing
it whole, and each module's parent text starts with its own line (apply creates the parent, info
shows one set, verify checks one), so a fragment could hold the shared lines only if the modules
gave up their own. The test keeps the copies from drifting instead (issue 46, item 5).
"""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

MODULES = Path(__file__).resolve().parents[3] / "plugins" / "modules"
# The lines of applyset_apply's parent description that say how a parent is written.
SYNTAX_LINES = slice(1, 3)


def documentation(module: str) -> dict:
    tree = ast.parse((MODULES / f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DOCUMENTATION" for t in node.targets):
            return yaml.safe_load(ast.literal_eval(node.value))
    raise AssertionError(f"{module} has no DOCUMENTATION")


def test_info_and_verify_repeat_the_parent_syntax_of_apply_word_for_word():
    apply_parent = documentation("applyset_apply")["options"]["parent"]
    syntax = apply_parent["description"][SYNTAX_LINES]
    assert syntax[0].startswith("A string in kubectl's C(--applyset) syntax"), syntax
    for module in ("applyset_info", "applyset_verify"):
        parent = documentation(module)["options"]["parent"]
        assert parent["type"] == apply_parent["type"] == "raw", module
        assert parent["description"][SYNTAX_LINES] == syntax, (
            f"{module}'s parent description must repeat applyset_apply's syntax lines: {syntax}")
        assert "applyset.kubernetes.applyset_apply#module:parent" in parent["description"][0], module
