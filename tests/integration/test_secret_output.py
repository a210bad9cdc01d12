"""Secret data never reaches any output, and nothing else is ever masked (issue #19 point 1, #13 point 1).

One playbook deploys Secrets given inline (stringData with the short, ordinary values of the
issue, POSTGRES_USER: postgres, PASSWORD: x, and long random ones; and data), from a file
(src) and from a template, next to a Deployment named postgres; previews a change in check
mode; fails on purpose on a Secret; and reads the set back with applyset_info and
applyset_verify. It runs at -vvv --diff on the command line and through ansible-runner (as
AWX runs it, every job event kept). No Secret value, as written or base64-encoded, may
appear anywhere; the ordinary words must appear as they are.

Then each inline kubeconfig form (a bearer token, client certificate and key data, a basic
auth password) is used at -vvv; its credential must not appear anywhere either.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_cli import BIN, REPO_ROOT, ansible_env
from kubectl_parity import KUBECTL

ansible_runner = pytest.importorskip("ansible_runner")

# What Ansible writes for a no_log value: exactly eight asterisks (banners have long runs).
MASKED = re.compile(r"(?<!\*)\*{8}(?!\*)")


def random_value(label):
    return f"{label}-{secrets.token_urlsafe(24)}"


def forms(values):
    """Each value as written and base64-encoded (how data holds it and the API returns it)."""
    found = set()
    for value in values:
        found |= {value, base64.b64encode(value.encode()).decode()}
    return found


def leaks(text, values):
    return sorted(v for v in forms(values) if v in text)


def b64(text):
    return base64.b64encode(text.encode()).decode()


def deployment(name):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels}, "spec": {"containers": [{"name": name, "image": "postgres:16"}]}}}}


def write_playbook(tmp_path, namespace, values):
    """The playbook, its src file and its template; Secret values inline in the playbook text too."""
    (tmp_path / "secret-file.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "from-file"},
        "stringData": {"PEM": values["file"]}}))
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "secret.yaml.j2").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: from-template\n"
        "stringData:\n  API_TOKEN: \"{{ api_token }}\"\n  DB_HOST: postgres\n")
    postgres = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "postgres"},
                "stringData": {"POSTGRES_USER": "postgres", "POSTGRES_DB": "app", "PASSWORD": "x",
                               "LONG_PASSWORD": values["inline"]}}
    encoded = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "encoded"},
               "data": {"KEY": b64(values["data"])}}
    changed = dict(postgres, stringData=dict(postgres["stringData"], LONG_PASSWORD=values["preview"]))
    bad = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"}, "unknownField": True,
           "stringData": {"PASSWORD": values["failing"]}}
    base = {"parent": "set1", "namespace": namespace}
    deploy = dict(base, src=["secret-file.yaml"],
                  definition=[postgres, encoded, deployment("postgres"),
                              "{{ lookup('ansible.builtin.template', 'secret.yaml.j2') }}"])
    tasks = [
        {"name": "deploy", "applyset.kubernetes.applyset_apply": deploy, "register": "deployed"},
        {"name": "show the registered result", "ansible.builtin.debug": {"var": "deployed"}},
        {"name": "preview a change", "check_mode": True, "register": "preview",
         "applyset.kubernetes.applyset_apply": dict(deploy, definition=[changed, encoded, deployment("postgres"),
                                                                        "{{ lookup('ansible.builtin.template', 'secret.yaml.j2') }}"])},
        {"name": "fail on a Secret", "ignore_errors": True,
         "applyset.kubernetes.applyset_apply": dict(base, parent="set2", definition=[bad])},
        {"name": "read the set", "register": "info",
         "applyset.kubernetes.applyset_info": dict(base, full_objects=True)},
        {"name": "show the set", "ansible.builtin.debug": {"var": "info"}},
        # Problems are reported, not failed on: other sessions may add CRDs to the shared cluster meanwhile.
        {"name": "verify the set", "applyset.kubernetes.applyset_verify": dict(base, fail_on_problems=False)},
    ]
    # A template is named by its text: keep the list item a string, not a parsed mapping.
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False,
                                         "vars": {"api_token": values["template"]}, "tasks": tasks}],
                                       sort_keys=False))
    return playbook


@pytest.fixture(scope="module")
def secret_values():
    return {label: random_value(label) for label in ("inline", "data", "file", "template", "preview", "failing")}


def check_output(text, namespace, values):
    """What every output of the playbook must and must not hold."""
    assert leaks(text, values.values()) == []
    assert MASKED.findall(text) == []  # nothing at all was masked as text
    assert f"Deployment {namespace}/postgres" in text  # diff header, readable
    assert '"name": "postgres"' in text
    assert "apps/v1" in text and "applyset" in text and '"POSTGRES_USER"' in text
    assert "Fix:" in text  # the failing task's message: "x" masked nothing
    assert "<hidden" in text  # Secret data is shown as hidden, by structure


def test_secret_values_never_reach_the_vvv_output(cluster, kube, namespace, tmp_path, secret_values):
    playbook = write_playbook(tmp_path, namespace, secret_values)
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-vvv", "--diff", str(playbook)],
                          capture_output=True, text=True, timeout=600, env=ansible_env(cluster), cwd=tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-5000:]
    assert "ok=7" in output and "ignored=1" in output, output[-3000:]
    check_output(output, namespace, secret_values)
    assert '"_protected_input": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"' in output  # the invocation
    # Every value really was applied, so the test proves hiding and not absence.
    live = {name: kube.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")["data"]
            for name in ("postgres", "encoded", "from-file", "from-template")}
    assert base64.b64decode(live["postgres"]["LONG_PASSWORD"]).decode() == secret_values["inline"]
    assert base64.b64decode(live["postgres"]["PASSWORD"]).decode() == "x"
    assert base64.b64decode(live["encoded"]["KEY"]).decode() == secret_values["data"]
    assert base64.b64decode(live["from-file"]["PEM"]).decode() == secret_values["file"]
    assert base64.b64decode(live["from-template"]["API_TOKEN"]).decode() == secret_values["template"]
    assert kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/postgres") is not None


def test_secret_values_never_reach_awx_job_events(cluster, kube, namespace, tmp_path, secret_values):
    playbook = write_playbook(tmp_path, namespace, secret_values)
    (tmp_path / "job").mkdir()
    run = ansible_runner.run(
        private_data_dir=str(tmp_path / "job"), project_dir=str(tmp_path), playbook=str(playbook),
        inventory=f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
        envvars=dict(ansible_env(cluster)), cmdline="--diff", verbosity=3,
        process_isolation=False, quiet=True, timeout=600)
    stdout = run.stdout.read()
    assert (run.status, run.rc) == ("successful", 0), stdout[-5000:]
    check_output(stdout, namespace, secret_values)
    events = list(run.events)
    everything = json.dumps(events)
    assert leaks(everything, secret_values.values()) == []
    assert MASKED.findall(everything) == []
    results = [e["event_data"]["res"] for e in events if e.get("event") in ("runner_on_ok", "runner_on_failed")
               and str(e["event_data"].get("resolved_action", "")).startswith("applyset.kubernetes.")]
    assert len(results) == 5
    deployed = results[0]
    assert {o["name"] for o in deployed["objects"]} == {"postgres", "encoded", "from-file", "from-template"}
    assert deployed["invocation"]["module_args"]["definition"] is None  # it travelled hidden
    # Every artifact the runner wrote to disk (job events, stdout) is clean too.
    for path in (tmp_path / "job").rglob("*"):
        if path.is_file():
            assert leaks(path.read_text(errors="replace"), secret_values.values()) == [], path


# ----- inline kubeconfig, each auth form --------------------------------------------------------------------------


def admin_kubeconfig(cluster) -> dict:
    return yaml.safe_load(Path(cluster.kubeconfig).read_text())


def with_user(config, user):
    config = json.loads(json.dumps(config))
    name = config["contexts"][0]["context"]["user"]
    config["users"] = [{"name": name, "user": user}]
    config["current-context"] = config["contexts"][0]["name"]
    return config


@pytest.fixture
def sa_token(kube, namespace):
    """A ServiceAccount token (a JWT) allowed everything: applyset_verify reads cluster-wide."""
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "deployer"}})
    binding = f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{namespace}-deployer"
    kube.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{namespace}-deployer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": namespace}]})
    yield kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/deployer/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}})["status"]["token"]
    kube.delete(binding)


def run_with_inline_kubeconfig(cluster, namespace, tmp_path, config):
    """apply, info and verify at -vvv --diff, the kubeconfig coming from an extra-vars file (a vault)."""
    extra_vars = tmp_path / "vars.json"
    extra_vars.write_text(json.dumps({"inline_config": config}))
    base = {"kubeconfig": "{{ inline_config }}", "parent": "set1", "namespace": namespace}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "fast"}}
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "apply", "applyset.kubernetes.applyset_apply": dict(base, definition=[cm])},
        {"name": "info", "applyset.kubernetes.applyset_info": base},
        {"name": "verify", "applyset.kubernetes.applyset_verify": dict(base, fail_on_problems=False)},
    ]}]))
    # No kubeconfig anywhere else: only the inline one can authenticate.
    env = ansible_env(cluster, KUBECONFIG=str(tmp_path / "no-such-kubeconfig"))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-vvv", "--diff", "-e", f"@{extra_vars}", str(playbook)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    return proc, proc.stdout + proc.stderr


def test_inline_kubeconfig_bearer_token_is_never_shown(cluster, kube, namespace, tmp_path, sa_token):
    token = sa_token
    proc, output = run_with_inline_kubeconfig(
        cluster, namespace, tmp_path, with_user(admin_kubeconfig(cluster), {"token": token}))
    assert proc.returncode == 0, output[-5000:]
    assert token not in output and token.split(".")[-1] not in output
    assert output.count('"kubeconfig": null') == 3  # the invocation of each module
    assert output.count('"_protected_input": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"') == 3
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/settings") is not None


def test_inline_kubeconfig_client_key_data_is_never_shown(cluster, kube, namespace, tmp_path):
    config = admin_kubeconfig(cluster)
    user = config["users"][0]["user"]
    if "client-key-data" not in user:
        pytest.skip("the test cluster's kubeconfig has no client-key-data")
    proc, output = run_with_inline_kubeconfig(cluster, namespace, tmp_path, config)
    assert proc.returncode == 0, output[-5000:]
    key_pem = base64.b64decode(user["client-key-data"]).decode()
    key_body = "".join(line for line in key_pem.splitlines() if "-----" not in line)
    assert user["client-key-data"] not in output
    assert key_body[:40] not in output and key_body[-40:] not in output
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/settings") is not None


def test_inline_kubeconfig_basic_password_is_never_shown(cluster, kube, namespace, tmp_path):
    # The API server has no basic authentication since Kubernetes 1.19: the request counts as
    # anonymous and is refused, and the password must not show in that failure either.
    password = random_value("basic")
    proc, output = run_with_inline_kubeconfig(cluster, namespace, tmp_path, with_user(
        admin_kubeconfig(cluster), {"username": "deployer", "password": password}))
    assert proc.returncode != 0
    assert "TASK [apply]" in output, output[-3000:]
    assert 'User \\"system:anonymous\\" cannot get path' in output, output[-3000:]
    assert leaks(output, [password]) == []
    assert b64(f"deployer:{password}") not in output  # the Authorization header's content


# ----- async and poll (issue #19 point 5) -------------------------------------------------------------------------


def test_three_sets_run_in_parallel_with_async_and_check_mode_works_under_async(
        cluster, kube, namespace, tmp_path, secret_values):
    """poll: 0 starts three sets at once, async_status collects them; a check-mode preview and a
    plain poll run under async too. The async job files hold no Secret value either."""
    def parent_task(number, **extra):
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"creds-{number}"},
                  "stringData": {"PASSWORD": secret_values["inline"], "USER": "postgres"}}
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"settings-{number}"},
              "data": {"set": f"set-{number}"}}
        return dict({"applyset.kubernetes.applyset_apply": {
            "parent": f"set{number}", "namespace": namespace, "definition": [secret, cm]}}, **extra)

    tasks = [
        {"name": "start three sets", "loop": [1, 2, 3], "async": 300, "poll": 0, "register": "started",
         **{k: v for k, v in parent_task("{{ item }}").items()}},
        {"name": "collect them", "ansible.builtin.async_status": {"jid": "{{ item.ansible_job_id }}"},
         "loop": "{{ started.results }}", "register": "finished", "until": "finished is finished",
         "retries": 120, "delay": 1},
        {"name": "every set was applied", "ansible.builtin.assert": {"that": [
            "finished.results | map(attribute='summary.created') | list == [2, 2, 2]",
            "finished.results | map(attribute='changed') | list == [true, true, true]"]}},
        {"name": "keep the collected results", "ansible.builtin.copy": {
            "dest": str(tmp_path / "finished.json"), "content": "{{ finished.results | to_json }}"}},
        dict(parent_task(4), name="preview under async", check_mode=True, register="preview",
             **{"async": 300, "poll": 1}),
        {"name": "the preview wrote nothing", "ansible.builtin.assert": {"that": [
            "preview.summary.created == 2", "preview is changed"]}},
        dict(parent_task(1), name="poll until done", register="again", **{"async": 300, "poll": 2}),
        {"name": "nothing to do the second time", "ansible.builtin.assert": {"that": [
            "again.summary.unchanged == 2", "again is not changed"]}},
        {"name": "info under async", "applyset.kubernetes.applyset_info": {"namespace": namespace},
         "register": "info", "async": 120, "poll": 1},
        {"name": "verify under async", "applyset.kubernetes.applyset_verify": {"namespace": namespace,
                                                                         "fail_on_problems": False},
         "register": "verified", "async": 120, "poll": 1},
        {"name": "info and verify saw the three sets", "ansible.builtin.assert": {"that": [
            "info.applysets | length == 3", "verified.applysets | length == 3"]}},
    ]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}],
                                       sort_keys=False))
    async_dir = tmp_path / "async"
    env = ansible_env(cluster, ANSIBLE_ASYNC_DIR=str(async_dir))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-vvv", str(playbook)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-5000:]
    assert "does not support async" not in output
    finished = json.loads((tmp_path / "finished.json").read_text())
    assert [sorted(o["name"] for o in r["objects"]) for r in finished] == [
        [f"creds-{n}", f"settings-{n}"] for n in (1, 2, 3)]
    for number in (1, 2, 3):
        parent = kube.get(f"/api/v1/namespaces/{namespace}/secrets/set{number}")
        assert parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap,Secret"
        assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/settings-{number}") is not None
    # Check mode under async wrote nothing, not even the parent.
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set4") is None
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/settings-4") is None
    assert leaks(output, [secret_values["inline"]]) == []
    assert MASKED.findall(output) == []
    job_files = [path for path in async_dir.rglob("*") if path.is_file()]
    assert job_files
    for path in job_files:
        assert leaks(path.read_text(errors="replace"), [secret_values["inline"]]) == [], path


# ----- the audit role -----------------------------------------------------------------------------------------------


def test_audit_role_with_an_inline_kubeconfig_writes_no_secret_anywhere(cluster, kube, namespace, tmp_path,
                                                                          secret_values):
    """A set with a Secret parent and Secret members, audited with the admin kubeconfig given
    inline (its client-key-data is a credential) at -vvv: neither the key nor any Secret value
    reaches the output or the report files."""
    config = admin_kubeconfig(cluster)
    key_data = config["users"][0]["user"].get("client-key-data")
    members = [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
                "stringData": {"PASSWORD": secret_values["inline"], "USER": "postgres"}},
               {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "encoded"},
                "data": {"KEY": b64(secret_values["data"])}}]
    extra_vars = tmp_path / "vars.json"
    extra_vars.write_text(json.dumps({"inline_config": config, "members": members}))
    report_dir = tmp_path / "reports"
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "deploy", "applyset.kubernetes.applyset_apply": {
            "kubeconfig": "{{ inline_config }}", "parent": "postgres", "namespace": namespace,
            "definition": "{{ members }}"}},
        {"name": "audit", "ansible.builtin.include_role": {"name": "applyset.kubernetes.audit"}, "vars": {
            "audit_kubeconfig": "{{ inline_config }}", "audit_namespace": namespace,
            "audit_output_dir": str(report_dir)}},
    ]}]))
    env = ansible_env(cluster, KUBECONFIG=str(tmp_path / "no-such-kubeconfig"))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-vvv", "-e", f"@{extra_vars}", str(playbook)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-5000:]
    reports = {path.name: path.read_text() for path in report_dir.iterdir()}
    assert sorted(reports) == ["applyset-audit.html", "applyset-audit.json", "applyset-audit.md"]
    assert f"{namespace}/postgres" in reports["applyset-audit.md"], reports["applyset-audit.md"]
    for text in [output, *reports.values()]:
        assert leaks(text, [secret_values["inline"], secret_values["data"]]) == []
        if key_data:
            assert key_data not in text and key_data[-60:] not in text
    assert MASKED.findall(output) == []


def test_a_tagged_secret_value_that_does_not_fit_is_never_quoted(cluster, kube, namespace, tmp_path):
    """``stringData: {p: !!int hunter2}``: kubectl refuses it quoting the value (cannot decode !!str
    `hunter2` as a !!int); the module refuses it too, naming the file, line, tag and fix, not the value.
    Given as a file (src) and as inline text (definition), at -vvv."""
    bad = tmp_path / "bad-secret.yaml"
    bad.write_text("apiVersion: v1\nkind: Secret\nmetadata:\n  name: tagged\n"
                   "stringData:\n  user: admin\n  p: !!int hunter2\n")
    kubectl = subprocess.run([KUBECTL, "apply", "--server-side", "--dry-run=server", "-n", namespace,
                              f"--kubeconfig={cluster.kubeconfig}", "-f", str(bad)],
                             capture_output=True, text=True, timeout=120)
    assert kubectl.returncode != 0 and "cannot decode !!str" in kubectl.stderr, kubectl.stderr
    assert "hunter2" in kubectl.stderr  # what we must not do; if kubectl stops quoting it, fine too
    base = {"parent": "tagged", "namespace": namespace}
    tasks = [
        {"name": "from a file", "ignore_errors": True, "register": "from_file",
         "applyset.kubernetes.applyset_apply": dict(base, src=[str(bad)])},
        {"name": "inline text", "ignore_errors": True, "register": "inline",
         "applyset.kubernetes.applyset_apply": dict(base, definition="{{ lookup('file', 'bad-secret.yaml') }}")},
        {"name": "show both", "ansible.builtin.debug": {"msg": "{{ [from_file, inline] }}"}},
    ]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}],
                                       sort_keys=False))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-vvv", str(playbook)],
                          capture_output=True, text=True, timeout=600, env=ansible_env(cluster), cwd=tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "ignored=2" in output, output[-5000:]
    assert "hunter2" not in output
    refusal = "YAML syntax error at line 7, column 6: cannot decode !!str (7 characters, not shown) as a !!int"
    assert f"{bad}: {refusal}" in output  # the file
    assert f"definition: {refusal}" in output  # the inline text
    assert "drop the !!int tag (quote the value to keep it as text), or write an integer there" in output
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/tagged") is None  # refused before any write
