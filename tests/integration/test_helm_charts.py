"""Helm charts as a source (issue 40, part A): applyset_apply's ``helm`` option renders a chart with
``helm template`` and the cluster's Capabilities, against the real control plane, with helm 3 and
helm 4 (built from their Go modules: helm_bins.py).

The charts: our own (data/charts/shopchart: hooks, a CRD in crds/ and a custom resource of it, a
values switch that removes an object, a template that fails on demand) and two widely used public
charts kept as sources (data/charts/src/README.md: podinfo and ingress-nginx, origin and commit).
The members must be ``helm template``'s non-hook objects for the same values and Capabilities
(rendered here independently, with the server's API versions read by the test); a re-run writes
nothing; a values change prunes exactly what it removes; every chart error is named and writes
nothing; check mode writes nothing; a rollback applies a recorded revision without rendering.
"""

from __future__ import annotations

import http.server
import json
import shutil
import threading
import time
from functools import partial
from pathlib import Path

import pytest
import yaml

from ansible_cli import ansible_env, run_playbook
from helm_bins import HELMS, helm, helm_binaries
from test_history import run, task

CHARTS = Path(__file__).resolve().parent / "data" / "charts"
CRD = "widgets.shop.example.com"  # shopchart's crds/
OWN = CHARTS / "shopchart"
PUBLIC = {
    "podinfo": {"values": {}},
    # ClusterIP: no load balancer here; Ignore: the webhook's backend never runs, and it is cluster-wide.
    "ingress-nginx": {"values": {"controller": {"service": {"type": "ClusterIP"},
                                                "admissionWebhooks": {"failurePolicy": "Ignore"}}}},
}


@pytest.fixture(scope="module", params=HELMS)
def helm_name(request):
    helm_binaries()  # built once (cached), or taken from APPLYSET_TEST_HELM3/4
    return request.param


def served_api_versions(kube) -> list[str]:
    """Every served group/version and group/version/Kind, read from the server by the test itself."""
    versions = [f"{v}" for v in kube.get("/api")["versions"]]
    versions += [v["groupVersion"] for g in kube.get("/apis")["groups"] for v in g["versions"]]
    found = set()
    for gv in versions:
        path = f"/api/{gv}" if "/" not in gv else f"/apis/{gv}"
        found.add(gv)
        found.update(f"{gv}/{r['kind']}" for r in kube.get(path)["resources"] if "/" not in r["name"])
    return sorted(found)


def expected_members(kube, helm_name, chart, release, namespace, values_file=None, is_upgrade=False) -> set:
    """(kind, namespace, name) of helm template's non-hook objects, rendered as the module should."""
    args = ["template", release, str(chart), "--namespace", namespace, "--include-crds",
            "--kube-version", kube.get("/version")["gitVersion"]]
    for api in served_api_versions(kube):
        args += ["--api-versions", api]
    if values_file:
        args += ["--values", str(values_file)]
    if is_upgrade:
        args.append("--is-upgrade")
    objects = [o for o in yaml.safe_load_all(helm(helm_name, *args).stdout) if o]
    cluster_scoped = {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "IngressClass",
                      "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "Namespace"}
    # The charts' CRDs are all in crds/, which are no members (helm.crds: shared by the chart's releases).
    return {(o["kind"], None if o["kind"] in cluster_scoped else o["metadata"].get("namespace", namespace),
             o["metadata"]["name"])
            for o in objects if "helm.sh/hook" not in (o["metadata"].get("annotations") or {})
            and o["kind"] != "CustomResourceDefinition"}


def members(result) -> set:
    return {(o["kind"], o["namespace"], o["name"]) for o in result["objects"]
            if o["action"] in ("created", "configured", "unchanged")}


def pruned(result) -> set:
    return {(o["kind"], o["namespace"], o["name"]) for o in result["objects"] if o["action"] == "pruned"}


def writes(result) -> int:
    return (result.get("requests") or {}).get("writes", 0)


def chart_task(name, register, namespace, helm_name, chart=OWN, check_mode=False, state="present", guard=None,
               **helm_args):
    return task(name, register, check_mode=check_mode, parent="shop", namespace=namespace, state=state,
                **({"guard": guard} if guard else {}),
                helm={"chart": str(chart), "binary": helm_binaries()[helm_name], **helm_args})


@pytest.fixture(autouse=True)
def removed_after(cluster, kube, namespace, tmp_path):
    """The set removed after each test: its cluster-scoped members (the CRD, ingress-nginx's RBAC and
    webhook) would otherwise be another set's for the next test, whose namespace differs."""
    yield
    results, _output = run(cluster, tmp_path, namespace, [
        task("remove", "rm", parent="shop", namespace=namespace, state="absent",
             guard={"allow_prune_kinds": ["CustomResourceDefinition"]})], name="remove")
    assert not results["rm"].get("failed"), results["rm"]
    remove_chart_crd(kube)


def remove_chart_crd(kube, timeout=60.0):
    """shopchart's CRD deleted, as the docs tell a user to (no set deletes it: helm.crds), and gone."""
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD}"
    if kube.get(path) is None:
        return
    kube.delete(path)
    deadline = time.monotonic() + timeout
    while kube.get(path) is not None:
        assert time.monotonic() < deadline, f"{CRD} still there after {timeout}s"
        time.sleep(0.2)


