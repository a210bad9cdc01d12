"""requirements.txt (what ansible-builder installs into an execution environment) lists
exactly the third-party packages the installed collection's plugins import.

Imports are read with ast from every file under plugins/, so a lazy import inside a
function counts as much as one at the top. ansible-core and the collection itself come
with the execution environment; the standard library needs nothing.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
PROVIDED = {"__future__", "ansible", "ansible_collections"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def third_party_imports() -> dict[str, set[str]]:
    """Top-level module name -> the plugin files that import it."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO_ROOT / "plugins").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in PROVIDED:
                    found.setdefault(top, set()).add(str(path.relative_to(REPO_ROOT)))
    return found


def distributions_of(module: str) -> list[str]:
    """The installed distributions that provide a top-level module."""
    # Python 3.10 maps modules to distributions only through top_level.txt, which wheels
    # built without setuptools (urllib3 2.x) lack; such a module is named as its distribution.
    found = importlib.metadata.packages_distributions().get(module)
    if found:
        return found
    try:
        return [importlib.metadata.distribution(module).metadata["Name"]]
    except importlib.metadata.PackageNotFoundError:
        pass
    # A module named unlike its distribution, from a wheel without top_level.txt (cel-python's celpy):
    # the distribution whose files hold it.
    found = [dist.metadata["Name"] for dist in importlib.metadata.distributions()
             if any(file.parts and file.parts[0] == module for file in dist.files or ())]
    if found:
        return found
    raise AssertionError(f"{module} is imported by plugins/ but not installed here")


def requirements(path: Path) -> dict[str, str]:
    """Canonical distribution name -> the requirement line, from a pip requirements file."""
    listed = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            listed[canonical(re.match(r"[A-Za-z0-9._-]+", line).group(0))] = line
    return listed


def test_requirements_txt_lists_exactly_what_the_plugins_import():
    imported = {}
    for module, files in third_party_imports().items():
        for distribution in distributions_of(module):
            imported[canonical(distribution)] = (module, sorted(files))
    listed = requirements(REPO_ROOT / "requirements.txt")
    missing = {name: imported[name] for name in imported.keys() - listed.keys()}
    unused = {name: listed[name] for name in listed.keys() - imported.keys()}
    assert not missing, f"add to requirements.txt (distribution: (module, importers)): {missing}"
    assert not unused, f"requirements.txt lists packages no plugin imports: {unused}"


def test_the_installed_versions_meet_requirements_txt():
    # The dev environment runs every test against these; a bound it does not meet is untested.
    from packaging.requirements import Requirement

    for line in requirements(REPO_ROOT / "requirements.txt").values():
        requirement = Requirement(line)
        installed = importlib.metadata.version(requirement.name)
        assert requirement.specifier.contains(installed, prereleases=True), (line, installed)


def test_execution_environment_reads_the_collection_requirements():
    ee = yaml.safe_load((REPO_ROOT / "meta" / "execution-environment.yml").read_text())
    deps = ee["dependencies"]
    assert (deps["python"], deps["system"]) == ("requirements.txt", "bindep.txt")
    assert (REPO_ROOT / "bindep.txt").is_file()
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    core = Requirement(deps["ansible_core"]["package_pip"])
    claimed = SpecifierSet(yaml.safe_load((REPO_ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"])
    # The EE installs an ansible-core the collection claims (meta/runtime.yml) and the matrix tests.
    assert core.name == "ansible-core"
    for version in ("2.15.13", "2.16.0", "2.19.14", "2.21.5"):
        assert core.specifier.contains(version) == claimed.contains(version), (str(core), str(claimed), version)
