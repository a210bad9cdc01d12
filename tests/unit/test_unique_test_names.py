"""pytest imports test files by their base name (rootdir import mode): a unit and an integration
test file with the same name break the collection of `make test`, which runs both at once."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_test_file_name_is_both_a_unit_and_an_integration_test():
    unit = {p.name for p in (TESTS / "unit").glob("test_*.py")}
    integration = {p.name for p in (TESTS / "integration").glob("test_*.py")}
    assert unit & integration == set()
