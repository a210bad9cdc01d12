"""inputs.helm_chart: helm template's command line, its version check, its errors and its output (pure)."""

import io
import tarfile

import pytest

from applyset.errors import InputError
from applyset.inputs import helm_chart
from applyset.inputs.helm_chart import Chart
from applyset.kube.discovery import Resource

CHART = Chart(chart="./shop", release="shop", namespace="prod")


def test_the_command_line_gives_helm_what_helm_install_would_know():
    args = helm_chart.template_args(
        Chart(chart="ingress-nginx", release="edge", namespace="ingress", repo="https://repo.example", version="4.1.0",
              values_files=("a.yaml", "b.yaml")),
        kube_version="v1.34.4", apis=["apps/v1", "apps/v1/Deployment"], is_upgrade=True, values_file="/tmp/v.yaml")
    assert args == ["template", "edge", "ingress-nginx", "--namespace", "ingress", "--repo", "https://repo.example",
                    "--version", "4.1.0", "--kube-version", "v1.34.4", "--api-versions", "apps/v1",
                    "--api-versions", "apps/v1/Deployment", "--include-crds", "--is-upgrade",
                    "--values", "a.yaml", "--values", "b.yaml", "--values", "/tmp/v.yaml"]


def test_a_first_install_without_crds_or_values_asks_for_neither():
    args = helm_chart.template_args(Chart(chart="./c", release="r", namespace=None, include_crds=False),
                                    kube_version="v1.30.0", apis=[], is_upgrade=False, values_file=None)
    assert args == ["template", "r", "./c", "--kube-version", "v1.30.0"]


