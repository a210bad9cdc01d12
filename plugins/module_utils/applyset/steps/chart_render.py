"""Step render-chart: a Helm chart rendered by ``helm template`` becomes the run's desired objects.

It runs after read-parent, which it needs: discovery gives the served API versions, and whether
the parent exists decides ``.Release.IsInstall`` or ``IsUpgrade`` (as ``helm install`` and ``helm
upgrade`` would set them). One more read, ``GET /version``, gives ``--kube-version``. The output
is then the set's input as if given as text (``inputs.manifests.load_definition``): hooks are
split out by split-hooks (``helm.sh/hook``; ``test`` hooks are left out with a warning), CRDs of
the chart's ``crds/`` directory are members applied first, and everything after is an ordinary
run. Rendering writes nothing on the cluster, so check mode renders too.

helm runs on the module's host with the environment of the module (``HELM_*`` variables,
proxies), but with the run's own state (``helm_state``: repository cache, repository list, registry
logins in a temporary directory removed after, seeded from the host's, so that forks never share
it); the task's ``values`` reach it through a file of mode 0600 removed after (``values_file``). The revision's provenance gets the chart's name, version,
source, values digest and the helm version (``inputs.helm_chart.provenance``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping

from ..kube.api import KubeApi
from ..kube.discovery import Discovery
from ..kube.kubeconfig import EXPORTED_CONTEXT
from ..errors import ApplySetError, InputError, InputErrors
from ..inputs import helm_chart, helm_state as state
from ..inputs.helm_chart import Chart
from ..inputs.manifest_checks import validate
from ..inputs.manifests import Manifest, load_definition
from .. import spec
from ..parent import helm_release
from ..parent.model import Parent
from ..rules import chart_crds
from .release_takeover import home_namespace
from ..run.options import RunOptions
from ..run.report import Recorder
from ..run.runner import READ, RunContext, Step

HELM_TIMEOUT = 600.0  # seconds: a chart from a slow repository is downloaded by helm template itself


def renders_chart(opts: RunOptions) -> bool:
    """Whether a run with ``opts`` renders a chart (not when it rolls back: the revision is applied)."""
    rolls_back = opts.history is not None and opts.history.rollback_to is not None
    return opts.helm.chart is not None and not rolls_back


def find_binary(name: str) -> str:
    """The path of the helm to run: ``name`` as a path, or looked for on PATH.

    Raises:
        InputError: no such helm, naming the versions that work and how to point at one.
    """
    found = shutil.which(name)
    if found is None:
        where = f"at {name}" if os.sep in name else "on PATH"
        raise InputError(f"no helm {where} on the host that runs the module; charts need "
                         f"{helm_chart.WORKING_VERSIONS}", obj="helm.binary", fix=helm_chart.HOW_TO_POINT)
    return found


def _run(args: list[str], chart: Chart, env: dict[str, str] | None = None,
         secret_input: str | None = None) -> subprocess.CompletedProcess:
    """helm with ``args``; ``secret_input`` (a password) on its stdin, never on its command line."""
    stdin = {"input": secret_input} if secret_input is not None else {"stdin": subprocess.DEVNULL}
    try:
        # The core imports nothing of Ansible (it is tested and used without it), so no run_command.
        return subprocess.run(  # pylint: disable=ansible-bad-function
            args, capture_output=True, text=True, timeout=HELM_TIMEOUT, check=False, env=env, **stdin)
    except subprocess.TimeoutExpired:
        raise InputError(f"helm template of {chart.named()} took longer than {HELM_TIMEOUT:.0f}s", obj=f"chart {chart.source}",
                         fix="check that the host reaches helm.repo; nothing was changed") from None
    except OSError as err:
        raise InputError(f"helm at {args[0]} could not run: {err.strerror}", obj="helm.binary",
                         fix=helm_chart.HOW_TO_POINT) from None


@contextlib.contextmanager
def values_file(values: Mapping[str, object]) -> Iterator[str | None]:
    """A file of ``values`` (JSON, which helm reads as YAML) only this user can read, removed after;
    None when there are no values."""
    if not values:
        yield None
        return
    handle, path = tempfile.mkstemp(prefix="applyset-values-", suffix=".yaml")  # mode 0600
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(values, out, default=str)
        yield path
    finally:
        os.unlink(path)


@contextlib.contextmanager
def kubeconfig_file(client: KubeApi) -> Iterator[str]:
    """The client's connection (``KubeApi.kubeconfig``: its credential included) in a file only this
    user can read, removed after: helm's ``lookup`` reads the cluster as the task does."""
    handle, path = tempfile.mkstemp(prefix="applyset-helm-kubeconfig-", suffix=".yaml")  # mode 0600
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(client.kubeconfig(), out)  # JSON is YAML
        yield path
    finally:
        os.unlink(path)