def test_own_chart_install_rerun_values_change_and_rollback(cluster, kube, namespace, tmp_path, helm_name):
    off = tmp_path / "banner-off.yaml"
    off.write_text("banner:\n  enabled: false\n")
    info = {"name": "history", "applyset.kubernetes.applyset_info": {"parent": "shop", "namespace": namespace,
                                                                     "revisions": True}, "register": "info"}
    previewed, output = run(cluster, tmp_path, namespace, [
        chart_task("preview the install", "preview", namespace, helm_name, check_mode=True)], name="preview")
    assert_nothing_written(kube, namespace)
    results, output = run(cluster, tmp_path, namespace, [
        chart_task("install", "install", namespace, helm_name),
        chart_task("again", "again", namespace, helm_name)])
    preview = previewed["preview"]
    install, again = results["install"], results["again"]
    assert not preview.get("failed") and not install.get("failed") and not again.get("failed"), output

    # The preview showed (dry runs only) what the install made: helm template's non-hook objects, CRD first.
    assert members(preview) == members(install)
    expected = expected_members(kube, helm_name, OWN, "shop", namespace)
    assert members(install) == expected
    assert install["applyset"]["chart_crds"]["policy"] == "Create"
    assert set(install["applyset"]["chart_crds"]["created"] + install["applyset"]["chart_crds"]["left"]) == {
        "widgets.shop.example.com"}
    # The preview names the readiness rule of each of the chart's objects (helm template's, not the task's input).
    assert [o["name"] for o in preview["objects"] if not o.get("readiness_rule")] == [], preview["objects"]
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    config = kube.get(f"{base}/shop-config")["data"]
    assert config["deployments"] == "served" and config["kubeMinor"] == kube.get("/version")["minor"].rstrip("+")
    assert config["namespace"] == namespace
    # The pre-install hook ran (the set did not exist); the test hook was left out with a warning.
    assert kube.get(f"{base}/shop-installed")["data"] == {"at": "install"}
    assert any("helm.sh/hook: test" in w for w in install["warnings"]), install["warnings"]

    # A re-run is a no-op; a values change prunes exactly the banner, and runs the upgrade hook.
    assert writes(again) == 0 and not again["changed"], again
    results, output = run(cluster, tmp_path, namespace, [
        chart_task("banner off", "off", namespace, helm_name, values_files=[str(off)], values={"widget": {"size": 5}}),
        info], name="off")
    off_run = results["off"]
    assert not off_run.get("failed"), (off_run, output)
    assert pruned(off_run) == {("ConfigMap", namespace, "shop-banner")}
    assert members(off_run) == expected - {("ConfigMap", namespace, "shop-banner")}
    widget = kube.get(f"/apis/shop.example.com/v1/namespaces/{namespace}/widgets/shop-widget")
    assert widget["spec"] == {"size": 5}
    assert kube.get(f"{base}/shop-upgraded")["data"] == {"at": "upgrade"}

    # The revision records the chart, a digest of the values (never the values) and the helm version.
    listed = results["info"]["applysets"][0]["revisions"]
    chart = listed[-1]["provenance"]["chart"]
    assert (chart["name"], chart["version"], chart["source"]) == ("shopchart", "0.1.0", str(OWN))
    assert chart["values_digest"].startswith("sha256:") and chart["helm_version"].startswith(
        "v3." if helm_name == "helm3" else "v4.")
    assert listed[0]["provenance"]["chart"]["values_digest"] != chart["values_digest"]
    assert "enabled" not in str(listed[-1]["provenance"])

    # rollback_to applies revision 1's recorded objects: the banner and the old widget are back.
    results, output = run(cluster, tmp_path, namespace, [
        task("roll back", "back", parent="shop", namespace=namespace, rollback_to="1")], name="back")
    back = results["back"]
    assert not back.get("failed"), (back, output)
    assert back["revision"] == 3 and members(back) == expected
    assert kube.get(f"{base}/shop-banner")["data"] == {"text": "hello"}
    assert kube.get(f"/apis/shop.example.com/v1/namespaces/{namespace}/widgets/shop-widget")["spec"] == {"size": 3}

    # state: absent with the chart: its pre-delete hook runs, then every member goes.
    results, output = run(cluster, tmp_path, namespace, [
        chart_task("uninstall", "rm", namespace, helm_name, state="absent",
                   guard={"allow_prune_kinds": ["CustomResourceDefinition"]})], name="uninstall")
    assert not results["rm"].get("failed"), (results["rm"], output)
    assert kube.get(f"{base}/shop-deleting")["data"] == {"at": "delete"}
    assert kube.get(f"{base}/shop-config") is None


