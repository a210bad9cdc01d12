"""Vault-encrypted manifests and kubeconfigs, through ansible-playbook as users run it (issue 26, point 2).

A directory holds a Secret manifest encrypted whole with ``ansible-vault encrypt``, a plain
ConfigMap and a Secret with a ``!vault`` value (``ansible-vault encrypt_string``); the playbook
deploys it with ``--vault-password-file`` at -vvv, with a vaulted kubeconfig file. The Secrets
must hold the plain values on the cluster, and no value may appear in the output. Without the
password the task fails naming the file, and nothing is created.
"""

from __future__ import annotations

import base64
import secrets
import subprocess
import textwrap
from pathlib import Path

from ansible_cli import BIN, ansible_env


def vault(tmp_path, *args, text=None):
    """Run ansible-vault with the test's password file; returns its standard output."""
    proc = subprocess.run([str(BIN / "ansible-vault"), *args, "--vault-password-file", str(tmp_path / "vault-pass")],
                          capture_output=True, text=True, input=text, check=True, cwd=tmp_path)
    return proc.stdout


def write_project(tmp_path, cluster, namespace, values):
    (tmp_path / "vault-pass").write_text(secrets.token_urlsafe(16) + "\n")
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "10-config.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: plain, namespace: {namespace}}}
        data: {{greeting: hello}}
        """))
    (manifests / "20-secret.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: v1
        kind: Secret
        metadata: {{name: whole-file, namespace: {namespace}}}
        stringData: {{password: {values["file"]}}}
        """))
    vault(tmp_path, "encrypt", "manifests/20-secret.yaml")
    encrypted = vault(tmp_path, "encrypt_string", "--stdin-name", "token", text=values["value"])
    (manifests / "30-value.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: v1
        kind: Secret
        metadata: {{name: tagged-value, namespace: {namespace}}}
        stringData:
        """) + textwrap.indent(encrypted, "  "))
    kubeconfig = tmp_path / "cluster.kubeconfig"
    kubeconfig.write_text(Path(cluster.kubeconfig).read_text())
    vault(tmp_path, "encrypt", kubeconfig.name)
    (tmp_path / "deploy.yml").write_text(textwrap.dedent(f"""\
        - hosts: localhost
          gather_facts: false
          tasks:
            - name: Deploy the vaulted manifests
              applyset.kubernetes.applyset_apply:
                parent: vaulted
                namespace: {namespace}
                kubeconfig: cluster.kubeconfig
                src: manifests/
        """))


def run(tmp_path, cluster, *options):
    env = ansible_env(cluster)
    env.pop("KUBECONFIG")  # the vaulted kubeconfig is the only way to the cluster
    return subprocess.run([str(BIN / "ansible-playbook"), "deploy.yml", *options], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)


def secret_value(kube, namespace, name, key):
    secret = kube.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
    return base64.b64decode(secret["data"][key]).decode() if secret else None


def test_vaulted_manifests_and_kubeconfig_deploy_and_no_value_is_printed(tmp_path, cluster, kube, namespace):
    values = {"file": f"file-{secrets.token_urlsafe(18)}", "value": f"value-{secrets.token_urlsafe(18)}"}
    write_project(tmp_path, cluster, namespace, values)

    proc = run(tmp_path, cluster, "--vault-password-file", "vault-pass", "-vvv", "--diff")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert secret_value(kube, namespace, "whole-file", "password") == values["file"]
    assert secret_value(kube, namespace, "tagged-value", "token") == values["value"]
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/plain")["data"] == {"greeting": "hello"}
    for value in values.values():
        assert value not in output and base64.b64encode(value.encode()).decode() not in output
    # Nor any credential of the vaulted kubeconfig (its client key data), nor the files' plaintext.
    assert "client-key-data" not in output and "BEGIN" not in output
    # Pipelined: the module and its arguments were not written to a temporary file (-vvv shows a PUT).
    assert "AnsiballZ_applyset_apply.py" not in output
    assert '"_protected_input": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"' in output

    again = run(tmp_path, cluster, "--vault-password-file", "vault-pass")
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout + again.stderr


def test_a_vaulted_file_without_the_password_fails_naming_it_and_creates_nothing(tmp_path, cluster, kube, namespace):
    values = {"file": f"file-{secrets.token_urlsafe(18)}", "value": f"value-{secrets.token_urlsafe(18)}"}
    write_project(tmp_path, cluster, namespace, values)
    # The kubeconfig is plain here, so that the manifest is what lacks its password.
    (tmp_path / "cluster.kubeconfig").write_text(Path(cluster.kubeconfig).read_text())

    proc = run(tmp_path, cluster, "-vvv")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    shown = tmp_path / "manifests" / "20-secret.yaml"
    assert (f"file {shown}: the file is encrypted with Ansible Vault, and no vault password was given. Fix: give "
            "ansible-playbook the vault password: --ask-vault-pass, --vault-password-file FILE or --vault-id "
            "LABEL@SOURCE") in output
    assert "AnsiballZ_applyset_apply.py" not in output  # the module never ran
    for kind, name in (("configmaps", "plain"), ("secrets", "whole-file"), ("secrets", "tagged-value"),
                       ("secrets", "vaulted")):
        assert kube.get(f"/api/v1/namespaces/{namespace}/{kind}/{name}") is None

    (tmp_path / "vault-pass").write_text("not the password\n")
    wrong = run(tmp_path, cluster, "--vault-password-file", "vault-pass")
    assert wrong.returncode == 2
    assert f"file {shown}: the file is encrypted with Ansible Vault, and none of the vault passwords given " \
           "decrypts it." in wrong.stdout + wrong.stderr
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/plain") is None