def test_api_versions_are_each_group_version_and_group_version_kind_once():
    resources = [Resource("apps", "v1", "Deployment", "deployments", True),
                 Resource("apps", "v1", "StatefulSet", "statefulsets", True),
                 Resource("", "v1", "ConfigMap", "configmaps", True),
                 Resource("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True)]
    assert helm_chart.api_versions(resources) == [
        "apps/v1", "apps/v1/Deployment", "apps/v1/StatefulSet", "autoscaling/v2",
        "autoscaling/v2/HorizontalPodAutoscaler", "v1", "v1/ConfigMap"]


@pytest.mark.parametrize("text,version", [("v3.22.0", (3, 22, 0)), ("v4.3.1", (4, 3, 1)), ("v3.8.0", (3, 8, 0)),
                                          ("v3.22", (3, 22, 0))])
def test_helm_3_8_and_newer_are_taken(text, version):
    assert helm_chart.check_version(text, "/usr/bin/helm") == version


@pytest.mark.parametrize("text", ["v3.7.2", "v2.17.0", "", "Error: unknown flag: --template"])
def test_an_older_helm_or_no_version_is_refused_naming_what_works(text):
    with pytest.raises(InputError) as err:
        helm_chart.check_version(text, "/opt/helm")
    assert "helm 3.8 or newer" in str(err.value) and "helm.binary" in str(err.value)


def test_output_is_split_per_document_keeping_the_source_line_and_dropping_empty_ones():
    text = ("---\n# Source: shop/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\n"
            "---\n# Source: shop/templates/empty.yaml\n"
            "---\n# Source: shop/templates/b.yaml\napiVersion: v1\nkind: Secret\n")
    assert helm_chart.split_output(text) == [
        "# Source: shop/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\n",
        "# Source: shop/templates/b.yaml\napiVersion: v1\nkind: Secret\n"]


@pytest.mark.parametrize("stderr,fix", [
    ('Error: execution error at (shop/templates/x.yaml:3:4): boom', "correct the chart"),
    ('Error: looks like "http://127.0.0.1:1" is not a valid chart repository or cannot be reached: '
     'Get "http://127.0.0.1:1/index.yaml": dial tcp 127.0.0.1:1: connect: connection refused', "check helm.repo"),
    ('Error: chart "shop" version "9.9.9" not found in http://r repository', "check helm.version"),
    ("Error: path \"./nope\" not found", "check helm.chart"),
])
def test_helms_failure_names_the_chart_and_the_fix(stderr, fix):
    err = helm_chart.render_error(CHART, stderr)
    assert err.obj == "chart ./shop" and fix in err.fix and "nothing was changed" in err.fix
    assert stderr.removeprefix("Error: ") in str(err)


def test_the_long_api_versions_list_is_left_out_of_helms_message():
    err = helm_chart.render_error(CHART, "Error: failed: helm template --api-versions v1 --api-versions apps/v1 x")
    assert "--api-versions" not in str(err)


def test_a_missing_values_file_is_named(tmp_path):
    present = tmp_path / "here.yaml"
    present.write_text("a: 1\n")
    chart = Chart(chart="./c", release="r", namespace=None, values_files=(str(present), str(tmp_path / "gone.yaml")))
    problems = helm_chart.missing_values_files(chart)
    assert len(problems) == 1 and "gone.yaml" in str(problems[0]) and problems[0].obj == "helm.values_files"


def test_the_values_digest_changes_with_the_values_and_never_holds_them(tmp_path):
    values_file = tmp_path / "v.yaml"
    values_file.write_text("password: hunter2\n")
    one = helm_chart.values_digest(Chart(chart="c", release="r", namespace=None, values_files=(str(values_file),)))
    two = helm_chart.values_digest(Chart(chart="c", release="r", namespace=None, values_files=(str(values_file),),
                                         values={"replicas": 2}))
    assert one != two and one.startswith("sha256:") and "hunter2" not in one


def test_a_local_charts_name_and_version_come_from_its_chart_yaml_in_a_directory_or_tgz(tmp_path):
    chart_yaml = b"apiVersion: v2\nname: shop\nversion: '1.2.3'\n"
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "Chart.yaml").write_bytes(chart_yaml)
    archive = tmp_path / "shop-1.2.3.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("shop/Chart.yaml")
        info.size = len(chart_yaml)
        tar.addfile(info, io.BytesIO(chart_yaml))
    for path in (tmp_path / "shop", archive):
        meta = helm_chart.local_metadata(Chart(chart=str(path), release="r", namespace=None))
        assert meta == {"name": "shop", "version": "1.2.3"}
    remote = Chart(chart="oci://registry.example/charts/shop", release="r", namespace=None, version="2.0.0")
    assert helm_chart.local_metadata(remote) == {"name": "shop", "version": "2.0.0"}


def test_the_provenance_records_the_chart_and_a_digest_never_the_values():
    chart = Chart(chart="podinfo", release="web", namespace="apps", repo="https://stefanprodan.github.io/podinfo",
                  version="6.14.1", values={"secret": "hunter2"})
    recorded = helm_chart.provenance(chart, (4, 3, 1))
    assert recorded["name"] == "podinfo" and recorded["version"] == "6.14.1" and recorded["helm_version"] == "v4.3.1"
    assert recorded["source"] == "podinfo from https://stefanprodan.github.io/podinfo"
    assert "hunter2" not in str(recorded)


HELM_LOOKUP_REFUSED = (
    'Error: template: tomcat/templates/secrets.yaml:19:22: executing "tomcat/templates/secrets.yaml" at <include '
    '"common.secrets.passwords.manage" ...>: error calling lookup: secrets "t-tomcat" is forbidden: User "nobody" '
    'cannot get resource "secrets" in API group "" in the namespace "exp"\n\nUse --debug flag to render out invalid YAML')


def test_a_lookup_the_server_refused_names_the_resource_and_both_fixes():
    err = helm_chart.render_error(CHART, HELM_LOOKUP_REFUSED)
    assert 'looks up secrets in namespace "exp", which User "nobody" may not get' in err.message
    assert "grant the task's user get and list on secrets" in err.fix and "helm.lookup: false" in err.fix
    cluster_wide = 'nodes is forbidden: User "u" cannot list resource "nodes" in API group "" at the cluster scope'
    assert "looks up nodes cluster-wide" in helm_chart.render_error(CHART, cluster_wide).message
    crd = 'widgets.shop.example.com is forbidden: User "u" cannot list resource "widgets" in API group "shop.example.com"'
    assert "looks up widgets.shop.example.com cluster-wide" in helm_chart.render_error(CHART, crd).message


def test_server_side_rendering_is_asked_for_and_needs_helm_3_13():
    assert helm_chart.renders_on_server(CHART, (3, 13, 0)) and helm_chart.renders_on_server(CHART, (4, 0, 0))
    assert not helm_chart.renders_on_server(CHART, (3, 12, 9))
    assert not helm_chart.renders_on_server(Chart(chart="./shop", release="shop", namespace="prod", lookup=False),
                                            (3, 22, 0))
    helm3 = helm_chart.ServerRender(kubeconfig="/tmp/k", context="applyset", helm_major=3).args()
    assert helm3 == ["--dry-run=server", "--kubeconfig", "/tmp/k", "--kube-context", "applyset"]
    # helm 4 builds the objects against the cluster: the run validates them and decides ownership itself.
    helm4 = helm_chart.ServerRender(kubeconfig="/tmp/k", context="applyset", helm_major=4).args()
    assert helm4 == helm3 + ["--disable-openapi-validation", "--take-ownership"]


def test_helms_message_has_every_value_the_task_gave_redacted_and_no_debug_hint(tmp_path):
    values_file = tmp_path / "prod.yaml"
    values_file.write_text("db:\n  password: from-the-file\n  port: 5432\n  pin: 12345678\n  tls: true\n")
    chart = Chart(chart="./shop", release="shop", namespace="prod", values={"admin": {"password": "hunter22"}, "x": "no"},
                  values_files=(str(values_file), str(tmp_path / "missing.yaml")))
    assert helm_chart.value_strings(chart) == {"hunter22", "from-the-file", "5432", "12345678"}
    stderr = ("level=WARN msg=\"This chart or one of its subcharts contains CRDs.\"\n"
              "Error: execution error at (shop/templates/x.yaml:2:4): bad password hunter22 (not from-the-file)\n\n"
              "Use --debug flag to render out invalid YAML\n")
    err = helm_chart.render_error(chart, stderr)
    assert err.message == ("helm template of chart ./shop failed: execution error at (shop/templates/x.yaml:2:4): "
                           "bad password <redacted> (not <redacted>)")
    # A value inside a longer one goes with the longer one.
    assert helm_chart.redact_values("key abcdef", {"abc", "abcdef"}) == "key <redacted>"


def sets(*pairs):
    return tuple(helm_chart.SetValue(value, value_type) for value, value_type in pairs)


def test_set_values_follow_every_values_file_as_kubernetes_core_helm_maps_them_and_schema_validation_can_be_skipped():
    chart = Chart(chart="./c", release="r", namespace=None, include_crds=False, skip_schema_validation=True,
                  set_values=sets(("a.b=1", "raw"), ("tag=0012", "string"), ('list=[1,2]', "json"), ("cert=/c.pem", "file")))
    args = helm_chart.template_args(chart, kube_version="v1.30.0", apis=[], is_upgrade=False, values_file="/tmp/v.yaml")
    assert args == ["template", "r", "./c", "--kube-version", "v1.30.0", "--values", "/tmp/v.yaml",
                    "--set", "a.b=1", "--set-string", "tag=0012", "--set-json", "list=[1,2]", "--set-file", "cert=/c.pem",
                    "--skip-schema-validation"]


@pytest.mark.parametrize("chart, version, word", [
    (Chart(chart="c", release="r", namespace=None, skip_schema_validation=True), (3, 15, 4), "3.16 or newer"),
    (Chart(chart="c", release="r", namespace=None, set_values=sets(("a={}", "json"))), (3, 9, 0), "3.10 or newer"),
])
def test_an_option_the_helm_lacks_is_refused_naming_the_version_that_has_it(chart, version, word):
    with pytest.raises(InputError, match=word) as err:
        helm_chart.check_features(chart, version, "/usr/bin/helm")
    assert "helm.binary" in err.value.fix
    helm_chart.check_features(chart, (3, 16, 0), "/usr/bin/helm")
    helm_chart.check_features(Chart(chart="c", release="r", namespace=None), (3, 8, 0), "/usr/bin/helm")


def test_set_values_are_redacted_from_helms_messages_a_files_content_too_and_its_path_kept(tmp_path):
    cert = tmp_path / "cert.pem"
    cert.write_text("BEGIN-secret-cert-END\n")
    chart = Chart(chart="c", release="r", namespace=None, set_values=sets(
        ("db.password=hunter22", "string"), ("a=first-one,b=second-one", "raw"), ('auth={"token": "tok-123"}', "json"),
        (f"tls.cert={cert}", "file")))
    message = f"Error: refusing hunter22, first-one, second-one, tok-123 and BEGIN-secret-cert-END from {cert}"
    error = helm_chart.render_error(chart, message)
    for secret in ("hunter22", "first-one", "second-one", "tok-123", "BEGIN-secret-cert-END"):
        assert secret not in str(error)
    assert str(cert) in str(error)


def test_a_missing_set_file_is_named_and_set_values_change_the_digest_only_when_given(tmp_path):
    chart = Chart(chart="c", release="r", namespace=None, set_values=sets((f"cert={tmp_path / 'gone.pem'}", "file")))
    problems = helm_chart.missing_values_files(chart)
    assert len(problems) == 1 and "gone.pem" in str(problems[0]) and problems[0].obj == "helm.set_values"
    plain = Chart(chart="c", release="r", namespace=None, values={"a": 1})
    assert helm_chart.values_digest(plain) == "sha256:" + __import__("hashlib").sha256(b'{"a": 1}').hexdigest()
    one = helm_chart.values_digest(Chart(chart="c", release="r", namespace=None, values={"a": 1}, set_values=sets(("b=1", "raw"))))
    two = helm_chart.values_digest(Chart(chart="c", release="r", namespace=None, values={"a": 1}, set_values=sets(("b=2", "raw"))))
    assert len({helm_chart.values_digest(plain), one, two}) == 3


def test_relative_file_dependencies_are_made_absolute_for_a_copy_of_the_chart_and_others_kept():
    text = ('dependencies:\n  - name: lib\n    repository: "file://../lib"\n  - repository: file:///abs/x\n'
            '  - name: c\n    repository: https://charts.example\n')
    assert helm_chart.absolute_file_dependencies(text, "/src/charts/app") == text.replace(
        "file://../lib", "file:///src/charts/lib")


def test_a_dependency_missing_from_charts_names_dependency_update_unless_it_was_given():
    stderr = ("Error: An error occurred while checking for chart dependencies. You may need to run `helm dependency "
              "build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: common\n")
    assert "helm.dependency_update: true" in helm_chart.render_error(CHART, stderr).fix
    given = Chart(chart="./shop", release="shop", namespace="prod", dependency_update=True)
    assert "dependency_update" not in helm_chart.render_error(given, stderr).fix


def test_repository_credentials_add_the_repository_with_the_password_on_stdin_and_tls_flags_go_to_template():
    access = helm_chart.RepoAccess(username="charts", password="hunter22", pass_credentials=True, ca_file="/ca.pem",
                                   cert_file="/c.pem", key_file="/c.key", insecure_skip_tls_verify=True)
    assert access.repo_add_args("r", "https://charts.example") == [
        "repo", "add", "r", "https://charts.example", "--ca-file", "/ca.pem", "--cert-file", "/c.pem",
        "--key-file", "/c.key", "--insecure-skip-tls-verify", "--username", "charts", "--password-stdin",
        "--pass-credentials"]
    chart = Chart(chart="web", release="r", namespace=None, repo="https://charts.example", include_crds=False,
                  access=access)
    args = helm_chart.template_args(chart, kube_version="v1.30.0", apis=[], is_upgrade=False, values_file=None)
    assert args[:3] == ["template", "r", f"{helm_chart.RUN_REPO}/web"] and "--repo" not in args
    assert "hunter22" not in args and "--ca-file" in args
    assert "hunter22" not in str(helm_chart.render_error(chart, "Error: 401 for charts:hunter22"))
    plain = Chart(chart="oci://r.example/web", release="r", namespace=None, include_crds=False,
                  access=helm_chart.RepoAccess(plain_http=True))
    assert helm_chart.template_args(plain, kube_version="v1.30.0", apis=[], is_upgrade=False, values_file=None) == [
        "template", "r", "oci://r.example/web", "--plain-http", "--kube-version", "v1.30.0"]
    with pytest.raises(InputError, match="3.13 or newer"):
        helm_chart.check_features(plain, (3, 12, 0), "helm")
