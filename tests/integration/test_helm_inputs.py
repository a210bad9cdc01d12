"""Inputs kubernetes.core.helm users migrate with (issue 47, deliver 5), against the real control
plane with helm 3 and helm 4 (helm_bins.py): each run's own helm state.

helm keeps its repository cache, repository list and registry logins under the user's home, which
every fork of a fleet run shares (helm #30983). A run here gives every helm command a directory of
its own, removed at its end: a run of a chart from a repository leaves nothing in the HOME it is given.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from ansible_cli import ansible_env, run_playbook
# chart_repo, helm_name and removed_after (autouse: the chart's CRD removed after each test) are fixtures.
from test_helm_charts import OWN, chart_repo, chart_task, helm_name, members, removed_after, writes  # noqa: F401
from test_history import play, run


def run_with_home(cluster, tmp_path, namespace, tasks, home: Path, tmpdir: Path):
    """The play run with ``home`` as HOME and ``tmpdir`` as TMPDIR, and no XDG directory given, so
    that helm's default state would be in ``home``; Ansible's own files go elsewhere."""
    book, out = tmp_path / "play.yml", tmp_path / "play.json"
    book.write_text(yaml.safe_dump(play(namespace, tasks, out), sort_keys=False))
    env = {k: v for k, v in ansible_env(cluster).items() if not k.startswith(("XDG_", "HELM_"))}
    env.update(HOME=str(home), TMPDIR=str(tmpdir), ANSIBLE_HOME=str(tmp_path / "ansible-home"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), ANSIBLE_REMOTE_TEMP=str(tmp_path / "ansible-tmp"),
               APPLYSET_BYTECODE_CACHE="false")
    proc = run_playbook(cluster, book, env=env)
    assert out.exists(), proc.stdout + proc.stderr
    return json.loads(out.read_text()), proc.stdout + proc.stderr


def test_a_run_keeps_its_helm_state_to_itself_and_leaves_nothing_in_home(
        cluster, namespace, tmp_path, helm_name, chart_repo):
    home, tmpdir = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmpdir.mkdir()
    results, output = run_with_home(cluster, tmp_path, namespace, [
        chart_task("from the repository", "install", namespace, helm_name, chart="shopchart", repo=chart_repo,
                   version="0.1.0"),
        chart_task("again, previewed", "preview", namespace, helm_name, chart="shopchart", repo=chart_repo,
                   version="0.1.0", check_mode=True)], home, tmpdir)
    assert not results["install"].get("failed") and not results["preview"].get("failed"), output
    assert len(members(results["install"])) == 5
    assert not results["preview"]["changed"], results["preview"]
    # helm downloaded the repository's index and the chart: into the run's own directory, gone after.
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == []
    assert [p.name for p in tmpdir.iterdir() if p.name.startswith("applyset-")] == []


SCHEMA = {"$schema": "https://json-schema.org/draft-07/schema#", "type": "object",
          "properties": {"banner": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 12}}}}}


def test_set_values_of_each_type_and_schema_validation_skipped(cluster, kube, namespace, tmp_path, helm_name):
    """set_values as kubernetes.core.helm takes them (--set, --set-string, --set-json, --set-file), after
    values; the chart's values.schema.json refuses a long banner text unless skip_schema_validation; a
    value given this way is shown nowhere, neither in helm's messages nor in the invocation."""
    chart = tmp_path / "chart"
    shutil.copytree(OWN, chart)
    (chart / "values.schema.json").write_text(json.dumps(SCHEMA))
    text_file = tmp_path / "banner.txt"
    text_file.write_text("from-a-file")
    secret = "set-s3cret-never-shown"
    banner = f"/api/v1/namespaces/{namespace}/configmaps/shop-banner"
    results, _ = run(cluster, tmp_path, namespace, [
        chart_task("each type", "typed", namespace, helm_name, chart=chart, values={"banner": {"text": "values"}},
                   set_values=[{"value": 'banner={"enabled": true, "text": "json"}', "value_type": "json"},
                               {"value": "replicas=2"}, {"value": "banner.text=0012", "value_type": "string"}])],
        name="typed")
    assert not results["typed"].get("failed"), results["typed"]
    assert kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/shop-web")["spec"]["replicas"] == 2
    assert kube.get(banner)["data"]["text"] == "0012"
    results, _ = run(cluster, tmp_path, namespace, [
        chart_task("from a file", "file", namespace, helm_name, chart=chart,
                   set_values=[{"value": f"banner.text={text_file}", "value_type": "file"}])], name="file")
    assert not results["file"].get("failed"), results["file"]
    assert kube.get(banner)["data"]["text"] == "from-a-file"
    results, output = run(cluster, tmp_path, namespace, [
        chart_task("too long for the schema", "schema", namespace, helm_name, chart=chart,
                   set_values=[{"value": "banner.text=longer-than-twelve"}]),
        chart_task("schema skipped", "skipped", namespace, helm_name, chart=chart, skip_schema_validation=True,
                   set_values=[{"value": "banner.text=longer-than-twelve"}]),
        chart_task("refused", "refused", namespace, helm_name, chart=chart,
                   set_values=[{"value": f"refuseWith={secret}", "value_type": "string"}]),
    ])
    schema = results["schema"]
    assert schema.get("failed") and "schema" in schema["msg"].lower() and writes(schema) == 0, schema
    assert not results["skipped"].get("failed"), results["skipped"]
    assert kube.get(banner)["data"]["text"] == "longer-than-twelve"
    refused = results["refused"]
    assert refused.get("failed") and "refusing the admin password <redacted>" in refused["msg"], refused
    assert secret not in str(refused) and secret not in output


