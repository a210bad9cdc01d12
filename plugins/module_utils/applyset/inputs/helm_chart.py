"""A Helm chart as the set's input: what ``helm template`` is asked, and what its answers mean (pure).

The chart is rendered as ``helm install`` would render it, given what the cluster serves (as Argo
CD renders charts): ``--kube-version`` and one ``--api-versions`` for each served group/version
and group/version/Kind from discovery, ``--is-upgrade`` when the set exists, the release name and
namespace, ``--include-crds``. The user's ``values`` go to helm through a file only it reads
(mode 0600, removed after); they are never shown: errors name the chart and the values files,
and the revision records a digest of the values (``values_digest``), not the values.

Running helm is the step's (``steps.chart_render``); this module builds its command line
(``template_args``), checks its version (``check_version``), turns its failures into errors a
chart user expects (``render_error``) and its output into documents (``split_output``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tarfile
from collections.abc import Iterable, Iterator
from typing import Any, Protocol
from dataclasses import dataclass, field

from ..errors import ApplySetError, InputError
from ..kubeyaml.stream import read_stream
from .redact import leaves

# The oldest helm whose template takes every flag used here: --kube-version and --is-upgrade
# (3.6), and oci:// chart references without HELM_EXPERIMENTAL_OCI (3.8).
MIN_VERSION = (3, 8, 0)
WORKING_VERSIONS = "helm 3.8 or newer (helm 3 or helm 4)"
# The oldest helm whose template takes --dry-run=server: its ``lookup`` then reads the cluster.
SERVER_RENDER_VERSION = (3, 13, 0)
# The oldest helm whose template takes --skip-schema-validation, and --set-json.
SKIP_SCHEMA_VERSION = (3, 16, 0)
SET_JSON_VERSION = (3, 10, 0)
# set_values' value_type (kubernetes.core.helm's names) -> helm's flag.
SET_FLAGS = {"raw": "--set", "string": "--set-string", "json": "--set-json", "file": "--set-file"}
HOW_TO_POINT = ("install helm (https://helm.sh/docs/intro/install/) on the host that runs the module, "
                "or give its path in helm.binary")


@dataclass(frozen=True)
class SetValue:
    """One of ``set_values``, as kubernetes.core.helm takes it: ``value`` is ``key=value`` (``key=path``
    for a ``file``), ``value_type`` one of ``SET_FLAGS``."""

    value: str
    value_type: str = "raw"

    @property
    def given(self) -> str:
        """What follows the first ``=``: the value (a path for a ``file``)."""
        return self.value.partition("=")[2]


@dataclass(frozen=True)
class RepoAccess:
    """How helm reaches the chart repository or registry, under kubernetes.core.helm's and helm_pull's
    names: basic auth (``repo_username``, ``repo_password``; ``pass_credentials`` sends them to other
    hosts too), TLS files and ``insecure_skip_tls_verify``, ``plain_http`` (an OCI registry over HTTP)."""

    username: str | None = None
    password: str | None = None  # never on a command line: helm repo add --password-stdin
    pass_credentials: bool = False
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure_skip_tls_verify: bool = False
    plain_http: bool = False

    def tls_args(self) -> list[str]:
        """The flags helm's chart download commands (template, repo add) take for TLS."""
        args = []
        for flag, path in (("--ca-file", self.ca_file), ("--cert-file", self.cert_file), ("--key-file", self.key_file)):
            if path:
                args += [flag, path]
        if self.insecure_skip_tls_verify:
            args.append("--insecure-skip-tls-verify")
        return args

    def repo_add_args(self, name: str, url: str) -> list[str]:
        """``helm repo add`` of the chart repository under ``name`` in the run's own helm state, its
        password read from stdin; helm dependency update then finds the credentials by URL too."""
        args = ["repo", "add", name, url, *self.tls_args()]
        if self.username:
            args += ["--username", self.username, "--password-stdin"]
        if self.pass_credentials:
            args.append("--pass-credentials")
        return args


# The name the run's own helm state knows the chart repository by when it needs credentials.
RUN_REPO = "applyset-run-repo"


