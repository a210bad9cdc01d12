"""Build (or reuse) the control-plane binaries from their upstream Go modules.

Three small wrapper modules under ``hack/controlplane/`` pin the versions:
``k8s`` (kube-apiserver, kube-controller-manager, kube-scheduler), ``etcd`` and
``kwok``. Each is built into a cache directory keyed by a hash of its go.mod,
go.sum, the Go version and the build flags, so a warm start never rebuilds and
two checkouts share one build. ``KUBEBUILDER_ASSETS`` (the envtest convention)
supplies ready-made binaries instead; whatever it lacks is built as usual.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
WRAPPERS_DIR = REPO_ROOT / "hack" / "controlplane"

# The pinned Kubernetes release. hack/controlplane/k8s/go.mod must require the
# same k8s.io/kubernetes version; check_pins() verifies that they agree.
KUBERNETES_VERSION = "v1.34.4"


class BuildError(RuntimeError):
    """A binary could not be built or found; the message says how to fix it."""


@dataclass(frozen=True)
class Component:
    """One wrapper module and the binaries it produces."""

    wrapper: str
    binaries: tuple[str, ...]
    packages: tuple[str, ...]
    # kube-* binaries are static in upstream releases and carry build tags.
    tags: str = ""

    def ldflags(self) -> str:
        flags = ["-s", "-w"]
        if self.wrapper in HELM_VERSIONS:
            # Without it `helm version` says v3.22 (the source's default), not the pinned release.
            major = HELM_VERSIONS[self.wrapper].split(".")[0]
            flags.append(f"-X helm.sh/helm/{major}/internal/version.version={HELM_VERSIONS[self.wrapper]}")
        if self.wrapper == "k8s":
            major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
            for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
                flags += [
                    f"-X {pkg}.gitVersion={KUBERNETES_VERSION}",
                    f"-X {pkg}.gitMajor={major}",
                    f"-X {pkg}.gitMinor={minor}",
                    f"-X {pkg}.gitTreeState=clean",
                ]
        return " ".join(flags)


COMPONENTS = (
    Component(
        wrapper="k8s",
        binaries=("kube-apiserver", "kube-controller-manager", "kube-scheduler"),
        packages=(
            "k8s.io/kubernetes/cmd/kube-apiserver",
            "k8s.io/kubernetes/cmd/kube-controller-manager",
            "k8s.io/kubernetes/cmd/kube-scheduler",
        ),
        tags="selinux,notest",
    ),
    Component(wrapper="etcd", binaries=("etcd",), packages=(".",)),
    Component(wrapper="kwok", binaries=("kwok",), packages=("sigs.k8s.io/kwok/cmd/kwok",)),
)

ALL_BINARIES = tuple(b for c in COMPONENTS for b in c.binaries)

# Helm, for the chart tests and benchmarks (not the control plane: `up` does not need it, and the
# wrappers need a newer Go). hack/controlplane/helm3|helm4/go.mod require the same versions
# (check_pins). The binaries are named helm3 and helm4, each in its own cache directory.
HELM_VERSIONS = {"helm3": "v3.22.0", "helm4": "v4.3.1"}
HELM_COMPONENTS = tuple(
    Component(wrapper=name, binaries=(name,), packages=(f"helm.sh/helm/{version.split('.')[0]}/cmd/helm",))
    for name, version in HELM_VERSIONS.items()
)


def cache_root() -> Path:
    base = os.environ.get("APPLYSET_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "applyset-kubernetes"
    )
    return Path(base) / "controlplane"


def _go() -> str:
    go = shutil.which("go")
    if not go:
        raise BuildError(
            "Go is not installed (no `go` on PATH). The local control plane is built from "
            f"upstream Go modules: install Go {required_go_version()} or newer, or point "
            "KUBEBUILDER_ASSETS at a directory that already holds kube-apiserver and etcd."
        )
    return go


def _version_tuple(text: str) -> tuple[int, ...]:
    """``go1.25.3`` or ``1.25.0`` -> (1, 25, 3); pre-release suffixes (``rc1``) are ignored."""
    numbers = []
    for part in text.removeprefix("go").split("."):
        digits = part[:len(part) - len(part.lstrip("0123456789"))]
        if not digits:
            break
        numbers.append(int(digits))
        if digits != part:  # "25rc1": the release candidate ends the version
            break
    return tuple(numbers)


def required_go_version(components: tuple[Component, ...] = COMPONENTS) -> str:
    """The newest ``go`` directive of the wrapper modules: the oldest Go that can build them all.

    The build runs with GOTOOLCHAIN=local (no toolchain downloads), so an older Go
    fails on the first wrapper that needs more; checking up front gives a clear error.
    """
    versions = []
    for component in components:
        for line in (WRAPPERS_DIR / component.wrapper / "go.mod").read_text().splitlines():
            if line.startswith("go "):
                versions.append(line.split()[1])
    return max(versions, key=_version_tuple)


def check_go_version(go_version: str, helm: Component | None = None) -> None:
    """Refuse a Go older than the wrappers need (or the one helm wrapper), naming both versions."""
    required = required_go_version((helm,) if helm is not None else COMPONENTS)
    if _version_tuple(go_version) < _version_tuple(required):
        raise BuildError(
            f"{go_version} is too old to build the local control plane: the wrapper modules in "
            f"hack/controlplane need Go {required} or newer (toolchain downloads are off). "
            "Install a newer Go, or point KUBEBUILDER_ASSETS at a directory that already holds "
            "kube-apiserver and etcd."
        )


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    # Never let a wrapper's `go` line trigger a toolchain download: only the
    # module proxy is reachable, and the local toolchain builds these fine.
    env["GOTOOLCHAIN"] = "local"
    env["CGO_ENABLED"] = "0"
    env.setdefault("GOFLAGS", "")
    return env


def _go_version(go: str) -> str:
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, env=_go_env())
    if out.returncode != 0:
        raise BuildError(f"`go env GOVERSION` failed: {out.stderr.strip()}")
    return out.stdout.strip()


def cache_key(component: Component, go_version: str) -> str:
    """Hash of everything that decides the bytes of the component's binaries."""
    h = hashlib.sha256()
    wrapper = WRAPPERS_DIR / component.wrapper
    for name in sorted(os.listdir(wrapper)):
        if name.endswith((".mod", ".sum", ".go")):
            h.update(name.encode() + b"\0" + (wrapper / name).read_bytes() + b"\0")
    h.update(go_version.encode() + component.ldflags().encode() + component.tags.encode())
    return f"{component.wrapper}-{h.hexdigest()[:16]}"