def write_chart(root: Path, name: str, dependencies: str = "") -> Path:
    chart = root / name
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n{dependencies}")
    (chart / "templates" / "config.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-" + name + "\ndata:\n  chart: "
        + name + "\n")
    return chart


def test_a_file_dependency_is_fetched_into_a_copy_with_dependency_update_and_named_without(
        cluster, kube, namespace, tmp_path, helm_name):
    charts = tmp_path / "charts"
    write_chart(charts, "lib")
    app = write_chart(charts, "app", "dependencies:\n  - name: lib\n    version: 0.1.0\n"
                                     "    repository: \"file://../lib\"\n")
    before = sorted(str(p.relative_to(app)) for p in app.rglob("*"))
    results, output = run(cluster, tmp_path, namespace, [
        chart_task("without dependency_update", "without", namespace, helm_name, chart=app),
        chart_task("with dependency_update", "with", namespace, helm_name, chart=app, dependency_update=True),
        chart_task("again, by its alias", "again", namespace, helm_name, chart=app, dep_up=True)])
    without = results["without"]
    assert without.get("failed") and "lib" in without["msg"] and "dependency_update" in str(without), without
    assert writes(without) == 0
    assert not results["with"].get("failed"), results["with"]
    assert members(results["with"]) == {("ConfigMap", namespace, "shop-app"), ("ConfigMap", namespace, "shop-lib")}
    assert not results["again"].get("failed") and writes(results["again"]) == 0, results["again"]
    # helm dependency update wrote into the run's copy: the user's chart directory is as it was.
    assert sorted(str(p.relative_to(app)) for p in app.rglob("*")) == before


def tls_files(root: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (helm checks the IP SAN) and its key, made by the unit
    tests' tls_material."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tls_material", Path(__file__).parents[1] / "unit" / "tls_material.py")
    material = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(material)
    cert, key = material.self_signed("chart-repo", ips=("127.0.0.1",))
    cert_file, key_file = root / "repo.crt", root / "repo.key"
    cert_file.write_bytes(cert)
    key_file.write_bytes(key)
    return cert_file, key_file


REPO_USER, REPO_PASSWORD = "charts", "repo-passw0rd-never-shown"


@pytest.fixture(scope="module")
def private_repo(tmp_path_factory):
    """A chart repository over TLS with basic auth on 127.0.0.1 serving shopchart 0.1.0: (url, CA file)."""
    import base64
    import http.server
    import ssl
    import threading
    from functools import partial

    from helm_bins import helm

    root = tmp_path_factory.mktemp("private-repo")
    served = root / "served"
    served.mkdir()
    helm("helm3", "package", str(OWN), "--destination", str(served))
    helm("helm3", "repo", "index", str(served))
    cert_file, key_file = tls_files(root)
    expected = "Basic " + base64.b64encode(f"{REPO_USER}:{REPO_PASSWORD}".encode()).decode()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="charts"')
                self.end_headers()
                return
            super().do_GET()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(served)))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_address[1]}", str(cert_file)
    server.shutdown()


def test_a_chart_from_a_repository_with_basic_auth_over_tls(cluster, namespace, tmp_path, helm_name, private_repo):
    url, ca_file = private_repo
    common = {"chart": "shopchart", "repo": url, "version": "0.1.0", "chart_ca_cert": ca_file}
    results, output = run(cluster, tmp_path, namespace, [
        chart_task("no credentials", "anonymous", namespace, helm_name, **common),
        chart_task("a wrong password", "wrong", namespace, helm_name, repo_username=REPO_USER,
                   repo_password="wrong-passw0rd-never-shown", **common),
        chart_task("with credentials", "install", namespace, helm_name, repo_username=REPO_USER,
                   repo_password=REPO_PASSWORD, **common),
        chart_task("no CA: TLS checks skipped", "insecure", namespace, helm_name, repo_username=REPO_USER,
                   repo_password=REPO_PASSWORD, insecure_skip_tls_verify=True,
                   **{k: v for k, v in common.items() if k != "chart_ca_cert"})])
    for key in ("anonymous", "wrong"):
        assert results[key].get("failed") and writes(results[key]) == 0, results[key]
    assert "401" in results["anonymous"]["msg"] or "unauthorized" in results["anonymous"]["msg"].lower(), results
    assert not results["install"].get("failed"), results["install"]
    assert len(members(results["install"])) == 5
    assert not results["insecure"].get("failed") and writes(results["insecure"]) == 0, results["insecure"]
    for secret in (REPO_PASSWORD, "wrong-passw0rd-never-shown"):
        assert secret not in output and secret not in json.dumps(results)


def test_a_repository_dependency_is_fetched_with_dependency_update(cluster, namespace, tmp_path, helm_name, chart_repo):
    """A dependency from a chart repository (the test's own, chart_repo), fetched into the run's copy and
    the run's own repository cache: the chart directory and HOME's helm state are left as they were."""
    app = write_chart(tmp_path / "charts", "app", "dependencies:\n  - name: shopchart\n    version: 0.1.0\n"
                                                  f"    repository: {chart_repo}\n")
    results, output = run(cluster, tmp_path, namespace, [
        chart_task("without dependency_update", "without", namespace, helm_name, chart=app),
        chart_task("with dependency_update", "with", namespace, helm_name, chart=app, dependency_update=True)])
    assert results["without"].get("failed") and "dependency_update" in str(results["without"]), results["without"]
    assert not results["with"].get("failed"), results["with"]
    assert ("ConfigMap", namespace, "shop-app") in members(results["with"]) and len(members(results["with"])) == 6
    assert not (app / "charts").exists() and not (app / "Chart.lock").exists()