@pytest.mark.parametrize("chart", sorted(PUBLIC))
def test_public_chart_members_are_helm_templates_objects(cluster, kube, namespace, tmp_path, helm_name, chart):
    values = PUBLIC[chart]["values"]
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    source = CHARTS / "src" / chart
    results, output = run(cluster, tmp_path, namespace, [
        chart_task("install", "install", namespace, helm_name, chart=source, release_name=chart, values=values),
        chart_task("again", "again", namespace, helm_name, chart=source, release_name=chart, values=values),
    ])
    install, again = results["install"], results["again"]
    assert not install.get("failed") and not again.get("failed"), output
    assert members(install) == expected_members(kube, helm_name, source, chart, namespace, values_file)
    assert writes(again) == 0 and not again["changed"], again


@pytest.fixture(scope="module")
def chart_repo(tmp_path_factory):
    """A chart repository on 127.0.0.1 serving shopchart 0.1.0 (helm package and helm repo index)."""
    root = tmp_path_factory.mktemp("repo")
    helm("helm3", "package", str(OWN), "--destination", str(root))
    helm("helm3", "repo", "index", str(root))
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_chart_errors_name_the_chart_and_write_nothing(cluster, kube, namespace, tmp_path, helm_name, chart_repo):
    secret_value = "s3cr3t-value-never-shown"
    broken_chart = tmp_path / "chart"
    shutil.copytree(OWN, broken_chart)
    results, output = run(cluster, tmp_path, namespace, [
        task("no helm", "nohelm", parent="shop", namespace=namespace,
             helm={"chart": str(OWN), "binary": str(tmp_path / "no" / "helm")}),
        chart_task("does not render", "broken", namespace, helm_name, chart=broken_chart,
                   values={"broken": True, "password": secret_value}),
        chart_task("missing values file", "nofile", namespace, helm_name, values_files=[str(tmp_path / "nope.yaml")]),
        chart_task("unreachable repo", "norepo", namespace, helm_name, chart="shopchart", repo="http://127.0.0.1:1"),
        chart_task("no such version", "noversion", namespace, helm_name, chart="shopchart", repo=chart_repo,
                   version="9.9.9"),
        chart_task("from the repository, previewed", "fromrepo", namespace, helm_name, chart="shopchart",
                   repo=chart_repo, version="0.1.0", check_mode=True),
    ])
    expected = {
        "nohelm": ("no helm at", "helm 3.8 or newer"),
        "broken": ("shopchart/templates/broken.yaml", "this chart refuses to render"),
        "nofile": ("nope.yaml", "does not exist"),
        "norepo": ("http://127.0.0.1:1", "helm.repo"),
        "noversion": ("9.9.9", "helm.version"),
    }
    for key, words in expected.items():
        result = results[key]
        assert result.get("failed"), (key, result)
        for word in words:
            assert word in result["msg"], (key, word, result["msg"])
        assert secret_value not in str(result), key
        assert writes(result) == 0, (key, result.get("requests"))
    # Nor in the task's invocation (-vvv): the action plugin carries helm.values hidden.
    assert secret_value not in output
    assert not results["fromrepo"].get("failed"), results["fromrepo"]
    # The CRD of crds/ is no member (helm.crds): the preview says it would be created.
    assert len(members(results["fromrepo"])) == 5 and results["fromrepo"]["applyset"]["chart_crds"]["created"] == [CRD]
    assert_nothing_written(kube, namespace)


def assert_nothing_written(kube, namespace):
    """No parent, no member, no hook, no CRD of the chart."""
    assert not kube.get(f"/api/v1/namespaces/{namespace}/secrets")["items"]
    assert [c["metadata"]["name"] for c in kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]] == [
        "kube-root-ca.crt"]
    crds = kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    assert "widgets.shop.example.com" not in [c["metadata"]["name"] for c in crds]


