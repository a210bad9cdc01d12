"""Secret data is hidden by structure; only long kubeconfig credentials are masked as text.

The module-level tests run applyset_apply's AnsibleModule set-up on the arguments its action
plugin sends, and look at what Ansible would log (syslog/journal) and echo (invocation).
"""

import base64
import io
import json
import sys
from pathlib import Path

import pytest

from applyset.inputs import redact

REPO_ROOT = Path(__file__).resolve().parents[3]

LONG_PASSWORD = "s3cr3t-Kq9vW2xLm7pZ"


def secret(**string_data):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "stringData": string_data}


POSTGRES = secret(POSTGRES_USER="postgres", POSTGRES_DB="app", PASSWORD="x", LONG=LONG_PASSWORD)
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "postgres"}}


# ----- structural redaction ------------------------------------------------------------------------------------


def test_secret_values_are_hidden_and_keys_and_other_objects_stay_readable():
    result = {"objects": [POSTGRES, DEPLOYMENT], "msg": "Deployment tenant-a/postgres: apps/v1, Fix: x"}
    hidden = redact.hide_secret_data(result)
    assert hidden["objects"][0]["stringData"] == {key: "<hidden>" for key in POSTGRES["stringData"]}
    assert hidden["objects"][0]["metadata"] == {"name": "db"}
    assert hidden["objects"][1] == DEPLOYMENT
    assert hidden["msg"] == result["msg"]  # text is never searched or changed
    assert POSTGRES["stringData"]["PASSWORD"] == "x"  # the input is not modified


def test_data_values_and_nested_secrets_are_hidden_wherever_they_sit():
    data = {"token": base64.b64encode(LONG_PASSWORD.encode()).decode(), "n": 5, "none": None}
    nested = {"a": [{"b": {"apiVersion": "v1", "kind": "Secret", "data": data}}]}
    hidden = redact.hide_secret_data(nested)
    assert hidden["a"][0]["b"]["data"] == {"token": "<hidden>", "n": "<hidden>", "none": "<hidden>"}
    assert LONG_PASSWORD not in json.dumps(hidden) and data["token"] not in json.dumps(hidden)


def test_a_secret_without_apiversion_counts_and_other_kinds_named_secret_do_not():
    assert redact.is_secret({"kind": "Secret", "data": {"k": "v"}})
    assert not redact.is_secret({"apiVersion": "example.com/v1", "kind": "Secret", "data": {"k": "v"}})
    assert not redact.is_secret({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}})


def test_values_the_engine_hid_already_keep_their_digest_and_lookalikes_do_not():
    obj = secret(a="<hidden 3782cbe9f9e2>", b="<hidden>", c="<hidden but not really>")
    assert redact.hide_secret_data(obj)["stringData"] == {"a": "<hidden 3782cbe9f9e2>", "b": "<hidden>",
                                                          "c": "<hidden>"}


# ----- the protected parameter ---------------------------------------------------------------------------------


def test_definition_and_inline_kubeconfig_travel_in_one_text_and_round_trip():
    kubeconfig = {"users": [{"name": "u", "user": {"token": "t" * 20}}]}
    args = {"parent": "p", "definition": [POSTGRES], "kubeconfig": kubeconfig, "src": ["a.yaml"]}
    packed = redact.pack_protected_input(args)
    assert set(packed) == {"parent", "src", redact.PROTECTED_INPUT}
    assert isinstance(packed[redact.PROTECTED_INPUT], str)
    assert redact.unpack_protected_input(packed[redact.PROTECTED_INPUT]) == {
        "definition": [POSTGRES], "kubeconfig": kubeconfig}
    assert "definition" in args  # the task's own arguments are not modified


def test_text_definitions_and_kubeconfig_paths_are_kept_as_given():
    text = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {a: 0o17}\n"
    packed = redact.pack_protected_input({"definition": text, "kubeconfig": "/etc/kube/config"})
    assert packed["kubeconfig"] == "/etc/kube/config"  # a path is not a secret: stays visible
    assert redact.unpack_protected_input(packed[redact.PROTECTED_INPUT]) == {"definition": text}


def test_a_charts_values_travel_hidden_and_the_rest_of_the_helm_option_stays_visible():
    args = {"parent": "p", "helm": {"chart": "./shop", "values": {"db": {"password": "hunter2"}}}}
    packed = redact.pack_protected_input(args)
    assert packed["helm"] == {"chart": "./shop"} and "hunter2" not in str({**packed, redact.PROTECTED_INPUT: ""})
    assert redact.unpack_protected_input(packed[redact.PROTECTED_INPUT]) == {
        "helm_values": {"db": {"password": "hunter2"}}}
    assert args["helm"]["values"]  # the task's own arguments are not modified
    assert redact.pack_protected_input({"helm": {"chart": "c", "values": {}}}) == {"helm": {"chart": "c", "values": {}}}

    with_sets = {"helm": {"chart": "./shop", "values": {"a": 1}, "set_values": [{"value": "db.password=hunter2"}]}}
    packed = redact.pack_protected_input(with_sets)
    assert packed["helm"] == {"chart": "./shop"} and "hunter2" not in str({**packed, redact.PROTECTED_INPUT: ""})
    assert redact.unpack_protected_input(packed[redact.PROTECTED_INPUT]) == {
        "helm_values": {"a": 1}, "helm_set_values": [{"value": "db.password=hunter2"}]}


def test_nothing_to_protect_adds_no_parameter():
    assert redact.pack_protected_input({"parent": "p"}) == {"parent": "p"}
    assert redact.unpack_protected_input(None) == {}


