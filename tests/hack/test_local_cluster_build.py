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


def test_readme_names_the_go_version_every_build_of_make_test_needs():
    # Every go.mod under hack/ (the control plane's and the helm wrappers': `make test` builds them
    # all), so that a newcomer with an older Go learns it from the README, not from a failed build.
    directives = [line.split()[1] for gomod in sorted((build.REPO_ROOT / "hack").rglob("go.mod"))
                  for line in gomod.read_text().splitlines() if line.startswith("go ")]
    assert len(directives) >= len(build.COMPONENTS) + len(build.HELM_COMPONENTS)
    newest = max(directives, key=build._version_tuple)
    readme = (build.REPO_ROOT / "README.md").read_text()
    assert f"Go ({newest.removesuffix('.0')} or newer)" in readme


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


def test_missing_components_build_side_by_side_largest_first(monkeypatch, tmp_path):
    import threading
    import time as clock

    running, most, order = [0], [0], []
    lock = threading.Lock()

    def fake_build(component, go, out_dir, log):
        with lock:
            order.append(component.wrapper)
            running[0] += 1
            most[0] = max(most[0], running[0])
        clock.sleep(0.05)
        with lock:
            running[0] -= 1

    monkeypatch.setattr(build, "_build_component", fake_build)
    monkeypatch.setenv("APPLYSET_BUILD_JOBS", "2")
    every = build.COMPONENTS + build.HELM_COMPONENTS
    build._build_all(list(reversed(every)), "go", {c: tmp_path / c.wrapper for c in every}, log=lambda msg: None)
    assert order[:2] == ["k8s", "helm4"] and sorted(order) == sorted(c.wrapper for c in every)
    assert most[0] == 2


def test_a_bad_build_jobs_value_is_refused(monkeypatch):
    monkeypatch.setenv("APPLYSET_BUILD_JOBS", "zero")
    with pytest.raises(build.BuildError, match="APPLYSET_BUILD_JOBS='zero'"):
        build.build_jobs()


def test_two_builds_into_one_cache_build_each_binary_once(monkeypatch, tmp_path):
    # CI starts the build in the background while lint runs, and make test asks for the same
    # binaries: the second caller waits for the first (the cache's flock) and builds nothing.
    import threading
    import time as clock

    built, said = [], []

    def fake_build(component, go, out_dir, log):
        clock.sleep(0.2)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in component.binaries:
            (out_dir / name).write_text("")
        built.append(component.wrapper)

    monkeypatch.setattr(build, "_build_component", fake_build)
    monkeypatch.setattr(build, "_go", lambda: "go")
    monkeypatch.setattr(build, "_go_version", lambda go: "go1.26.8")
    monkeypatch.setenv("APPLYSET_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    callers = [threading.Thread(target=build.ensure_binaries, kwargs={"log": said.append, "helm": True})
               for _ in range(2)]
    for caller in callers:
        caller.start()
        clock.sleep(0.05)
    for caller in callers:
        caller.join(10)
    assert sorted(built) == sorted(c.wrapper for c in build.COMPONENTS + build.HELM_COMPONENTS)
    assert any(line.startswith("waiting for another build into") for line in said), said