@dataclass(frozen=True)
class Chart:
    """The ``helm`` option, resolved: what to render and how (``release`` and ``namespace`` are
    the given ones or the defaults: the parent's name and the set's namespace)."""

    chart: str
    release: str
    namespace: str | None
    repo: str | None = None
    version: str | None = None
    values: dict[str, Any] = field(default_factory=dict)  # helm's values: any YAML the chart reads
    values_files: tuple[str, ...] = ()
    include_crds: bool = True
    binary: str = "helm"
    lookup: bool = True
    crds: str = "Create"  # rules.chart_crds: Skip, Create or CreateReplace
    set_values: tuple[SetValue, ...] = ()  # --set, --set-string, --set-json, --set-file, in order
    skip_schema_validation: bool = False
    dependency_update: bool = False  # Chart.yaml's dependencies fetched into a copy of the chart first
    access: RepoAccess = field(default_factory=RepoAccess)

    @property
    def source(self) -> str:
        """Where the chart comes from, as messages and the provenance name it."""
        if self.repo:
            return f"{self.chart} from {self.repo}"
        return self.chart

    @property
    def is_local(self) -> bool:
        return not self.repo and not self.chart.startswith("oci://")

    def named(self) -> str:
        """``chart CHART`` (with its version when given), as errors name it."""
        return f"chart {self.source}" + (f" version {self.version}" if self.version else "")


