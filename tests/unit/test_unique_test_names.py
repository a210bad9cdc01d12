"""pytest imports test files by their base name (rootdir import mode): two test files with the same
name anywhere under tests/ break the collection of `make test`, which runs them all at once."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_files_share_a_name():
    seen: dict = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        seen.setdefault(path.name, []).append(path.relative_to(TESTS).as_posix())
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}
