"""The local control plane's Go version check (hack/local_cluster/build.py)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))

from local_cluster import build  # noqa: E402


def test_required_go_version_is_the_newest_go_directive_of_the_wrappers():
    directives = []
    for component in build.COMPONENTS:
        gomod = (build.WRAPPERS_DIR / component.wrapper / "go.mod").read_text()
        directives += [line.split()[1] for line in gomod.splitlines() if line.startswith("go ")]
    assert build.required_go_version() in directives
    assert all(build._version_tuple(build.required_go_version()) >= build._version_tuple(d) for d in directives)


@pytest.mark.parametrize("text, expected", [
    ("go1.26.8", (1, 26, 8)), ("1.25.0", (1, 25, 0)), ("go1.25rc1", (1, 25)), ("go1.24", (1, 24)),
])
def test_version_tuple(text, expected):
    assert build._version_tuple(text) == expected


def test_an_older_go_is_refused_with_both_versions_named():
    required = build.required_go_version()
    with pytest.raises(build.BuildError) as err:
        build.check_go_version("go1.20.1")
    assert "go1.20.1" in str(err.value) and f"Go {required} or newer" in str(err.value)
    build.check_go_version("go" + required)  # the minimum itself is fine


def test_readme_names_the_go_version_the_build_needs():
    readme = (build.REPO_ROOT / "README.md").read_text()
    assert f"Go ({build.required_go_version().removesuffix('.0')} or newer)" in readme


def test_the_helm_wrappers_pin_the_versions_build_names_and_set_them_in_the_binary():
    build.check_pins()  # each helm wrapper's go.mod requires HELM_VERSIONS' release
    for component in build.HELM_COMPONENTS:
        version = build.HELM_VERSIONS[component.wrapper]
        assert component.binaries == (component.wrapper,)
        assert f"internal/version.version={version}" in component.ldflags()
        assert build.cache_key(component, "go1.26.8").startswith(component.wrapper + "-")
    # helm needs a newer Go than the control plane; it is checked on its own, not for `up`.
    assert build.required_go_version((build.HELM_COMPONENTS[0],)) == "1.26.0"
    assert not set(build.ALL_BINARIES) & {"helm3", "helm4"}