def check_pins() -> None:
    gomod = (WRAPPERS_DIR / "k8s" / "go.mod").read_text()
    if f"k8s.io/kubernetes {KUBERNETES_VERSION}" not in gomod:
        raise BuildError(
            f"hack/controlplane/k8s/go.mod does not require k8s.io/kubernetes {KUBERNETES_VERSION}; "
            "update KUBERNETES_VERSION in hack/local_cluster/build.py and the wrapper together"
        )
    for name, version in HELM_VERSIONS.items():
        major = version.split(".")[0]
        if f"helm.sh/helm/{major} {version}" not in (WRAPPERS_DIR / name / "go.mod").read_text():
            raise BuildError(f"hack/controlplane/{name}/go.mod does not require helm.sh/helm/{major} {version}; "
                             "update HELM_VERSIONS in hack/local_cluster/build.py and the wrapper together")


def _build_component(component: Component, go: str, out_dir: Path, log) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f".{component.wrapper}-", dir=out_dir.parent))
    cmd = [go, "build", "-mod=readonly", "-trimpath", "-pgo=off", f"-ldflags={component.ldflags()}"]
    if component.tags:
        cmd.append(f"-tags={component.tags}")
    if len(component.packages) == 1:
        cmd += ["-o", str(staging / component.binaries[0]), component.packages[0]]
    else:
        cmd += ["-o", str(staging) + os.sep, *component.packages]
    log(f"building {', '.join(component.binaries)} (first build takes several minutes)...")
    started = time.monotonic()
    proc = subprocess.run(
        cmd, cwd=WRAPPERS_DIR / component.wrapper, env=_go_env(), capture_output=True, text=True
    )
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-30:])
        raise BuildError(
            f"building {component.wrapper} failed (exit {proc.returncode}) with:\n{tail}\n"
            f"command: {' '.join(cmd)} (in hack/controlplane/{component.wrapper})"
        )
    # Publish atomically so that an interrupted build is never mistaken for a
    # finished one.
    if out_dir.exists():
        shutil.rmtree(out_dir)
    staging.rename(out_dir)
    log(f"built {component.wrapper} in {time.monotonic() - started:.0f}s -> {out_dir}")


