"""applyset_apply's options: one table maps the parameters to the run's ``Options``, the values are
checked by ``Options`` alone, before any request, and the early reads still go out before the rules
and the YAML parser are imported (run/early.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
COLLECTIONS = REPO_ROOT / ".state" / "collections"
FQN = "ansible_collections.applyset.kubernetes.plugins"

pytestmark = pytest.mark.skipif(not (COLLECTIONS / "ansible_collections" / "applyset" / "kubernetes").exists(),
                                reason="the collection link is missing: run make deps")


@pytest.fixture
def apply_module(monkeypatch):
    monkeypatch.syspath_prepend(str(COLLECTIONS))
    from ansible_collections.applyset.kubernetes.plugins.modules import applyset_apply

    return applyset_apply


def defaults(spec):
    """The parameters a task that sets none gets, suboptions included."""
    params = {}
    for name, entry in spec.items():
        value = entry.get("default")
        if entry.get("options") and entry.get("type") == "dict" and value is not None:
            value = dict(defaults(entry["options"]), **value)
        params[name] = value
    return params


def test_every_row_names_a_parameter_and_a_field_and_every_field_has_its_source(apply_module):
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.run.options import Options

    spec = apply_module.argument_spec()
    fields = {f.name for f in dataclasses.fields(Options)}
    for parameter, field, _convert in apply_module.OPTIONS:
        outer, _, inner = parameter.partition(".")
        assert inner in spec[outer]["options"] if inner else outer in spec, parameter
        assert field.partition(".")[0] in fields, field
    filled = {field.partition(".")[0] for _parameter, field, _convert in apply_module.OPTIONS}
    # Check mode and diff are no parameter; adopt_legacy and history are made after the early reads;
    # recreate_timeout is no option of the module; the helm fields come from the helm option, which
    # may be absent (helm_options: the release's name defaults to the parent's).
    assert fields - filled == {"dry_run", "diff", "adopt_legacy", "history", "recreate_timeout",
                               "helm"}


def test_helm_fields_only_with_the_helm_option_and_the_release_named_by_the_parent(apply_module):
    assert apply_module.helm_options({"helm": None, "parent": "shop"}, {}) == {}
    take_over = {"release_name": None, "namespace": None, "take_over": True, "chart": None}
    params = {"parent": "configmaps/cache", "helm": take_over}
    settings = apply_module.HelmSettings
    assert apply_module.helm_options(params, {}) == {"helm": settings(release="cache", take_over=True)}
    params = {"parent": {"kind": "Secret", "name": "shop"},
              "helm": dict(take_over, release_name="web", namespace="n", take_over=False)}
    assert apply_module.helm_options(params, {}) == {"helm": settings(release="web", namespace="n")}


def test_the_table_gives_the_options_a_task_without_options_always_got(apply_module):
    from ansible_collections.applyset.kubernetes.plugins.module_utils.ansible_support import options_from

    params = defaults(apply_module.argument_spec())
    assert options_from(params, apply_module.OPTIONS, dry_run=True, diff=False) == dict(
        field_manager="applyset.kubernetes", force_conflicts=False, field_validation="Strict", prune=True,
        propagation_policy="Background", takeover=False, adopt=False,
        guard=dict(allow_empty=False, max_prune_percent=50, allow_prune_kinds=frozenset()), crd_timeout=60.0,
        waiting=dict(enabled=False, timeout=300.0, failure_logs=True,
                     rules=dict(fail_closed=False, overrides=None, wait_for_load_balancers=False)),
        claim_ttl=60.0, claim_wait=120.0, create_namespace=False, recreate_on_immutable=frozenset(),
        reapply="changed", config_digest=False, versioned_keep=3, versioned=(), wait_for_sets=(), ignore_fields=(), approved_plan=None, dry_run=True,
        diff=False)


def test_a_converted_value_keeps_its_type_and_a_suboption_its_place(apply_module):
    from ansible_collections.applyset.kubernetes.plugins.module_utils.ansible_support import options_from

    params = defaults(apply_module.argument_spec())
    params.update(crd_timeout=5, recreate_on_immutable=["Job"],
                  wait_rules=dict(fail_closed=True, overrides={"ConfigMap": "data.ready"}, load_balancers=True))
    made = options_from(params, apply_module.OPTIONS)
    assert made["crd_timeout"] == 5.0 and isinstance(made["crd_timeout"], float)
    assert made["recreate_on_immutable"] == frozenset({"Job"})
    assert made["waiting"]["rules"] == dict(fail_closed=True, overrides={"ConfigMap": "data.ready"},
                                      wait_for_load_balancers=True)


DRIVER = textwrap.dedent("""
    import json, sys
    from ansible.module_utils import basic
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.kube import client as kube
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.run import early
    from ansible_collections.applyset.kubernetes.plugins.modules import applyset_apply

    def stop_at_the_early_reads(*args, **kwargs):
        loaded = sorted(name.rsplit("plugins.", 1)[-1] for name in sys.modules
                        if "applyset.kubernetes" in name or name == "yaml")
        print(json.dumps({"early_reads_with": loaded}))
        sys.exit(0)

    connect = kube.connect
    def connect_once(*args, **kwargs):
        print(json.dumps({"connected": True}))
        return connect(*args, **kwargs)

    early.start = stop_at_the_early_reads
    kube.connect = connect_once
    basic._ANSIBLE_PROFILE = "legacy"
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": dict(json.loads(sys.argv[1]),
        _ansible_remote_tmp="/tmp", _ansible_keep_remote_files=False)}).encode()
    applyset_apply.main()
