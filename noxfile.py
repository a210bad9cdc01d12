"""Test matrix: Python x ansible-core, as far as ansible-core supports it on the controller.

    nox                    every combination (make matrix)
    nox -t corners         oldest and newest corner plus sanity on both (make matrix-corners, CI)
    nox -l                 list the sessions

Each `tests` session installs one ansible-core minor release (its newest patch) with the
collection's runtime requirements, runs the unit tests and the integration smoke test
(tests/integration/test_matrix_smoke.py) against APPLYSET_TEST_KUBECONFIG; without that
variable the smoke test's pytest session starts a local control plane of its own
(hack/local-cluster, built once with `make binaries`). `sanity` sessions run hack/sanity
(ansible-test sanity on the collection as it ships) on the oldest and newest core.

Every session appends one row to .state/matrix/results.tsv (docs/compatibility.md is
written from it). Interpreters are found on PATH and in ~/.pyenv/versions.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import nox
from nox.command import CommandFailed

REPO = Path(__file__).resolve().parent
RESULTS = REPO / ".state" / "matrix" / "results.tsv"

# The Python versions each ansible-core release supports on the controller: ansible-test's
# CONTROLLER_PYTHON_VERSIONS of that release (each session checks its pair against it).
# Only Python 3.10-3.13 are in the matrix; 3.14 is left out until the machine has it.
CONTROLLER_PYTHONS = {
    "2.16": ["3.10", "3.11", "3.12"],
    "2.17": ["3.10", "3.11", "3.12"],
    "2.18": ["3.11", "3.12", "3.13"],
    "2.19": ["3.11", "3.12", "3.13"],
    "2.20": ["3.12", "3.13"],
    "2.21": ["3.12", "3.13"],
}
OLDEST_CORE, NEWEST_CORE = min(CONTROLLER_PYTHONS), max(CONTROLLER_PYTHONS)
# The corners: the oldest core on its oldest Python, the newest core on its newest.
CORNERS = {(CONTROLLER_PYTHONS[OLDEST_CORE][0], OLDEST_CORE), (CONTROLLER_PYTHONS[NEWEST_CORE][-1], NEWEST_CORE)}

nox.options.envdir = str(REPO / ".state" / "nox")  # .state is .gitignored and build_ignored
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True
nox.options.sessions = ["tests", "sanity"]

# pyenv's interpreters, so nox finds python3.X without a shell set up for pyenv.
_pyenv = Path.home() / ".pyenv" / "versions"
if _pyenv.is_dir():
    os.environ["PATH"] = os.pathsep.join(
        [str(p / "bin") for p in sorted(_pyenv.iterdir(), reverse=True)] + [os.environ.get("PATH", "")]
    )


def _record(session: nox.Session, core: str, started: float, outcome: str) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    versions = session.run(
        "python", "-c",
        "import platform\ntry:\n from ansible.release import __version__ as core\nexcept ImportError:\n core = '-'\n"
        "print(platform.python_version(), core)",
        silent=True, success_codes=[0, 1],
    )
    python, installed = (versions or "? ?").split()[-2:]
    with RESULTS.open("a") as out:
        out.write("\t".join([time.strftime("%Y-%m-%dT%H:%M:%S"), session.name, python, installed, outcome,
                             f"{time.monotonic() - started:.0f}"]) + "\n")


def _install(session: nox.Session, core: str, *extra: str) -> None:
    session.install(f"ansible-core=={core}.*", "-r", "requirements.txt", *extra)
    # Refuse a combination the installed ansible-core does not itself claim on the controller.
    supported = session.run(
        "python", "-c",
        "from ansible_test._util.target.common.constants import CONTROLLER_PYTHON_VERSIONS as v; print(' '.join(v))",
        silent=True,
    ).split()
    if session.python not in supported:
        session.error(f"ansible-core {core} supports Python {supported} on the controller, not {session.python}")


def _collection_link() -> None:
    # What `make deps` does: the repo's ansible.cfg finds the collection through this link.
    link = REPO / ".state" / "collections" / "ansible_collections" / "applyset" / "kubernetes"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path("../../../.."))


@nox.session
@nox.parametrize(
    "python,core",
    [
        nox.param(python, core, id=f"{python}-core{core}",
                  tags=["corners"] if (python, core) in CORNERS else [])
        for core, pythons in CONTROLLER_PYTHONS.items()
        for python in pythons
    ],
)
def tests(session: nox.Session, core: str) -> None:
    """Unit tests and the integration smoke test on one Python x ansible-core."""
    started = time.monotonic()
    outcome = "fail (install)"
    try:
        _install(session, core, "pytest", "pytest-xdist", "cryptography")
        _collection_link()
        env = {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_DEPRECATION_WARNINGS": "True"}
        # The unit tests on two workers (the machine's cores; several start ansible-inventory or ansible-doc).
        steps = {"unit": ["-n", "2", "tests/unit"], "smoke": ["-s", "tests/integration/test_matrix_smoke.py"]}
        failed = []
        for step, args in steps.items():  # both steps run, so one result row tells all
            try:
                session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, env=env)
            except CommandFailed:
                failed.append(step)
        outcome = f"fail ({', '.join(failed)})" if failed else "pass"
        if failed:
            session.error(f"failed: {', '.join(failed)}")
    finally:
        _record(session, core, started, outcome)


@nox.session
@nox.parametrize(
    "python,core",
    [
        nox.param(CONTROLLER_PYTHONS[OLDEST_CORE][-1], OLDEST_CORE, id=f"core{OLDEST_CORE}", tags=["corners"]),
        nox.param(CONTROLLER_PYTHONS[NEWEST_CORE][-1], NEWEST_CORE, id=f"core{NEWEST_CORE}", tags=["corners"]),
    ],
)
def sanity(session: nox.Session, core: str) -> None:
    """ansible-test sanity on the collection as it ships (hack/sanity)."""
    started = time.monotonic()
    outcome = "fail"
    try:
        _install(session, core)
        session.run("hack/sanity", env={"VENV_BIN": str(Path(session.bin))}, external=True)
        outcome = "pass"
    finally:
        _record(session, core, started, outcome)