# ----- kubeconfig credentials ----------------------------------------------------------------------------------


def test_every_credential_of_an_inline_kubeconfig_is_found(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("file-token-Rr2mN8qW\n")
    config = {"users": [
        {"name": "a", "user": {"token": "bearer-Tk8sLq2x", "client-key-data": "LS0tLS1CRUdJTiBQUklWQVRF"}},
        {"name": "b", "user": {"username": "admin", "password": "basic-Pw7vNc3z"}},
        {"name": "c", "user": {"auth-provider": {"name": "oidc", "config": {
            "id-token": "oidc-id-Hj4kL9mB", "refresh-token": "oidc-refresh-Ty6uI1oP", "client-id": "kubernetes"}}}},
        {"name": "d", "user": {"exec": {"command": "aws", "env": [
            {"name": "AWS_SECRET_ACCESS_KEY", "value": "aws-secret-Wq3eR5tY"}, {"name": "AWS_PROFILE", "value": "prod"}]}}},
        {"name": "e", "user": {"tokenFile": str(token_file)}},
        {"name": "f", "user": {"tokenFile": str(tmp_path / "missing")}},
    ]}
    assert redact.kubeconfig_secrets(config) == {
        "bearer-Tk8sLq2x", "LS0tLS1CRUdJTiBQUklWQVRF", "basic-Pw7vNc3z", "oidc-id-Hj4kL9mB",
        "oidc-refresh-Ty6uI1oP", "kubernetes", "aws-secret-Wq3eR5tY", "file-token-Rr2mN8qW"}


def test_short_values_are_never_masked_as_text():
    # "admin", "prod" or "x" would mask every equal word of the output; real credentials are long.
    config = {"users": [{"name": "u", "user": {"password": "admin", "token": "short"}}]}
    assert redact.kubeconfig_secrets(config) == set()
    assert redact.maskable(["1234567", "12345678", None, 5]) == {"12345678"}


def test_a_private_key_pasted_where_a_path_belongs_is_masked_but_not_its_armour_lines():
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nAbC\n-----END PRIVATE KEY-----\n"
    assert redact.pasted_private_key(key) == {key, key.strip(), "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"}
    assert redact.pasted_private_key("/etc/kube/client.key") == set()
    assert redact.pasted_private_key(None) == set()


@pytest.mark.parametrize("config", [None, "path", {"users": None}, {"users": ["x", {"user": "y"}]}])
def test_odd_kubeconfigs_have_no_credentials_and_do_not_fail(config):
    assert redact.kubeconfig_secrets(config) == set()


# ----- what the module logs and echoes --------------------------------------------------------------------------


COLLECTIONS = REPO_ROOT / ".state" / "collections"


@pytest.fixture
def module_run(monkeypatch):
    """Set up applyset_apply's AnsibleModule on ``args``; returns (module, logged lines)."""
    if not (COLLECTIONS / "ansible_collections" / "applyset" / "kubernetes").exists():
        pytest.skip("the collection link is missing: run make deps")
    monkeypatch.syspath_prepend(str(COLLECTIONS))
    from ansible.module_utils import basic
    from ansible_collections.applyset.kubernetes.plugins.module_utils.ansible_support import protected_input
    from ansible_collections.applyset.kubernetes.plugins.modules import applyset_apply

    logged = []
    monkeypatch.setattr(basic.AnsibleModule, "log", lambda self, msg, log_args=None: logged.append((msg, log_args)))

    def run(args):
        payload = json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_remote_tmp="/tmp",
                                                          _ansible_keep_remote_files=False)})
        monkeypatch.setattr(basic, "_ANSIBLE_ARGS", payload.encode())
        monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)
        monkeypatch.setattr(sys, "argv", ["applyset_apply"])
        module = basic.AnsibleModule(argument_spec=applyset_apply.argument_spec(), supports_check_mode=True)
        return module, protected_input(module), logged
    return run


def test_the_module_logs_and_echoes_no_secret_and_masks_nothing_ordinary(module_run):
    kubeconfig = {"users": [{"name": "u", "user": {"token": "bearer-Tk8sLq2xVb"}}]}
    args = redact.pack_protected_input({"parent": "postgres", "namespace": "app", "definition": [POSTGRES, DEPLOYMENT],
                                        "kubeconfig": kubeconfig})
    module, (definition, got_kubeconfig), logged = module_run(args)
    assert definition == [POSTGRES, DEPLOYMENT] and got_kubeconfig == kubeconfig
    log_text = json.dumps(logged)
    assert "bearer-Tk8sLq2xVb" not in log_text and LONG_PASSWORD not in log_text
    assert "NOT_LOGGING_PARAMETER" in log_text and "postgres" in log_text
    # Only the whole protected text and the long kubeconfig token are masked as text.
    assert module.no_log_values == {args[redact.PROTECTED_INPUT], "bearer-Tk8sLq2xVb"}
    from ansible.module_utils.common.parameters import remove_values
    shown = remove_values({"msg": "Deployment app/postgres apps/v1 Fix: x", "args": module.params},
                          module.no_log_values)
    assert shown["msg"] == "Deployment app/postgres apps/v1 Fix: x"
    assert shown["args"][redact.PROTECTED_INPUT] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
    assert shown["args"]["definition"] is None and shown["args"]["kubeconfig"] is None


def test_the_visible_definition_still_works_without_the_action_plugin(module_run):
    module, (definition, kubeconfig), _ = module_run({"parent": "p", "definition": [DEPLOYMENT]})
    assert definition == [DEPLOYMENT] and kubeconfig is None
