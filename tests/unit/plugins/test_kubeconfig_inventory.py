"""The applyset.kubernetes.kubeconfig inventory plugin, through ``ansible-inventory --list``.

It reads only local files, so no cluster is needed; tests/integration/test_fleet.py runs a
real play over hosts it made.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ansible.release import __version__ as ANSIBLE_CORE_VERSION

REPO_ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
SECRETS = ("SUPERSECRETTOKEN", "S0VZREFUQQ==", "Q0VSVERBVEE=", "hunter2")


def kubeconfig(contexts, clusters=None, users=("admin",), current=None) -> str:
    clusters = clusters or {"eu": "https://eu.example:6443", "us": "https://us.example:6443"}
    return json.dumps({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": s, "certificate-authority-data": "Q0FEQVRB"}}
                     for n, s in clusters.items()],
        "users": [{"name": u, "user": {"token": "SUPERSECRETTOKEN", "client-key-data": "S0VZREFUQQ==",
                                       "client-certificate-data": "Q0VSVERBVEE=", "password": "hunter2"}}
                  for u in users],
        "contexts": [{"name": name, "context": dict({"cluster": cluster, "user": "admin"}, **extra)}
                     for name, cluster, extra in contexts],
        "current-context": current or contexts[0][0],
    })


FLEET = kubeconfig([("prod-eu-west", "eu", {"namespace": "shop"}), ("staging-eu-west", "eu", {}),
                    ("prod-us-east", "us", {}), ("kind-old", "us", {})])


def unwrap(value):
    """ansible-inventory marks strings read by a plugin as unsafe (never templated); compare the text."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


def inventory(tmp_path, config: str, env=None, name="fleet.kubeconfig.yml"):
    """Run ansible-inventory --list on the config; returns (rc, parsed output or None, raw output)."""
    source = tmp_path / name
    source.write_text(textwrap.dedent(config).lstrip())
    environ = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    environ.update(ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_INVENTORY_UNPARSED_FAILED="1", **(env or {}))
    proc = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(source), "--list"], capture_output=True,
                          text=True, env=environ, cwd=REPO_ROOT, timeout=120)
    data = unwrap(json.loads(proc.stdout)) if proc.returncode == 0 else None
    return proc.returncode, data, unwrap_lines(proc.stdout + proc.stderr)


def unwrap_lines(text: str) -> str:
    """ansible-core before 2.19 wraps warnings at 80 columns, also after a hyphen; join them again."""
    return re.sub(r"\s*\n\s*", " ", re.sub(r"(?<=-)\n", "", text))


# ansible-core 2.19 keeps the native type of a compose expression's result; before, it is the text.
NATIVE_COMPOSE = tuple(int(part) for part in ANSIBLE_CORE_VERSION.split(".")[:2]) >= (2, 19)


def hosts_of(data, group):
    return data.get(group, {}).get("hosts", [])


def test_one_host_per_context_with_connection_vars_groups_and_no_credentials(tmp_path):
    (tmp_path / "fleet.yaml").write_text(FLEET)
    rc, data, output = inventory(tmp_path, """
        plugin: applyset.kubernetes.kubeconfig
        kubeconfigs: [fleet.yaml]
        exclude_contexts: [kind-*]
        context_pattern: '^(?P<stage>[a-z]+)-(?P<region>[a-z0-9-]+)$'
        keyed_groups:
          - {key: applyset_cluster, prefix: cluster}
        groups:
          canary: applyset_context.startswith('staging')
        compose:
          shop_replicas: "3 if applyset_context_parts.stage == 'prod' else 1"
        """)
    assert rc == 0, output
    assert not any(secret in output for secret in SECRETS)
    hostvars = data["_meta"]["hostvars"]
    assert sorted(hostvars) == ["prod-eu-west", "prod-us-east", "staging-eu-west"]
    eu = hostvars["prod-eu-west"]
    assert eu["applyset_kubeconfig"] == str(tmp_path / "fleet.yaml")
    assert (eu["applyset_context"], eu["applyset_cluster"], eu["applyset_server"], eu["applyset_namespace"]) == (
        "prod-eu-west", "eu", "https://eu.example:6443", "shop")
    assert eu["applyset_context_parts"] == {"stage": "prod", "region": "eu-west"}
    assert eu["ansible_connection"] == "local" and eu["ansible_python_interpreter"] == sys.executable
    replicas = (3, 1) if NATIVE_COMPOSE else ("3", "1")
    assert (eu["shop_replicas"], hostvars["staging-eu-west"]["shop_replicas"]) == replicas
    assert "applyset_namespace" not in hostvars["prod-us-east"]
    assert sorted(hosts_of(data, "kubernetes_clusters")) == sorted(hostvars)
    assert sorted(hosts_of(data, "stage_prod")) == ["prod-eu-west", "prod-us-east"]
    assert hosts_of(data, "region_eu_west") == ["prod-eu-west", "staging-eu-west"]
    assert hosts_of(data, "cluster_us") == ["prod-us-east"]
    assert hosts_of(data, "canary") == ["staging-eu-west"]


