"""The deploy and uninstall roles, run through ansible-playbook against the real control plane.

One small app is deployed from all three kinds of sources at once (a plain
manifest directory, a Jinja2 template rendered with play variables and a
kustomize directory), previewed with --check --diff (nothing may change),
redeployed with one object removed (pruned), and removed with the uninstall role.
"""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest
from ansible_cli import run_playbook

HAVE_KUBECTL = shutil.which("kubectl") is not None
PART_OF = "applyset.kubernetes.io/part-of"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


@pytest.fixture
def app_dir(tmp_path):
    """A playbook directory holding the app's sources and two playbooks using the roles."""
    write(tmp_path / "plain" / "settings.yaml", """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: settings}
        data: {mode: fast}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: extra}
        data: {note: removed in the second run}
        """)
    write(tmp_path / "templates" / "greeting.yaml.j2", """
        {% for name in greeting_names %}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: greeting-{{ name }}
        data:
          text: "{{ greeting }}, {{ name }}"
        {% endfor %}
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          replicas: {{ web_replicas }}
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec:
              containers: [{name: web, image: nginx:1.27}]
        """)
    write(tmp_path / "kustomize" / "kustomization.yaml", """
        resources: [service.yaml]
        commonLabels: {built-by: kustomize}
        """)
    write(tmp_path / "kustomize" / "service.yaml", """
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        spec:
          selector: {app: web}
          ports: [{port: 80}]
        """)
    kustomize = "[kustomize]" if HAVE_KUBECTL else "[]"
    write(tmp_path / "deploy.yml", f"""
        - name: Deploy the demo app with the deploy role
          hosts: localhost
          gather_facts: false
          vars:
            greeting: Hello
            greeting_names: [ada, bob]
            web_replicas: 2
            plain_files: [plain/]
          roles:
            - role: applyset.kubernetes.deploy
              vars:
                deploy_app: demo
                deploy_namespace: "{{{{ app_namespace }}}}"
                deploy_files: "{{{{ plain_files }}}}"
                deploy_templates: [templates/greeting.yaml.j2]
                deploy_kustomize_dirs: {kustomize}
                deploy_wait_timeout: 120
          post_tasks:
            - name: Save the result for the test
              ansible.builtin.copy:
                content: "{{{{ deploy_result | to_json }}}}"
                dest: "{{{{ result_file }}}}"
                mode: "0600"
              delegate_to: localhost
              check_mode: false
        """)
    write(tmp_path / "audit.yml", """
        - name: Audit the demo app's namespace
          hosts: localhost
          gather_facts: false
          roles:
            - role: applyset.kubernetes.audit
              vars:
                audit_namespace: "{{ app_namespace }}"
                audit_output_dir: "{{ playbook_dir }}/report"
                audit_fail_on_problems: "{{ fail_on_problems | default(false) }}"
        """)
    write(tmp_path / "uninstall.yml", """
        - name: Remove the demo app
          hosts: localhost
          gather_facts: false
          roles:
            - role: applyset.kubernetes.uninstall
              vars:
                uninstall_app: demo
                uninstall_namespace: "{{ app_namespace }}"
                uninstall_wait_timeout: 120
        """)
    return tmp_path


def configmaps(kube, namespace):
    items = kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]
    return {i["metadata"]["name"]: i for i in items if i["metadata"]["name"] != "kube-root-ca.crt"}


def state(kube, namespace):
    """name -> resourceVersion of every object the app could touch, the parent included."""
    found = {}
    for plural in ("configmaps", "secrets", "services"):
        for item in kube.get(f"/api/v1/namespaces/{namespace}/{plural}")["items"]:
            found[f"{plural}/{item['metadata']['name']}"] = item["metadata"]["resourceVersion"]
    return found


def deploy(cluster, app_dir, namespace, check=False, diff=False, **extra_vars):
    result_file = app_dir / "result.json"
    result_file.unlink(missing_ok=True)
    proc = run_playbook(cluster, app_dir / "deploy.yml", check=check, diff=diff,
                        extra_vars={"app_namespace": namespace, "result_file": str(result_file), **extra_vars})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(result_file.read_text()), proc.stdout