def parse_version(text: str) -> tuple[int, ...] | None:
    """``v3.22.0`` (what ``helm version --template '{{.Version}}'`` prints) -> (3, 22, 0); None if no version."""
    found = re.search(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    if not found:
        return None
    return tuple(int(part or 0) for part in found.groups())


def check_version(text: str, binary: str) -> tuple[int, ...]:
    """The version of the helm at ``binary`` from its answer, refused when older than ``MIN_VERSION``.

    Raises:
        InputError: an answer that is no version, or a helm too old, naming the versions that work.
    """
    version = parse_version(text)
    if version is None or version < MIN_VERSION:
        shown = ".".join(map(str, version)) if version else repr((text or "").strip()[:80])
        raise InputError(f"helm at {binary} is version {shown}; charts need {WORKING_VERSIONS}",
                         obj="helm.binary", fix=HOW_TO_POINT)
    return version


def check_features(chart: Chart, version: tuple[int, ...], binary: str) -> None:
    """Refuse options the helm at ``binary`` lacks, naming the version that has them.

    Raises:
        InputError: ``skip_schema_validation`` before helm 3.16, a ``json`` set value before 3.10.
    """
    shown = ".".join(map(str, version))
    if chart.skip_schema_validation and version < SKIP_SCHEMA_VERSION:
        raise InputError(f"helm.skip_schema_validation needs helm 3.16 or newer; helm at {binary} is version {shown}",
                         obj="helm.skip_schema_validation", fix="give a newer helm in helm.binary, or leave the option out")
    if chart.access.plain_http and version < SERVER_RENDER_VERSION:
        raise InputError(f"helm.plain_http needs helm 3.13 or newer; helm at {binary} is version {shown}",
                         obj="helm.plain_http", fix="give a newer helm in helm.binary")
    if any(item.value_type == "json" for item in chart.set_values) and version < SET_JSON_VERSION:
        raise InputError(f"a json value of helm.set_values needs helm 3.10 or newer; helm at {binary} is version {shown}",
                         obj="helm.set_values", fix="give a newer helm in helm.binary, or the value in helm.values")


class _Served(Protocol):
    """A served resource as discovery describes it (``kube.discovery.Resource``, a layer above)."""

    @property
    def api_version(self) -> str:
        ...

    @property
    def kind(self) -> str:
        ...


def api_versions(resources: Iterable[_Served]) -> list[str]:
    """What ``--api-versions`` gets for the served ``resources`` (``kube.discovery.Resource``, every
    version): each group/version and each group/version/Kind, as ``.Capabilities.APIVersions.Has``
    asks for either. Sorted, without duplicates."""
    found = set()
    for res in resources:
        found.add(res.api_version)
        found.add(f"{res.api_version}/{res.kind}")
    return sorted(found)


def renders_on_server(chart: Chart, version: tuple) -> bool:
    """Whether ``chart`` is rendered with the cluster reachable (``lookup`` reads it): asked for
    (``lookup``, the default) and a helm that can (``SERVER_RENDER_VERSION``)."""
    return chart.lookup and version >= SERVER_RENDER_VERSION


@dataclass(frozen=True)
class ServerRender:
    """How helm reaches the cluster when it renders (``--dry-run=server``): the kubeconfig file
    written for it and its context, and helm's major version (helm 4 then also builds the
    objects against the cluster: it is told not to validate them or refuse existing ones, which
    the run itself does)."""

    kubeconfig: str
    context: str
    helm_major: int

    def args(self) -> list[str]:
        args = ["--dry-run=server", "--kubeconfig", self.kubeconfig, "--kube-context", self.context]
        if self.helm_major >= 4:
            args += ["--disable-openapi-validation", "--take-ownership"]
        return args


def template_args(chart: Chart, *, kube_version: str, apis: list[str], is_upgrade: bool,
                  values_file: str | None) -> list[str]:
    """The arguments of ``helm template`` for ``chart`` (the binary not included); rendered with the
    cluster reachable, ``ServerRender.args`` follow."""
    by_name = bool(chart.repo and chart.access.username)  # the repository added with its credentials
    args = ["template", chart.release, f"{RUN_REPO}/{chart.chart}" if by_name else chart.chart]
    if chart.namespace:
        args += ["--namespace", chart.namespace]
    if chart.repo and not by_name:
        args += ["--repo", chart.repo]
    args += chart.access.tls_args()
    if chart.access.pass_credentials and not by_name:
        args.append("--pass-credentials")
    if chart.access.plain_http:
        args.append("--plain-http")
    if chart.version:
        args += ["--version", chart.version]
    args += ["--kube-version", kube_version]
    for api in apis:
        args += ["--api-versions", api]
    if chart.include_crds:
        args.append("--include-crds")
    if is_upgrade:
        args.append("--is-upgrade")
    for path in chart.values_files:
        args += ["--values", path]
    if values_file is not None:
        args += ["--values", values_file]  # last: the task's values win over the files'
    for item in chart.set_values:  # helm applies them after every --values, in their order
        args += [SET_FLAGS[item.value_type], item.value]
    if chart.skip_schema_validation:
        args.append("--skip-schema-validation")
    return args


def missing_values_files(chart: Chart) -> list[InputError]:
    """An error for each values file (and ``file`` set value) that is not there, before helm runs."""
    return [InputError(f"values file {path} of {chart.named()} does not exist", obj=option,
                       fix="give the path of an existing file on the host that runs the module")
            for path, option in _value_files(chart) if not os.path.isfile(path)]


def _value_files(chart: Chart) -> list[tuple[str, str]]:
    """``(path, option)`` of every file the values come from."""
    return ([(path, "helm.values_files") for path in chart.values_files]
            + [(item.given, "helm.set_values") for item in chart.set_values if item.value_type == "file"])


_FILE_REPOSITORY = re.compile(r"""^(\s*-?\s*repository:\s*["']?)file://(?!/)([^"'\s#]+)""", re.MULTILINE)


def absolute_file_dependencies(chart_yaml: str, chart_dir: str) -> str:
    """``Chart.yaml`` (or ``requirements.yaml``) text with each relative ``file://`` dependency made
    absolute against ``chart_dir``, so that a copy of the chart elsewhere finds them."""
    return _FILE_REPOSITORY.sub(lambda found: found[1] + "file://" + os.path.normpath(
        os.path.join(os.path.abspath(chart_dir), found[2])), chart_yaml)


_API_VERSIONS = re.compile(r"(--api-versions \S+ ?)+")


def render_error(chart: Chart, stderr: str) -> InputError:
    """helm's failure as an error naming the chart and the fix: helm's own message (the template
    file and line of a chart that does not render), the long --api-versions list, helm's hints and
    log lines left out, and every value the task gave redacted (``redact_values``)."""
    message = _API_VERSIONS.sub("", _without_hints(redact_values(stderr or "", value_strings(chart))))
    message = message.strip().removeprefix("Error: ").strip()
    lowered = message.lower()
    refused = lookup_refusal(chart, message)
    if refused is not None:
        return refused
    if "missing in charts/ directory" in lowered and not chart.dependency_update:
        fix = ("set helm.dependency_update: true (helm dependency update into a copy of the chart, never into "
               "the chart's directory), or vendor the dependencies in its charts/ directory")
    elif "values file" in lowered or ("open " in lowered and "no such file" in lowered):
        fix = "check the paths in helm.values_files"
    elif "not found in" in lowered and "repository" in lowered or "no chart version found" in lowered:
        fix = "check helm.version against the versions the repository lists (helm search repo --versions)"
    elif any(word in lowered for word in ("no such host", "connection refused", "looks like", "i/o timeout",
                                          "failed to fetch", "could not find protocol", "dial tcp")):
        fix = "check helm.repo (its URL, and that the host that runs the module reaches it)"
    elif "path" in lowered and "not found" in lowered or "no such file" in lowered:
        fix = "check helm.chart: a chart directory, a .tgz, a chart name with helm.repo, or an oci:// reference"
    else:
        fix = "correct the chart or its values (helm template with the same values shows the same error)"
    return InputError(f"helm template of {chart.named()} failed: {message or 'no message'}", obj=f"chart {chart.source}",
                      fix=fix + "; nothing was changed")


# helm's lines that are no part of its error: the --debug hint (the module shows no debug output)
# and helm 4's log lines (level=WARN msg=...).
_HINT_LINE = re.compile(r"^(Use --debug flag.*|level=\w+ msg=.*)$\n?", re.MULTILINE)
REDACTED = "<redacted>"
# Shorter value strings are left in helm's messages: "no", "on" or "v1" are words of the message
# far more often than a value a template formatted into its error (a credential is longer).
MIN_REDACTED_LENGTH = 3


def _without_hints(text: str) -> str:
    return _HINT_LINE.sub("", text)


def value_strings(chart: Chart) -> set[str]:
    """Every value string the task gave helm: the scalars of ``values`` and of each values file
    (numbers too, as a template formats them), those at least ``MIN_REDACTED_LENGTH`` long."""
    found = set(_scalars(chart.values)) | set_value_strings(chart) | ({chart.access.password} if chart.access.password else set())
    for path in chart.values_files:
        try:
            with open(path, encoding="utf-8") as handle:
                documents = read_stream(handle.read())
        except (OSError, UnicodeDecodeError, ValueError, ApplySetError):
            continue  # helm's own message says what is wrong with the file
        for _number, document in documents:
            found.update(_scalars(document))
    return {text for text in found if len(text.strip()) >= MIN_REDACTED_LENGTH}


def set_value_strings(chart: Chart) -> set[str]:
    """The value strings of ``set_values``: each value as given, the scalars of a ``json`` one, the
    content of a ``file`` one (its path is no secret)."""
    found: set[str] = set()
    for item in chart.set_values:
        if item.value_type != "file":
            found.add(item.given)  # and each of a list of them (a=1,b=2)
            found.update(part.partition("=")[2] for part in item.value.split(",") if "=" in part)
            if item.value_type == "json":
                try:
                    found.update(_scalars(json.loads(item.given)))
                except ValueError:
                    pass  # helm's own message says what is wrong with it
            continue
        try:
            with open(item.given, encoding="utf-8") as handle:
                found.add(handle.read().strip())
        except (OSError, UnicodeDecodeError):
            continue
    return found


def _scalars(value: object) -> Iterator[str]:
    return (str(leaf) for leaf in leaves(value) if isinstance(leaf, (str, int, float)) and not isinstance(leaf, bool))


def redact_values(text: str, values: set[str]) -> str:
    """``text`` (helm's message) with each of ``values`` replaced by ``REDACTED``, longest first (a
    value inside a longer one goes with it). A chart's ``fail`` or ``required`` message may format
    any value it was given, a password among them."""
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


# client-go's words for a refused request: secrets "x" is forbidden: User "u" cannot get resource "secrets" ...
_FORBIDDEN = re.compile(r'is forbidden: (User "[^"]*") cannot (\w+) resource "([^"]+)" in API group "([^"]*)"'
                        r'(?: in the namespace "([^"]*)")?')


def lookup_refusal(chart: Chart, message: str) -> InputError | None:
    """The error for a chart whose ``lookup`` the server refused (the task's user may not read what
    the chart looks up), naming the resource, or None for any other failure."""
    found = _FORBIDDEN.search(message or "")
    if found is None:
        return None
    user, verb, plural, group, namespace = found.groups()
    kind = f"{plural}.{group}" if group else plural
    where = f' in namespace "{namespace}"' if namespace else " cluster-wide"
    return InputError(f"helm template of {chart.named()} looks up {kind}{where}, which {user} may not {verb}",
                      obj=f"chart {chart.source}",
                      fix=f"grant the task's user get and list on {kind}{where} (what helm upgrade needs too), or set "
                          "helm.lookup: false to render without reading the cluster; nothing was changed")


_DOCUMENT_START = re.compile(r"^---[ \t]*$", re.MULTILINE)


def split_output(text: str) -> list[str]:
    """helm template's output as one text per document, each starting with its ``# Source:`` line
    (so that messages name the template that made it); documents with nothing but comments dropped."""
    documents = []
    for part in _DOCUMENT_START.split(text or ""):
        body = [line for line in part.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        if body:
            documents.append(part.strip("\n") + "\n")
    return documents


def values_digest(chart: Chart) -> str:
    """A sha256 of the merged inputs of the values (the files' bytes in order, then ``values``):
    a change of values changes it; the values themselves are never recorded (they may hold secrets)."""
    digest = hashlib.sha256()
    for path in chart.values_files:
        with open(path, "rb") as handle:
            digest.update(handle.read() + b"\0")
    digest.update(json.dumps(chart.values, sort_keys=True, default=str).encode())
    for item in chart.set_values:  # none: the digest of a chart without set_values as before
        digest.update(f"\0{item.value_type}\0{item.value}".encode())
        if item.value_type == "file" and os.path.isfile(item.given):
            with open(item.given, "rb") as handle:
                digest.update(handle.read())
    return "sha256:" + digest.hexdigest()


def local_metadata(chart: Chart) -> dict[str, str]:
    """``name`` and ``version`` of a local chart (its ``Chart.yaml``, in a directory or a .tgz);
    for a chart from a repository or registry, its reference and the version asked."""
    if not chart.is_local:
        return {"name": chart.chart.rstrip("/").rsplit("/", 1)[-1], "version": chart.version or "latest"}
    text = ""
    try:
        if os.path.isdir(chart.chart):
            with open(os.path.join(chart.chart, "Chart.yaml"), encoding="utf-8") as handle:
                text = handle.read()
        elif tarfile.is_tarfile(chart.chart):
            with tarfile.open(chart.chart) as archive:
                member = next((m for m in archive.getmembers() if m.name.count("/") == 1
                               and m.name.endswith("/Chart.yaml")), None)
                extracted = archive.extractfile(member) if member is not None else None
                text = extracted.read().decode("utf-8") if extracted is not None else ""
    except (OSError, tarfile.TarError, UnicodeDecodeError):
        text = ""
    found: dict[str, str] = {}
    for key in ("name", "version"):
        match = re.search(rf"^{key}:\s*['\"]?([^'\"\s#]+)", text, re.MULTILINE)
        if match:
            found[key] = match[1]
    return found


def provenance(chart: Chart, helm_version: tuple[int, ...]) -> dict[str, str]:
    """What a revision records of the chart: name, version, source, values digest and helm version."""
    meta = local_metadata(chart)
    return {"name": meta.get("name", chart.chart), "version": meta.get("version", chart.version or ""),
            "source": chart.source, "release": chart.release, "namespace": chart.namespace or "",
            "values_digest": values_digest(chart), "helm_version": "v" + ".".join(map(str, helm_version))}
