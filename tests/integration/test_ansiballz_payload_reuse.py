"""The module's AnsiballZ payload, built once (plugins/plugin_utils/ansiballz_cache.py), under
ansible-playbook as users run it.

A copy of the collection (found through ANSIBLE_COLLECTIONS_PATH), its own HOME and local tmp: a run
with the cache turned off keeps nothing; the next run builds the payload ("ANSIBALLZ: Creating module"
in ANSIBLE_DEBUG's output) and keeps it; the run after takes it ("using cached module") and gives the
same result. After a module_utils file of the copy changes, the next run builds again and runs the
new code.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap

from ansible_cli import BIN, CALLBACK_PLUGINS, REPO_ROOT, ansible_env

BUILT = "ANSIBALLZ: Creating module"
REUSED = "ANSIBALLZ: using cached module: "
PAYLOAD = "ansible_collections.applyset.kubernetes.plugins.modules.applyset_apply-"
# Appended to the copy's redact.py: every result of the module then says it ran the edited code.
EDIT = textwrap.dedent("""

    _unedited_hide_secret_data = hide_secret_data


    def hide_secret_data(value):
        hidden = _unedited_hide_secret_data(value)
        if isinstance(value, dict) and "summary" in value:  # the module's result
            hidden["payload_edit"] = "seen"
        return hidden
    """)


def project(tmp_path, namespace):
    collection = tmp_path / "collections" / "ansible_collections" / "applyset" / "kubernetes"
    for part in ("plugins", "meta"):
        shutil.copytree(REPO_ROOT / part, collection / part, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "home").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "deploy.yml").write_text(textwrap.dedent(f"""\
        - hosts: localhost
          gather_facts: false
          tasks:
            - name: Apply one ConfigMap
              applyset.kubernetes.applyset_apply:
                parent: payload-cache
                namespace: {namespace}
                definition: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: settings}}, data: {{a: "1"}}}}
        """))
    return collection


def run(cluster, tmp_path, **extra_env):
    """One ansible-playbook run of deploy.yml; returns (ANSIBLE_DEBUG output, the task's result)."""
    env = ansible_env(cluster, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_DEBUG="1",
                      ANSIBLE_LOCAL_TEMP=str(tmp_path / "local-tmp"), HOME=str(tmp_path / "home"),
                      ANSIBLE_CALLBACK_PLUGINS=str(CALLBACK_PLUGINS), ANSIBLE_CALLBACKS_ENABLED="result_file",
                      APPLYSET_RESULT_DIR=str(tmp_path / "results"), **{"APPLYSET_ANSIBALLZ_CACHE": "true", **extra_env})
    proc = subprocess.run([str(BIN / "ansible-playbook"), str(tmp_path / "deploy.yml")], capture_output=True,
                          text=True, timeout=300, env=env, cwd=REPO_ROOT)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    result = json.loads((tmp_path / "results" / "localhost").read_text())
    return output, result


def built(output):
    """Whether the run built applyset_apply's payload (and did not take it from a cache)."""
    reused = any(REUSED in line and PAYLOAD in line for line in output.splitlines())
    assert (BUILT in output) != reused, "one of building and reusing, for the one module of the run"
    return BUILT in output


def outcome(result):
    return result["changed"], result["summary"], [(o["kind"], o["name"], o["action"]) for o in result["objects"]]


def test_the_payload_is_built_once_reused_by_the_next_run_and_rebuilt_when_module_utils_change(
        cluster, kube, namespace, tmp_path):
    collection = project(tmp_path, namespace)
    kept = tmp_path / "local-tmp" / "applyset-ansiballz"

    output, created = run(cluster, tmp_path, APPLYSET_ANSIBALLZ_CACHE="false")
    assert built(output) and created["summary"]["created"] == 1 and not kept.exists()

    output, first = run(cluster, tmp_path)
    assert built(output) and first["summary"]["unchanged"] == 1
    [entry] = kept.iterdir()
    assert [p.name for p in entry.iterdir() if p.name.startswith(PAYLOAD)]

    output, second = run(cluster, tmp_path)
    assert not built(output) and outcome(second) == outcome(first) and "payload_edit" not in second

    with open(collection / "plugins" / "module_utils" / "applyset" / "inputs" / "redact.py", "a") as redact:
        redact.write(EDIT)
    output, edited = run(cluster, tmp_path)
    assert built(output) and edited["payload_edit"] == "seen" and outcome(edited) == outcome(first)
    assert len(list(kept.iterdir())) == 2
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/settings")["data"] == {"a": "1"}