def test_a_list_of_files_named_per_entry_and_the_same_context_name_in_each(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(kubeconfig([("local", "eu", {})]))
    rc, data, output = inventory(tmp_path, """
        plugin: applyset.kubernetes.kubeconfig
        kubeconfigs:
          - {path: a.yaml, name: eu-1}
          - {path: b.yaml, name: eu-2}
        """)
    assert rc == 0, output
    assert hosts_of(data, "kubernetes_clusters") == ["eu-1", "eu-2"]
    assert data["_meta"]["hostvars"]["eu-2"]["applyset_kubeconfig"] == str(tmp_path / "b.yaml")

    rc, _data, output = inventory(tmp_path, """
        plugin: applyset.kubernetes.kubeconfig
        kubeconfigs: [a.yaml, b.yaml]
        """)
    assert rc != 0
    assert "two clusters would both be the host local" in output and "b.yaml, context local" in output
    assert "give the kubeconfigs entries a name, or set host_name" in output


def test_a_glob_of_files_one_host_each_named_after_the_file(tmp_path):
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    (fleet / "prod-eu.yaml").write_text(kubeconfig([("admin@eu", "eu", {}), ("other", "us", {})]))
    (fleet / "prod-us.yaml").write_text(kubeconfig([("admin@us", "us", {})]))
    rc, data, output = inventory(tmp_path, """
        plugin: applyset.kubernetes.kubeconfig
        kubeconfigs: [fleet/*.yaml]
        current_context_only: true
        host_name: file
        group: fleet
        """)
    assert rc == 0, output
    hostvars = data["_meta"]["hostvars"]
    assert hosts_of(data, "fleet") == ["prod-eu", "prod-us"]
    assert hostvars["prod-eu"]["applyset_context"] == "admin@eu"


def test_host_name_expression_and_empty_connection_settings(tmp_path):
    (tmp_path / "fleet.yaml").write_text(kubeconfig([("arn:aws:eks:eu-west-1:1:cluster/prod", "eu", {})]))
    rc, _data, output = inventory(tmp_path, """
        plugin: applyset.kubernetes.kubeconfig
        kubeconfigs: [fleet.yaml]
        """)
    assert rc != 0 and "which host patterns cannot address" in output and "host_name" in output
    rc, data, output = inventory(tmp_path, """
        plugin: applyset.kubernetes.kubeconfig
        kubeconfigs: [fleet.yaml]
        host_name: "context.split('/')[-1] ~ '-' ~ cluster"
        connection: ""
        python_interpreter: ""
        """)
    assert rc == 0, output
    assert data["_meta"]["hostvars"] == {"prod-eu": {
        "applyset_kubeconfig": str(tmp_path / "fleet.yaml"), "applyset_context": "arn:aws:eks:eu-west-1:1:cluster/prod",
        "applyset_cluster": "eu", "applyset_server": "https://eu.example:6443"}}


def test_default_files_come_from_kubeconfig_like_kubectl(tmp_path):
    (tmp_path / "one.yaml").write_text(kubeconfig([("one", "eu", {})]))
    (tmp_path / "two.yaml").write_text(kubeconfig([("two", "us", {}), ("one", "us", {})]))
    rc, data, output = inventory(tmp_path, "plugin: applyset.kubernetes.kubeconfig\n",
                                 env={"KUBECONFIG": f"{tmp_path / 'one.yaml'}{os.pathsep}{tmp_path / 'two.yaml'}",
                                      "HOME": str(tmp_path)})
    # "one" is in both files: as with any two files, the host name must be made unique.
    assert rc != 0 and "two clusters would both be the host one" in output
    rc, data, output = inventory(tmp_path, "plugin: applyset.kubernetes.kubeconfig\nexclude_contexts: [one]\n",
                                 env={"KUBECONFIG": str(tmp_path / "two.yaml")})
    assert rc == 0 and list(data["_meta"]["hostvars"]) == ["two"]
    # AWX: the credential's file is elsewhere when the job runs; the hosts keep only their context.
    rc, data, output = inventory(tmp_path, "plugin: applyset.kubernetes.kubeconfig\nset_kubeconfig: false\n",
                                 env={"KUBECONFIG": str(tmp_path / "one.yaml")})
    assert rc == 0 and "applyset_kubeconfig" not in data["_meta"]["hostvars"]["one"]
    assert data["_meta"]["hostvars"]["one"]["applyset_context"] == "one"


@pytest.mark.parametrize("files, config, message", [
    ({}, "kubeconfigs: [missing.yaml]", "missing.yaml (kubeconfigs entry 1) does not exist"),
    ({"bad.yaml": "clusters: [\n  token: SUPERSECRETTOKEN\n"}, "kubeconfigs: [bad.yaml]",
     "bad.yaml cannot be read: not valid YAML"),
    ({"list.yaml": "- a\n"}, "kubeconfigs: [list.yaml]", "is not a kubeconfig"),
    ({"k.yaml": kubeconfig([("x", "nowhere", {})])}, "kubeconfigs: [k.yaml]",
     "uses the cluster nowhere, which the file does not define"),
    ({"k.yaml": kubeconfig([("x", "eu", {"user": "ghost"})])}, "kubeconfigs: [k.yaml]",
     "uses the user ghost, which the file does not define"),
    ({"k.yaml": kubeconfig([("x", "eu", {}), ("y", "eu", {})])}, "kubeconfigs: [{path: k.yaml, name: one}]",
     "a name fits one context"),
    ({"k.yaml": kubeconfig([("x", "eu", {})])}, "kubeconfigs: [{path: k.yaml, nmae: one}]", "unknown keys nmae"),
    ({"k.yaml": kubeconfig([("x", "eu", {})])}, "kubeconfigs: [k.yaml]\ncontext_pattern: '^(x'",
     "not a valid regular expression"),
    ({"k.yaml": kubeconfig([("x", "eu", {})])}, "kubeconfigs: [k.yaml]\ncontext_pattern: '^x$'", "no named group"),
    ({"k.yaml": kubeconfig([("x", "eu", {})], current="none")}, "kubeconfigs: [k.yaml]\ncurrent_context_only: true",
     "has no current-context"),
])
def test_bad_sources_fail_with_the_file_and_the_fix_and_never_show_credentials(tmp_path, files, config, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    rc, _data, output = inventory(tmp_path, "plugin: applyset.kubernetes.kubeconfig\n" + config + "\n")
    assert rc != 0
    assert message in " ".join(output.split()), output
    assert not any(secret in output for secret in SECRETS)


def test_the_example_fleet_inventory_and_its_per_cluster_variables(tmp_path):
    """playbooks/fleet.kubeconfig.yml over a kubeconfig, with the example's group_vars and host_vars."""
    (tmp_path / "fleet.yaml").write_text(FLEET)
    environ = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    environ.update(ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_INVENTORY_UNPARSED_FAILED="1",
                   KUBECONFIG=str(tmp_path / "fleet.yaml"))

    def host(name):
        proc = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(REPO_ROOT / "playbooks" / "fleet.kubeconfig.yml"),
                               "--playbook-dir", str(REPO_ROOT / "playbooks"), "--host", name],
                              capture_output=True, text=True, env=environ, cwd=REPO_ROOT, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return unwrap(json.loads(proc.stdout))

    us, eu, staging = host("prod-us-east"), host("prod-eu-west"), host("staging-eu-west")
    assert (us["shop_currency"], us["shop_max_connections"]) == ("USD", 500)  # host_vars, group_vars/stage_prod
    assert (eu["shop_currency"], eu["shop_max_connections"]) == ("EUR", 500)
    assert (staging["shop_currency"], staging["shop_max_connections"]) == ("EUR", 100)  # the fleet's defaults
    proc = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(REPO_ROOT / "playbooks" / "fleet.kubeconfig.yml"),
                           "--graph", "canary"], capture_output=True, text=True, env=environ, cwd=REPO_ROOT)
    assert proc.returncode == 0 and "staging-eu-west" in proc.stdout and "prod-" not in proc.stdout
