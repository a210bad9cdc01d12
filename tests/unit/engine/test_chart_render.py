"""steps.chart_render: which helm runs, the values file, namespaces of the chart's objects (no cluster)."""

import contextlib
import os
import stat

import pytest

from applyset.errors import InputError
from applyset.inputs.helm_chart import Chart
from applyset.inputs.manifests import Manifest
from applyset.kube.discovery import Discovery, Resource
from applyset.steps import chart_render


def fake_helm(tmp_path, version="v3.22.0"):
    path = tmp_path / "helm"
    path.write_text(f"#!/bin/sh\necho '{version}'\n")
    path.chmod(0o755)
    return str(path)


def no_helm_state(monkeypatch):
    """helm itself stubbed: found, version 3.22, no state directory."""
    monkeypatch.setattr(chart_render, "find_binary", lambda name: "helm")
    monkeypatch.setattr(chart_render, "helm_version", lambda binary, chart, env=None: (3, 22, 0))
    monkeypatch.setattr(chart_render, "helm_state", lambda binary, chart: contextlib.nullcontext({}))


def test_no_helm_names_the_versions_that_work_and_how_to_point_at_one(tmp_path):
    with pytest.raises(InputError) as err:
        chart_render.find_binary(str(tmp_path / "nowhere" / "helm"))
    assert "no helm at" in str(err.value) and "helm 3.8 or newer" in str(err.value) and "helm.binary" in err.value.fix
    with pytest.raises(InputError) as err:
        chart_render.find_binary("helm-that-is-not-installed-anywhere")
    assert "no helm on PATH" in str(err.value)


def test_the_helm_found_is_asked_its_version_and_an_old_one_refused(tmp_path):
    assert chart_render.helm_version(fake_helm(tmp_path), Chart(chart="c", release="r", namespace=None)) == (3, 22, 0)
    old = fake_helm(tmp_path, "v3.7.1")
    with pytest.raises(InputError, match="is version 3.7.1"):
        chart_render.helm_version(old, Chart(chart="c", release="r", namespace=None, binary=old))


def test_values_go_through_a_file_only_the_user_reads_removed_after():
    with chart_render.values_file({"password": "hunter2"}) as path:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert "hunter2" in open(path, encoding="utf-8").read()
    assert not os.path.exists(path)
    with chart_render.values_file({}) as nothing:
        assert nothing is None


def test_namespaced_objects_without_a_namespace_go_to_the_releases():
    discovery = Discovery([Resource("", "v1", "ConfigMap", "configmaps", True),
                           Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False)])
    objects = [Manifest({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}, "t"),
               Manifest({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "own"}}, "t"),
               Manifest({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "c"}},
                        "t"),
               Manifest({"apiVersion": "example.com/v1", "kind": "Unknown", "metadata": {"name": "d"}}, "t"),
               Manifest({"apiVersion": "shop.example.com/v1", "kind": "Widget", "metadata": {"name": "e"}}, "t"),
               Manifest({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                         "metadata": {"name": "widgets.shop.example.com"},
                         "spec": {"group": "shop.example.com", "scope": "Namespaced", "names": {"kind": "Widget"}}}, "t")]
    chart_render._default_namespace(objects, discovery, "release-ns")
    # A custom resource of the chart's own CRD (not served yet) goes by its CRD's scope; an unknown kind
    # is left to the plan (the set's namespace, or an error naming it).
    assert [m.metadata.get("namespace") for m in objects] == ["release-ns", "own", None, None, "release-ns", None]


def test_the_charts_provenance_goes_to_this_runs_options_never_to_the_callers(monkeypatch):
    """An automatic rollback reuses the caller's Options: the failed release's chart must not be in them."""
    from subprocess import CompletedProcess
    from types import SimpleNamespace

    from applyset.history.revisions import Settings
    from applyset.run.options import HelmSettings, Options

    rendered = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\n"
    no_helm_state(monkeypatch)
    monkeypatch.setattr(chart_render, "server_version", lambda client: "v1.33.0")
    monkeypatch.setattr(chart_render, "_run", lambda args, chart, env=None: CompletedProcess(args, 0, rendered, ""))
    callers = Options(history=Settings(provenance={"play": "deploy"}),
                      helm=HelmSettings(chart=Chart(chart="./shop", release="shop", namespace="shop", lookup=False)))
    ctx = SimpleNamespace(opts=callers, client=None, parent=SimpleNamespace(exists=True), record=None, namespace=None,
                          discovery=Discovery([Resource("", "v1", "ConfigMap", "configmaps", True)]))
    chart_render.render_chart(ctx)
    assert [m.name for m in ctx.rendered] == ["settings"]
    assert ctx.opts.history.provenance["chart"]["release"] == "shop"
    assert callers.history.provenance == {"play": "deploy"}


