"""ansible_support.auth_params on what the modules pass it: parameters validated by AUTH_ARG_SPEC,
with the K8S_AUTH_* fallbacks and aliases resolved by Ansible itself."""

from pathlib import Path

import pytest

COLLECTIONS = Path(__file__).resolve().parents[3] / ".state" / "collections"


@pytest.fixture
def support(monkeypatch):
    if not (COLLECTIONS / "ansible_collections" / "applyset" / "kubernetes").exists():
        pytest.skip("the collection link is missing: run make deps")
    monkeypatch.syspath_prepend(str(COLLECTIONS))
    from ansible_collections.applyset.kubernetes.plugins.module_utils import ansible_support

    for names in ansible_support.AUTH_ENV_VARS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    return ansible_support


def validated(support, params):
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    result = ArgumentSpecValidator(support.auth_arg_spec()).validate(params)
    assert result.error_messages == []
    return result.validated_parameters


def test_only_the_options_that_are_set_by_their_own_names(support):
    params = validated(support, {"kubeconfig": "/k", "verify_ssl": False, "ssl_ca_cert": "/ca", "context": "",
                                 "host": "https://h:6443/"})
    assert support.auth_params(params) == {"kubeconfig": "/k", "validate_certs": False, "ca_cert": "/ca",
                                           "host": "https://h:6443"}


def test_environment_fallbacks_arrive_converted(support, monkeypatch):
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "no")
    monkeypatch.setenv("K8S_AUTH_IMPERSONATE_GROUPS", "ops, ,dev")
    monkeypatch.setenv("K8S_AUTH_API_KEY", "")
    assert support.auth_params(validated(support, {})) == {"validate_certs": False,
                                                           "impersonate_groups": ["ops", "dev"]}


def test_a_kubeconfig_mapping_and_blank_groups(support):
    mapping = {"clusters": []}
    params = validated(support, {"kubeconfig": mapping, "impersonate_groups": [" ", ""]})
    assert support.auth_params(params) == {"kubeconfig": mapping}