def test_deploy_preview_prune_and_uninstall(cluster, kube, namespace, app_dir):
    result, _ = deploy(cluster, app_dir, namespace)
    assert result["changed"] is True
    live = configmaps(kube, namespace)
    assert {"settings", "extra", "greeting-ada", "greeting-bob"} <= set(live)
    assert live["greeting-ada"]["data"]["text"] == "Hello, ada"
    set_id = live["settings"]["metadata"]["labels"][PART_OF]
    assert all(cm["metadata"]["labels"][PART_OF] == set_id for name, cm in live.items())
    if HAVE_KUBECTL:
        service = kube.get(f"/api/v1/namespaces/{namespace}/services/web")
        assert service["metadata"]["labels"]["built-by"] == "kustomize"
        assert service["metadata"]["labels"][PART_OF] == set_id
    # The role waited for readiness: the Deployment's replicas were available when it returned.
    web = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert web["status"].get("availableReplicas") == 2
    parent = kube.get(f"/api/v1/namespaces/{namespace}/secrets/demo")
    assert parent["metadata"]["labels"]["applyset.kubernetes.io/id"] == set_id

    # Preview a change: new template output and a removed file. Nothing may change.
    (app_dir / "plain" / "extra.yaml").write_text("")  # keep the directory non-empty
    settings = app_dir / "plain" / "settings.yaml"
    settings.write_text(settings.read_text().split("---")[0])
    before = state(kube, namespace)
    preview, output = deploy(cluster, app_dir, namespace, check=True, diff=True, greeting="Howdy")
    assert state(kube, namespace) == before
    actions = {o["name"]: o["action"] for o in preview["objects"]}
    assert actions["greeting-ada"] == "configured"
    assert actions["extra"] == "pruned"
    assert "Howdy, ada" in output  # the diff is printed

    # The real run prunes what the preview said it would.
    result, _ = deploy(cluster, app_dir, namespace, greeting="Howdy")
    assert {o["name"]: o["action"] for o in result["objects"]}["extra"] == "pruned"
    live = configmaps(kube, namespace)
    assert "extra" not in live
    assert live["greeting-bob"]["data"]["text"] == "Howdy, bob"

    # The audit writes a report for people and the verify result for machines.
    proc = run_playbook(cluster, app_dir / "audit.yml", extra_vars={"app_namespace": namespace})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    audit = json.loads((app_dir / "report" / "applyset-audit.json").read_text())
    assert audit["scope"]["namespace"] == namespace
    [audited] = audit["applysets"]
    assert audited["parent"]["name"] == "demo" and audited["id"] == set_id
    report = (app_dir / "report" / "applyset-audit.md").read_text()
    assert f"| Secret {namespace}/demo | applyset.kubernetes |" in report
    assert ("**OK**" in report) == audit["ok"]

    proc = run_playbook(cluster, app_dir / "uninstall.yml", extra_vars={"app_namespace": namespace})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert configmaps(kube, namespace) == {}
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/demo") is None
    assert kube.get(f"/api/v1/namespaces/{namespace}/services/web") is None


def test_missing_kubectl_fails_clearly_before_anything_is_applied(cluster, kube, namespace, app_dir):
    result_file = app_dir / "result.json"
    proc = run_playbook(cluster, app_dir / "deploy.yml", extra_vars={
        "app_namespace": namespace, "result_file": str(result_file),
        "deploy_kubectl": str(app_dir / "no-such-kubectl"), "deploy_kustomize_dirs": ["kustomize"]})
    assert proc.returncode != 0
    assert "no-such-kubectl) was not found or does not run" in proc.stdout
    assert configmaps(kube, namespace) == {}
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/demo") is None


def test_bad_role_input_fails_early_with_the_argument_spec(cluster, namespace, app_dir):
    proc = run_playbook(cluster, app_dir / "deploy.yml", extra_vars={
        "app_namespace": namespace, "result_file": str(app_dir / "r.json"), "deploy_max_prune_percent": "many"})
    assert proc.returncode != 0
    assert "deploy_max_prune_percent" in proc.stdout
