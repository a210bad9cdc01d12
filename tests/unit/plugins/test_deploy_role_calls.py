"""The deploy role's two applyset_apply calls (one per Helm chart, one for the rest of the app) pass the
same options beyond their input, and every option of the module is either passed by both or named
here with the reason it is not (issue 46: a role option reached plain sets but not chart sets)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.parsing.dataloader import DataLoader

REPO_ROOT = Path(__file__).resolve().parents[3]
COLLECTIONS = REPO_ROOT / ".state" / "collections"
MODULE = "applyset.kubernetes.applyset_apply"

pytestmark = pytest.mark.skipif(not (COLLECTIONS / "ansible_collections" / "applyset" / "kubernetes").exists(),
                                reason="the collection link is missing: run make deps")

# What each call deploys and under which approved plan: the only options the two calls may differ in.
INPUT = {"parent", "src", "definition", "helm", "approved_plan"}

# The module's options that the role leaves at the module's default. A play still sets any of them
# for both calls at once with `module_defaults` (group `applyset.kubernetes.applyset_apply`).
NOT_PASSED = {
    "_protected_input": "internal: set by the action plugin, never by a task",
    "state": "the deploy role applies; roles/uninstall removes",
    "adopt": "taking objects over is a decision per object, not per app",
    "adopt_legacy": "taking objects over is a decision per object, not per app",
    "takeover": "taking a set over from another tool is a one-off migration",
    "rollback_to": "playbooks/rollback.yml rolls back",
    "on_failure": "module default (fail); module_defaults sets rollback for a play",
    "rollback_timeout": "with on_failure, through module_defaults",
    "history_max": "module default; module_defaults",
    "history_namespace": "module default; module_defaults",
    "claim_ttl": "module default; module_defaults",
    "claim_wait": "module default; module_defaults",
    "crd_timeout": "module default; module_defaults",
    "field_manager": "the collection's field manager: a set keeps one manager",
    "field_validation": "module default (Strict, as kubectl); module_defaults",
    "force_conflicts": "module default; module_defaults",
    "ignore_fields": "module default; module_defaults",
    "parallelism": "module default; module_defaults",
    "propagation_policy": "module default; module_defaults",
    "provenance": "module default; module_defaults",
    "client_cert": "connection: K8S_AUTH_CERT_FILE or module_defaults",
    "client_key": "connection: K8S_AUTH_KEY_FILE or module_defaults",
    "proxy": "connection: K8S_AUTH_PROXY or module_defaults",
    "no_proxy": "connection: K8S_AUTH_NO_PROXY or module_defaults",
    "impersonate_user": "connection: K8S_AUTH_IMPERSONATE_USER or module_defaults",
    "impersonate_groups": "connection: K8S_AUTH_IMPERSONATE_GROUPS or module_defaults",
}


def deploy_calls() -> list[dict]:
    """The arguments of the role's applyset_apply tasks, as Ansible loads them (YAML merge keys applied)."""
    tasks = DataLoader().load_from_file(str(REPO_ROOT / "roles" / "deploy" / "tasks" / "main.yml"))
    return [dict(task[MODULE]) for task in tasks if MODULE in task]


def module_spec() -> dict:
    import sys

    sys.path.insert(0, str(COLLECTIONS))
    try:
        from ansible_collections.applyset.kubernetes.plugins.modules import applyset_apply
    finally:
        sys.path.remove(str(COLLECTIONS))
    return applyset_apply.argument_spec()


def test_the_chart_call_and_the_plain_call_pass_the_same_options_beyond_their_input():
    chart, plain = deploy_calls()
    assert "helm" in chart and "helm" not in plain
    beyond = {name: value for name, value in chart.items() if name not in INPUT}
    assert beyond == {name: value for name, value in plain.items() if name not in INPUT}
    # The two that chart sets used to miss.
    assert beyond["failure_logs"] == "{{ deploy_failure_logs }}"
    assert beyond["guard"]["allow_empty"] == "{{ deploy_allow_empty }}"


def test_every_module_option_is_passed_by_both_calls_or_says_why_not():
    spec = module_spec()
    passed = set.union(*(set(call) for call in deploy_calls()))
    unaccounted = sorted(set(spec) - passed - set(NOT_PASSED))
    assert not unaccounted, f"applyset_apply options the deploy role neither passes nor names in NOT_PASSED: {unaccounted}"
    assert not set(NOT_PASSED) & passed, "an option in NOT_PASSED is passed: take it out of NOT_PASSED"
    assert not set(NOT_PASSED) - set(spec), "NOT_PASSED names an option the module no longer has"
    for call in deploy_calls():
        for group in ("guard", "wait_rules"):
            assert set(call[group]) == set(spec[group]["options"]), (group, sorted(call[group]))


def test_every_option_the_calls_template_is_an_option_of_the_role():
    import re

    import yaml

    role = REPO_ROOT / "roles" / "deploy"
    documented = set(yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"])
    used = set(re.findall(r"\bdeploy_[a-z][a-z_]*", repr(deploy_calls())))
    assert used <= documented, f"the calls read role variables that meta/argument_specs.yml does not document: {sorted(used - documented)}"
