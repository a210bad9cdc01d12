"""What the oldest ansible-test the collection supports (2.16, matrix-corners) refuses and the newer
ones let go, caught in the unit run instead of 30 minutes into CI: a function whose body is on its
``def`` line (pycodestyle E704), as a Protocol's one-line stub ``def kind(self) -> str: ...`` is.
It failed CI twice (stops 53 and 56)."""

from __future__ import annotations

import re
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
# A def whose line ends with its body after the signature's colon: "...) -> str: ..." or "...): pass".
_ONE_LINE_DEF = re.compile(r"^\s*(async\s+)?def\s.*\)(\s*->\s*[^:]+)?:\s*\S.*$")


def test_no_function_of_the_plugins_has_its_body_on_its_def_line():
    found = [f"{path.relative_to(PLUGINS)}:{number}: {line.strip()}"
             for path in sorted(PLUGINS.rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if _ONE_LINE_DEF.match(line) and not line.rstrip().endswith(("(", "[", "{", ","))
             and not line.split("#")[0].rstrip().endswith(":")]
    assert not found, "put the body on a line of its own (E704, refused by ansible-test 2.16):\n" + "\n".join(found)


def test_the_check_sees_a_stub_on_its_def_line():
    assert _ONE_LINE_DEF.match("    def kind(self) -> str: ...")
    assert _ONE_LINE_DEF.match("def f(x): return x")
    line = "    def kind(self) -> str:"
    assert not (_ONE_LINE_DEF.match(line) and not line.split("#")[0].rstrip().endswith(":"))