""")


def run_module(args):
    """applyset_apply's main() in a fresh interpreter, up to its early reads: the JSON lines it printed."""
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS), HOME=str(REPO_ROOT / ".state"))
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(args)], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stderr
    return lines


TASK = {"parent": "shop", "namespace": "shop", "host": "https://127.0.0.1:9", "api_key": "t0ken-for-the-test",
        "definition": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]}


def test_the_early_reads_go_out_before_the_rules_and_the_yaml_parser_are_imported():
    *_, last = run_module(TASK)
    loaded = last["early_reads_with"]
    assert "modules.applyset_apply" in loaded and "module_utils.applyset.run.options" in loaded
    heavy = [name for name in loaded if name == "yaml" or any(
        part in name for part in (".rules", ".wait", ".history", ".kubeyaml", ".steps", ".engine", "manifests"))]
    assert heavy == []


@pytest.mark.parametrize("args, message", [
    ({"guard": {"max_prune_percent": 101}},
     "option guard.max_prune_percent: must be between 0 and 100. Fix: set it to 100 to allow any prune, "
     "or lower to guard more"),
    ({"parallelism": 0}, "option parallelism: must be at least 1, not 0. Fix: set parallelism: 1 or more"),
    ({"claim_wait": -1}, "option claim_wait: must be 0 seconds or more. Fix: set claim_wait to 0 or more"),
    ({"rollback_to": "latest", "definition": None},
     "option rollback_to: must be a revision number or previous, not 'latest'. Fix: list the revisions"),
    ({"rollback_to": "2"}, "option rollback_to: rollback_to applies a revision of the history, not src or"),
])
def test_a_bad_value_fails_the_module_before_it_connects(args, message):
    lines = run_module(dict(TASK, **args))
    assert lines[-1]["failed"] and lines[-1]["changed"] is False and message in lines[-1]["msg"]
    assert lines[-1]["error"]["type"] == "InputError"
    assert {"connected": True} not in lines


def test_the_input_is_read_before_the_early_reads_only_when_it_names_the_readiness_annotations(apply_module, tmp_path):
    # Such an input is read, and its annotations checked, before the first request (issue 45); any
    # other keeps its manifests read while the early reads travel.
    names = apply_module._names_readiness_annotations
    annotated = {"metadata": {"annotations": {"applyset.kubernetes.ansible/ready-when": "status.phase == 'Done'"}}}
    assert names(None, [annotated], {})
    assert names(None, "metadata:\n  annotations:\n    applyset.kubernetes.ansible/failed-when: 'true'\n", {})
    assert not names(None, [{"metadata": {"name": "plain"}}], {})
    (tmp_path / "plain.yaml").write_text("kind: ConfigMap\n")
    assert not names([str(tmp_path)], None, {})
    (tmp_path / "wide.yaml").write_text("x: applyset.kubernetes.ansible/ready-when\n", encoding="utf-16")
    assert names([str(tmp_path)], None, {})
    vaulted = tmp_path / "vaulted.yaml"
    vaulted.write_text("$ANSIBLE_VAULT;1.1;AES256\n")
    (tmp_path / "wide.yaml").unlink()
    assert names([str(vaulted)], None, {os.path.realpath(vaulted): b"applyset.kubernetes.ansible/ready-when: x"})