def helm_environment(env: dict[str, str]) -> dict[str, str]:
    """``env`` without helm's ``HELM_KUBE*`` connection variables, which would otherwise override the
    kubeconfig written for it (a context, a token, a server of another cluster)."""
    return {name: value for name, value in env.items() if not name.startswith("HELM_KUBE")}


def add_repository(binary: str, chart: Chart, env: dict[str, str]) -> None:
    """With repository credentials, the chart repository added to the run's own helm state
    (``helm repo add --password-stdin``: the password in a file of the run, never on a command line),
    so that helm template and helm dependency update use them; nothing without credentials.

    Raises:
        InputError: the repository refused the credentials or cannot be reached (helm's cause, redacted).
    """
    if not (chart.repo and chart.access.username):
        return
    args = chart.access.repo_add_args(helm_chart.RUN_REPO, chart.repo)
    answer = _run([binary, *args], chart, env=env, secret_input=chart.access.password or "")
    if answer.returncode != 0:
        error = helm_chart.render_error(chart, answer.stderr)
        raise InputError(error.message.replace("helm template", "helm repo add", 1), obj=error.obj,
                         fix="check helm.repo, helm.repo_username and helm.repo_password (and the TLS options); "
                             "nothing was changed")


def with_dependencies(binary: str, chart: Chart, env: dict[str, str]) -> Chart:
    """``chart`` with its ``Chart.yaml`` dependencies fetched (``helm dependency update``) into a copy
    of its directory in the run's helm state (``HELM_CACHE_HOME``'s directory), never into the
    user's; relative ``file://`` dependencies made absolute. ``chart`` itself without
    ``dependency_update`` or when it is no directory (a packaged chart carries its dependencies).

    Raises:
        InputError: helm's failure to fetch them, with its cause (redacted as helm template's).
    """
    if not chart.dependency_update or not os.path.isdir(chart.chart):
        return chart
    root = os.path.dirname(env["HELM_CACHE_HOME"])
    copy = os.path.join(root, "chart", os.path.basename(os.path.abspath(chart.chart)))
    shutil.copytree(chart.chart, copy, symlinks=True)
    for name in ("Chart.yaml", "requirements.yaml"):
        path = os.path.join(copy, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                text = helm_chart.absolute_file_dependencies(handle.read(), chart.chart)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
    answer = _run([binary, "dependency", "update", copy], chart, env=env)
    if answer.returncode != 0:
        error = helm_chart.render_error(chart, answer.stderr)
        raise InputError(error.message.replace("helm template", "helm dependency update", 1), obj=error.obj,
                         fix="check the dependencies in the chart's Chart.yaml and that the host reaches their "
                             "repositories; nothing was changed")
    return dataclasses.replace(chart, chart=copy)


@contextlib.contextmanager
def helm_state(binary: str, chart: Chart) -> Iterator[dict[str, str]]:
    """The environment every helm command of the run gets: the module's, with helm's repository
    cache, repository list and registry logins in a directory of this run only this user can read,
    seeded from the host's (``inputs.helm_state.seeds``: copies, never written back), removed after."""
    root = tempfile.mkdtemp(prefix="applyset-helm-")  # mode 0700
    try:
        host = state.parse_env(_run([binary, "env"], chart).stdout)
        for source, target in state.seeds(chart.chart, bool(chart.repo), host, root):
            if os.path.isfile(source):
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copyfile(source, target)
        yield state.private_env(dict(os.environ), root, host)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def helm_version(binary: str, chart: Chart, env: dict[str, str] | None = None) -> tuple[int, ...]:
    """The version of the helm at ``binary``, refused when too old."""
    answer = _run([binary, "version", "--template", "{{.Version}}"], chart, env=env)
    return helm_chart.check_version(answer.stdout if answer.returncode == 0 else answer.stderr, binary)


def server_version(client: KubeApi) -> str:
    """The API server's ``gitVersion`` (``v1.34.4``), as ``helm install`` reads it."""
    body = client.request("GET", "/version").body
    return str((body or {}).get("gitVersion") or "")


def render_chart(ctx: RunContext) -> None:
    """Step render-chart: the chart rendered with the cluster's Capabilities; its objects become the
    desired ones, its provenance the revision's.

    Raises:
        InputError(s): no helm or one too old, a missing values file, helm's own failure (a chart
            that does not render, an unreachable repository, a version that does not exist),
            objects that are no valid input; all before any write.
    """
    chart = ctx.opts.helm.chart
    if chart is None:  # the route has this step only with a chart (renders_chart)
        return
    missing = helm_chart.missing_values_files(chart)
    if missing:
        raise InputErrors(missing)
    binary = find_binary(chart.binary)
    is_upgrade = ctx.parent.exists or _release_exists(ctx.client, ctx.discovery, ctx.opts, ctx.namespace, ctx.parent)
    answer, version = _template(ctx.client, ctx.discovery, chart, binary, is_upgrade)
    if chart.is_local and chart.version:
        ctx.record.warn(f"helm.version {chart.version} is not used for the local chart {chart.chart}: helm renders "
                        f"it as it is there (its Chart.yaml says version {local_metadata_version(chart)})")
    if answer.returncode != 0:
        raise helm_chart.render_error(chart, answer.stderr)
    manifests = load_definition(helm_chart.split_output(answer.stdout), source=f"chart {chart.source}")
    _default_namespace(manifests, ctx.discovery, chart.namespace)
    validate(manifests)
    crds, manifests = chart_crds.split(manifests)
    ctx.chart_crds = _decide_crds(ctx.client, ctx.discovery, ctx.opts, ctx.record, ctx.parent, chart, crds)
    ctx.rendered = manifests
    if ctx.opts.history is not None:
        # The run's own options (as release_takeover does): the caller's, which an automatic rollback
        # reuses, keep the provenance they were given.
        recorded = {**ctx.opts.history.provenance, "chart": helm_chart.provenance(chart, version)}
        ctx.opts = dataclasses.replace(ctx.opts, history=dataclasses.replace(ctx.opts.history, provenance=recorded))


def _template(client: KubeApi, discovery: Discovery, chart: Chart, binary: str,
              is_upgrade: bool) -> tuple[subprocess.CompletedProcess, tuple[int, ...]]:
    """helm's answer to ``helm template`` of ``chart`` and its version, every helm command run with
    this run's own helm state (``helm_state``)."""
    with helm_state(binary, chart) as env, values_file(chart.values) as path:
        version = helm_version(binary, chart, env)
        helm_chart.check_features(chart, version, binary)
        add_repository(binary, chart, env)
        rendered = with_dependencies(binary, chart, env)
        args = helm_chart.template_args(rendered, kube_version=server_version(client),
                                        apis=helm_chart.api_versions(discovery.resources),
                                        is_upgrade=is_upgrade, values_file=path)
        if helm_chart.renders_on_server(chart, version):
            return _render_on_server(client, [binary, *args], chart, version, is_upgrade, env), version
        return _run([binary, *args], chart, env=env), version


def _decide_crds(client: KubeApi, discovery: Discovery, opts: RunOptions, record: Recorder, parent: Parent,
                 chart: Chart, crds: list[Manifest]) -> chart_crds.ChartCrds:
    """What the run does with the chart's ``crds/`` CRDs (rules.chart_crds), from their live state
    (one GET each); the result's ``applyset.chart_crds`` says it, a warning names those adopted."""
    if not crds:
        return chart_crds.ChartCrds(chart.crds)
    res = discovery.for_group_kind(spec.CRD_KIND)
    if res is None:  # never: every API server since 1.16 serves them
        raise AssertionError("CustomResourceDefinitions are not served")
    found = client.map(lambda crd: client.get(res, crd.name), crds)
    for crd, obj in zip(crds, found):
        if isinstance(obj, ApplySetError):
            raise ApplySetError(f"the chart's CRD {crd.name} could not be read: {obj}", obj=crd.source,
                                fix="grant this user get on customresourcedefinitions; nothing was changed") from obj
    decided = chart_crds.decide(crds, {crd.name: obj for crd, obj in zip(crds, found)}, chart.crds,
                                set_id=parent.id, field_manager=opts.field_manager)
    record.warn(*filter(None, [chart_crds.adoption_warning(decided, chart.source)]))
    record.report.applyset["chart_crds"] = decided.report()
    return decided


def local_metadata_version(chart: Chart) -> str:
    """The version a local chart's Chart.yaml gives, or "none"."""
    return helm_chart.local_metadata(chart).get("version", "none")


def _release_exists(client: KubeApi, discovery: Discovery, opts: RunOptions, namespace: str | None,
                    parent: Parent) -> bool:
    """Whether the Helm release a take-over takes over exists: its objects do, so the chart renders
    as ``helm upgrade`` renders it (``.Release.IsUpgrade``), as the parent's existence says otherwise."""
    helm = opts.helm
    if not helm.take_over or not helm.release:
        return False
    return helm_release.read(client, discovery, helm.release, home_namespace(opts, namespace, parent)) is not None


def _render_on_server(client: KubeApi, command: list[str], chart: Chart, version: tuple[int, ...],
                      is_upgrade: bool, env: dict[str, str]) -> subprocess.CompletedProcess:
    """helm template with the cluster reachable under the task's own connection (``lookup`` reads
    it; helm only reads, so check mode renders this way too).

    helm 4 also maps every rendered object to a served kind: a first install of a chart whose
    ``crds/`` define kinds it uses fails so ("ensure CRDs are installed first"); then nothing of the
    release exists for ``lookup`` to find, and the chart is rendered without the cluster, as before."""
    with kubeconfig_file(client) as path:
        server = helm_chart.ServerRender(kubeconfig=path, context=EXPORTED_CONTEXT, helm_major=version[0])
        answer = _run([*command, *server.args()], chart, env=helm_environment(env))
    if answer.returncode != 0 and not is_upgrade and "ensure CRDs are installed first" in answer.stderr:
        return _run(command, chart, env=env)
    return answer


def _default_namespace(manifests: list[Manifest], discovery: Discovery, namespace: str | None) -> None:
    """Namespaced objects the chart left without a namespace go to the release's (as helm install
    puts them), which may differ from the set's."""
    if not namespace:
        return
    chart_scoped = _crd_scopes(manifests)
    for manifest in manifests:
        meta = manifest.metadata
        res = discovery.for_gvk(manifest.group or "", manifest.version or "", manifest.kind or "")
        namespaced = res.namespaced if res is not None else chart_scoped.get((manifest.group, manifest.kind), False)
        if namespaced and not meta.get("namespace") and isinstance(manifest.obj, dict):
            manifest.obj["metadata"] = {**meta, "namespace": namespace}


def _crd_scopes(manifests: list[Manifest]) -> dict[tuple[str | None, str | None], bool]:
    """``{(group, kind): namespaced}`` of the chart's own CRDs: their custom resources are not
    served before the run applies the CRDs, so discovery cannot say their scope."""
    scopes = {}
    for manifest in manifests:
        crd_spec = manifest.mapping.get("spec") if manifest.kind == "CustomResourceDefinition" else None
        if isinstance(crd_spec, dict):
            names = crd_spec.get("names")
            kind = names.get("kind") if isinstance(names, dict) else None
            scopes[(crd_spec.get("group"), kind)] = crd_spec.get("scope") == "Namespaced"
    return scopes


RENDER_CHART = Step("render-chart", render_chart, READ, reads="discovery parent", sets="rendered chart_crds")