def test_the_deploy_role_deploys_each_chart_as_its_own_set_before_the_app(
        cluster, kube, namespace, tmp_path, helm_name):
    """deploy_helm_charts: a chart given relative to the playbook, as its own set (parent: its
    release name), beside the app's set of inline objects."""
    shutil.copytree(OWN, tmp_path / "charts" / "shopchart")
    (tmp_path / "off.yaml").write_text("banner:\n  enabled: false\n")
    book = tmp_path / "deploy.yml"
    out = tmp_path / "out.json"
    book.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "roles": [{
        "role": "applyset.kubernetes.deploy", "vars": {
            "deploy_app": "app", "deploy_namespace": namespace, "deploy_wait": False,
            "deploy_definition": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-settings"},
                                   "data": {"a": "1"}}],
            "deploy_helm_charts": [{"chart": "charts/shopchart", "release_name": "shop", "values_files": ["off.yaml"],
                                    "binary": helm_binaries()[helm_name]}]}}],
        "post_tasks": [{"copy": {"content": "{{ {'charts': deploy_helm_results, 'app': deploy_result} | to_nice_json }}",
                                 "dest": str(out), "mode": "0644"}}]}]))
    proc = run_playbook(cluster, book)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(out.read_text())
    chart = results["charts"]["results"][0]
    assert chart["applyset"]["parent"]["name"] == "shop" and ("ConfigMap", namespace, "shop-banner") not in members(chart)
    assert members(chart) == expected_members(kube, helm_name, OWN, "shop", namespace, tmp_path / "off.yaml")
    assert members(results["app"]) == {("ConfigMap", namespace, "app-settings")}


def test_no_value_the_task_gave_is_printed_by_the_role_or_by_helms_messages(
        cluster, kube, namespace, tmp_path, helm_name):
    """The role's chart loop registers no chart (its values) at -v; a chart's failure that formats a value,
    from values or a values file, reaches the task with the value redacted and without helm's --debug hint."""
    given, in_file = "s3cret-of-the-task-7f1e", "s3cret-of-the-file-9c2a"
    shutil.copytree(OWN, tmp_path / "charts" / "shopchart")
    (tmp_path / "refuse.yaml").write_text(f"refuseWith: {in_file}\n")
    out = tmp_path / "out.json"
    role = {"role": "applyset.kubernetes.deploy", "vars": {
        "deploy_app": "app", "deploy_namespace": namespace, "deploy_wait": False,
        "deploy_helm_charts": [{"chart": "charts/shopchart", "release_name": "shop",
                                "values": {"unusedSecret": given}, "binary": helm_binaries()[helm_name]}]}}
    refusals = [chart_task("refuse a value", "given", namespace, helm_name, values={"refuseWith": given}),
                chart_task("refuse a file's value", "in_file", namespace, helm_name,
                           values_files=[str(tmp_path / "refuse.yaml")])]
    (tmp_path / "deploy.yml").write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False, "roles": [role], "post_tasks": refusals + [
            {"copy": {"content": "{{ {'charts': deploy_helm_results, 'given': given, 'in_file': in_file} | to_nice_json }}",
                      "dest": str(out), "mode": "0644"}}]}]))
    proc = run_playbook(cluster, tmp_path / "deploy.yml", env=ansible_env(cluster, ANSIBLE_VERBOSITY="1"))
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    registered = out.read_text()
    assert given not in output and in_file not in output and given not in registered, output
    results = json.loads(registered)
    assert not results["charts"]["results"][0].get("failed"), results["charts"]
    for name in ("given", "in_file"):
        assert results[name]["failed"] and "refusing the admin password <redacted>" in results[name]["msg"], results[name]
        assert "--debug" not in results[name]["msg"]


def test_the_charts_crds_are_shared_by_two_releases_and_kept_when_one_is_removed(
        cluster, kube, namespace, tmp_path, helm_name):
    """shopchart's crds/ CRD, as Helm treats it: created by the first release, used as it is by a second
    release in another namespace (another set), kept when the first is removed (state: absent, no guard
    option needed); it is no member of either set."""
    other = f"{namespace}-b"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        results, output = run(cluster, tmp_path, namespace, [
            chart_task("first", "first", namespace, helm_name),
            chart_task("second", "second", other, helm_name),
            chart_task("remove the first", "removed", namespace, helm_name, state="absent")])
        first, second, removed = results["first"], results["second"], results["removed"]
        assert not first.get("failed") and not second.get("failed") and not removed.get("failed"), output
        assert first["applyset"]["chart_crds"]["created"] == [CRD]
        assert second["applyset"]["chart_crds"] == {"policy": "Create", "created": [], "replaced": [], "left": [CRD],
                                                    "adopted": []}
        crd = kube.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD}")
        assert "applyset.kubernetes.io/part-of" not in (crd["metadata"].get("labels") or {})
        assert kube.get(f"/apis/shop.example.com/v1/namespaces/{namespace}/widgets/shop-widget") is None
        assert kube.get(f"/apis/shop.example.com/v1/namespaces/{other}/widgets/shop-widget")["spec"] == {"size": 3}
        results, output = run(cluster, tmp_path, other, [
            chart_task("remove the second", "removed", other, helm_name, state="absent")], name="second")
        assert not results["removed"].get("failed"), output
        assert kube.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD}") is not None
    finally:
        kube.delete(f"/api/v1/namespaces/{other}")