def ensure_binaries(log=lambda msg: print(msg, file=sys.stderr), helm: bool = False) -> dict[str, Path]:
    """Return a path for every control-plane binary (and helm3, helm4 with ``helm``), building what
    is missing."""
    found: dict[str, Path] = {}
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets:
        for name in ALL_BINARIES:
            candidate = Path(assets) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                found[name] = candidate
        for required in ("kube-apiserver", "etcd"):
            if required not in found:
                raise BuildError(f"KUBEBUILDER_ASSETS={assets} has no executable {required}")

    wanted = [c for c in COMPONENTS if not all(b in found for b in c.binaries)]
    if helm:
        wanted += HELM_COMPONENTS
    if not wanted:
        return found
    check_pins()
    go = _go()
    go_version = _go_version(go)
    if any(c in COMPONENTS for c in wanted):
        check_go_version(go_version)
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    placed = {component: root / cache_key(component, go_version) for component in wanted}
    missing = _missing(placed)
    for component in missing:
        if component in HELM_COMPONENTS:
            check_go_version(go_version, component)
    if missing:
        # One build at a time per cache: a second caller (CI's early background build, another
        # checkout) waits for it and then finds the binaries there, instead of building them twice.
        with _build_lock(root, log):
            _build_all(_missing(placed), go, placed, log)
    for component, out_dir in placed.items():
        for name in component.binaries:
            found.setdefault(name, out_dir / name)
    return found


def _missing(placed: dict[Component, Path]) -> list[Component]:
    return [c for c, out_dir in placed.items() if not all((out_dir / b).is_file() for b in c.binaries)]


@contextlib.contextmanager
def _build_lock(root: Path, log):
    """Hold the cache's build lock (``.build.lock``, an flock released when the process ends)."""
    with open(root / ".build.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another build into {root} to finish...")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_jobs() -> int:
    """How many components build at once: ``APPLYSET_BUILD_JOBS``, else 2. Each ``go build`` already
    compiles on every core; a second one beside it fills the cores while the first links (a
    single-threaded step of about a minute per kube binary) or waits on the module cache."""
    value = os.environ.get("APPLYSET_BUILD_JOBS", "2")
    if not value.isdigit() or int(value) < 1:
        raise BuildError(f"APPLYSET_BUILD_JOBS={value!r}: give a whole number of 1 or more")
    return int(value)


def _build_all(missing: list[Component], go: str, placed: dict[Component, Path], log) -> None:
    """Build ``missing`` components, ``build_jobs()`` at a time, the largest first; the first error wins."""
    if not missing:
        return
    largest_first = sorted(missing, key=lambda c: BUILD_ORDER.index(c.wrapper))
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=min(build_jobs(), len(missing))) as pool:
        futures = [pool.submit(_build_component, c, go, placed[c], log) for c in largest_first]
        for future in futures:
            future.result()
    if len(missing) > 1:
        log(f"built {', '.join(c.wrapper for c in largest_first)} in {time.monotonic() - started:.0f}s")


# Longest build first, so that the small ones fill in beside it.
BUILD_ORDER = ("k8s", "helm4", "helm3", "kwok", "etcd")


def ensure_helm(log=lambda msg: print(msg, file=sys.stderr)) -> dict[str, Path]:
    """Return the paths of helm3 and helm4, building what is missing into the same cache."""
    every = ensure_binaries(log=log, helm=True)
    return {c.binaries[0]: every[c.binaries[0]] for c in HELM_COMPONENTS}


def main(helm: bool = False) -> int:
    try:
        binaries = ensure_binaries(helm=helm or "--helm" in sys.argv[1:])
    except BuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for name, path in sorted(binaries.items()):
        print(f"{name}\t{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