def test_a_version_given_for_a_local_chart_is_named_unused(monkeypatch, tmp_path):
    from subprocess import CompletedProcess
    from types import SimpleNamespace

    from applyset.run.options import HelmSettings, Options

    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: shop\nversion: 1.2.3\n")
    no_helm_state(monkeypatch)
    monkeypatch.setattr(chart_render, "server_version", lambda client: "v1.33.0")
    monkeypatch.setattr(chart_render, "_run", lambda args, chart, env=None: CompletedProcess(args, 0, "", ""))
    warned = []
    chart = Chart(chart=str(tmp_path), release="shop", namespace="shop", version="9.9.9", lookup=False)
    ctx = SimpleNamespace(opts=Options(helm=HelmSettings(chart=chart)), client=None, parent=SimpleNamespace(exists=True),
                          record=SimpleNamespace(warn=lambda *w: warned.extend(w)), discovery=Discovery([]))
    chart_render.render_chart(ctx)
    assert warned == [f"helm.version 9.9.9 is not used for the local chart {tmp_path}: helm renders it as it is there "
                      "(its Chart.yaml says version 1.2.3)"]


RECORDING_HELM = """#!/bin/sh
# A helm that answers env, version and template, and records the HELM_* state it was given.
case "$1" in
  env) echo "HELM_CACHE_HOME=\\"$HOST/cache\\""; echo "HELM_PLUGINS=\\"$HOST/plugins\\""
       echo "HELM_REPOSITORY_CONFIG=\\"$HOST/repositories.yaml\\""
       echo "HELM_REPOSITORY_CACHE=\\"$HOST/repository\\""
       echo "HELM_REGISTRY_CONFIG=\\"$HOST/registry.json\\"" ;;
  version) echo "$1 $HELM_CACHE_HOME $HELM_CONFIG_HOME $HELM_DATA_HOME $HELM_REPOSITORY_CACHE" \\
             "$HELM_REPOSITORY_CONFIG $HELM_REGISTRY_CONFIG $HELM_CONTENT_CACHE $HELM_PLUGINS" >> "$LOG"; echo v3.22.0 ;;
  template) echo "$1 $HELM_CACHE_HOME $HELM_CONFIG_HOME $HELM_DATA_HOME $HELM_REPOSITORY_CACHE" \\
              "$HELM_REPOSITORY_CONFIG $HELM_REGISTRY_CONFIG $HELM_CONTENT_CACHE $HELM_PLUGINS" >> "$LOG"
            cat "$HELM_REPOSITORY_CONFIG" "$HELM_REGISTRY_CONFIG" "$HELM_REPOSITORY_CACHE/shop-index.yaml" >> "$LOG"
            printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: settings\\n' ;;
esac
"""


def test_every_helm_command_of_a_run_has_its_own_state_seeded_from_the_hosts_and_removed_after(monkeypatch, tmp_path):
    """helm #30983: runs of many forks share the host's repository cache and registry config. Each run
    gets its own (cache, config, data, repository and registry files) in one directory, with copies of
    the host's repository list, registry logins and the named repository's index; the host's plugins."""
    from types import SimpleNamespace

    from applyset.run.options import HelmSettings, Options

    host = tmp_path / "host"
    (host / "repository").mkdir(parents=True)
    (host / "repositories.yaml").write_text("repositories: [{name: shop}]\n")
    (host / "registry.json").write_text('{"auths": {}}\n')
    (host / "repository" / "shop-index.yaml").write_text("entries: {}\n")
    helm, log = tmp_path / "helm", tmp_path / "log"
    helm.write_text(RECORDING_HELM)
    helm.chmod(0o755)
    monkeypatch.setenv("HOST", str(host))
    monkeypatch.setenv("LOG", str(log))
    monkeypatch.setenv("HELM_CACHE_HOME", str(host / "cache"))  # a host setting the run's state replaces
    monkeypatch.setattr(chart_render, "server_version", lambda client: "v1.33.0")
    chart = Chart(chart="shop/web", release="shop", namespace="shop", lookup=False, binary=str(helm))
    ctx = SimpleNamespace(opts=Options(helm=HelmSettings(chart=chart)), client=None, parent=SimpleNamespace(exists=True),
                          record=None, discovery=Discovery([Resource("", "v1", "ConfigMap", "configmaps", True)]))
    chart_render.render_chart(ctx)
    assert [m.name for m in ctx.rendered] == ["settings"]
    lines = log.read_text().splitlines()
    commands = [line.split() for line in lines if line.startswith(("version ", "template "))]
    assert [c[0] for c in commands] == ["version", "template"]
    root = os.path.dirname(commands[0][1])
    assert os.path.basename(root).startswith("applyset-helm-") and not os.path.exists(root)
    expected = [f"{root}/cache", f"{root}/config", f"{root}/data", f"{root}/cache/repository",
                f"{root}/config/repositories.yaml", f"{root}/config/registry/config.json", f"{root}/cache/content",
                f"{host}/plugins"]
    assert all(c[1:] == expected for c in commands), commands
    assert lines[2:] == ["repositories: [{name: shop}]", '{"auths": {}}', "entries: {}"]
