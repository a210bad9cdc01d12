"""Vault-encrypted input decrypted on the controller (plugin_utils/vault_input.py, the action plugin):
whole files and !vault values in src, a vaulted kubeconfig, missing and wrong passwords, and what the
module makes of the decrypted bytes (order, names in messages, kubectl's YAML rules)."""

import importlib.util
import json
import os
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
COLLECTIONS = REPO_ROOT / ".state" / "collections"
PASSWORD = b"correct horse battery staple"
SECRET_VALUE = "s3cr3t-Value-9f8e7d"


@pytest.fixture
def collection(monkeypatch):
    if not (COLLECTIONS / "ansible_collections" / "applyset" / "kubernetes").exists():
        pytest.skip("the collection link is missing: run make deps")
    monkeypatch.syspath_prepend(str(COLLECTIONS))
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset import errors
    from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import manifests, redact
    from ansible_collections.applyset.kubernetes.plugins.plugin_utils import vault_input

    return SimpleNamespace(errors=errors, manifests=manifests, redact=redact, vault_input=vault_input)


def loader(*passwords, vault_id="default"):
    """A DataLoader as ansible-playbook makes it with --vault-id / --vault-password-file."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.parsing.vault import VaultSecret

    data_loader = DataLoader()
    data_loader.set_vault_secrets([(vault_id, VaultSecret(password)) for password in passwords])
    return data_loader


def encrypt(plaintext, password=PASSWORD, vault_id=None):
    from ansible.parsing.vault import VaultLib, VaultSecret

    secret = VaultSecret(password)
    return VaultLib([("default", secret)]).encrypt(plaintext.encode() if isinstance(plaintext, str) else plaintext,
                                                   secret, vault_id=vault_id)


def vault_value(plaintext, indent="  ", password=PASSWORD):
    """``!vault |`` and its block, as ansible-vault encrypt_string writes it."""
    lines = encrypt(plaintext, password).decode().splitlines()
    return "!vault |\n" + "".join(f"{indent}{line}\n" for line in lines)


SECRET_YAML = textwrap.dedent(f"""\
    apiVersion: v1
    kind: Secret
    metadata: {{name: db}}
    stringData: {{password: {SECRET_VALUE}}}
    """)


def read(collection, src, contents):
    """What the module loads from ``src`` given the action plugin's decrypted ``contents``."""
    return collection.manifests.load_sources(src, contents=contents)


# ----- whole files --------------------------------------------------------------------------------------------


def test_a_vaulted_file_is_decrypted_in_memory_and_read_by_the_module_under_its_name(collection, tmp_path):
    path = tmp_path / "secret.yaml"
    path.write_bytes(encrypt(SECRET_YAML))
    contents = collection.vault_input.VaultInput(loader(PASSWORD)._vault).src_contents([str(path)])
    assert contents == {os.path.realpath(path): SECRET_YAML.encode()}
    assert list(tmp_path.iterdir()) == [path]  # no decrypted copy anywhere
    [manifest] = read(collection, [str(path)], contents)
    assert manifest.obj["stringData"] == {"password": SECRET_VALUE}
    assert manifest.source == f"{path}, document 1"


def test_without_the_action_plugin_the_module_says_the_file_is_vaulted(collection, tmp_path):
    path = tmp_path / "secret.yaml"
    path.write_bytes(encrypt(SECRET_YAML))
    with pytest.raises(collection.errors.InputErrors) as raised:
        read(collection, [str(path)], None)
    assert f"file {path}: the file is encrypted with Ansible Vault, and it was not decrypted" in str(raised.value)


def test_plain_files_are_not_handed_over_and_keep_being_read_from_disk(collection, tmp_path):
    (tmp_path / "a.yaml").write_text(SECRET_YAML)
    (tmp_path / "b.yaml").write_text("# mentions !vault in a comment only\n" + SECRET_YAML.replace("db", "db2"))
    assert collection.vault_input.VaultInput(loader()._vault).src_contents([str(tmp_path)]) == {}


def test_mixed_plain_and_vaulted_files_in_a_directory_keep_their_order_and_names(collection, tmp_path):
    def configmap(name):
        return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{on: yes}}\n"

    (tmp_path / "10-plain.yaml").write_text(configmap("first"))
    (tmp_path / "20-vaulted.yaml").write_bytes(encrypt(configmap("second") + "---\n" + SECRET_YAML))
    (tmp_path / "30-plain.yml").write_text(configmap("third"))
    (tmp_path / "40-value.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: fourth}\nstringData:\n  password: "
        + vault_value(SECRET_VALUE, indent="    ") + "  user: on\n")
    src = [str(tmp_path) + "/", str(tmp_path / "20-vaulted.yaml")]  # the second entry is read once only
    contents = collection.vault_input.VaultInput(loader(PASSWORD)._vault).src_contents(src)
    assert sorted(contents) == [os.path.realpath(tmp_path / "20-vaulted.yaml"),
                                os.path.realpath(tmp_path / "40-value.yaml")]
    loaded = read(collection, src, contents)
    assert [(m.obj["metadata"]["name"], m.source.removeprefix(str(tmp_path) + "/")) for m in loaded] == [
        ("first", "10-plain.yaml, document 1"), ("second", "20-vaulted.yaml, document 1"),
        ("db", "20-vaulted.yaml, document 2"), ("third", "30-plain.yml, document 1"),
        ("fourth", "40-value.yaml, document 1")]
    # kubectl's YAML rules still hold in a decrypted file and next to a !vault value: "on" is true.
    assert loaded[1].obj["data"] == {"true": True}
    assert loaded[4].obj["stringData"] == {"password": SECRET_VALUE, "user": True}


def test_errors_in_a_decrypted_file_are_those_of_the_plain_file_under_its_name(collection, tmp_path):
    text = SECRET_YAML + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: x\n"
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "broken.yaml").write_text(text)
    path = tmp_path / "broken.yaml"
    path.write_bytes(encrypt(text))
    contents = collection.vault_input.VaultInput(loader(PASSWORD)._vault).src_contents([str(path)])
    with pytest.raises(collection.errors.InputErrors) as raised:
        read(collection, [str(path)], contents)
    with pytest.raises(collection.errors.InputErrors) as plain:
        read(collection, [str(tmp_path / "plain" / "broken.yaml")], None)
    assert f"file {path}: YAML syntax error at line 9, column 1" in str(raised.value)
    assert str(raised.value) == str(plain.value).replace("/plain/", "/")
    assert SECRET_VALUE not in str(raised.value)


# ----- !vault values ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("plaintext", [SECRET_VALUE, "two\nlines\n", 'quote " back\\slash \x00\t\x7f\u0085é😀',
                                       "123", "on", "null", "", "  padded  "])
def test_a_vault_value_becomes_exactly_its_plain_string(collection, tmp_path, plaintext):
    path = tmp_path / "secret.yaml"
    path.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  password: "
                    + vault_value(plaintext, indent="    ") + "  anchored: &pw " + vault_value(plaintext, "    ")
                    + "  alias: *pw\n  flow: [!vault " + json.dumps(encrypt(plaintext).decode()) + "]\n"
                    + "  after: 'line 12'\n")
    contents = collection.vault_input.VaultInput(loader(PASSWORD)._vault).src_contents([str(path)])
    [manifest] = read(collection, [str(path)], contents)
    assert manifest.obj["stringData"] == {"password": plaintext, "anchored": plaintext, "alias": plaintext,
                                          "flow": [plaintext], "after": "line 12"}


def test_lines_after_a_vault_value_keep_their_numbers_in_messages(collection, tmp_path):
    path = tmp_path / "secret.yaml"
    text = ("apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  password: "
            + vault_value(SECRET_VALUE, indent="    ") + "  bad: [unclosed\n")
    path.write_text(text)
    line = text.splitlines().index("  bad: [unclosed") + 1
    contents = collection.vault_input.VaultInput(loader(PASSWORD)._vault).src_contents([str(path)])
    assert contents[os.path.realpath(path)].decode().count("\n") == text.count("\n")
    with pytest.raises(collection.errors.InputErrors) as raised:
        read(collection, [str(path)], contents)
    assert f"YAML syntax error at line {line + 1}" in str(raised.value)


def test_a_vault_value_on_a_mapping_is_refused(collection, tmp_path):
    path = tmp_path / "secret.yaml"
    path.write_text("apiVersion: v1\nkind: Secret\nstringData: !vault\n  password: x\n")
    with pytest.raises(collection.errors.InputError) as raised:
        collection.vault_input.VaultInput(loader(PASSWORD)._vault).src_contents([str(path)])
    assert str(raised.value).startswith(f"file {path}, line 3, column 13: a !vault tag is not on a string.")


# ----- missing or wrong password ------------------------------------------------------------------------------


def refusal(collection, src, *passwords):
    """The error text of decrypting ``src`` with ``passwords``."""
    with pytest.raises(collection.errors.InputError) as raised:
        collection.vault_input.VaultInput(loader(*passwords)._vault).src_contents(src)
    return str(raised.value)


def test_a_vaulted_file_without_a_password_names_the_file_and_the_options(collection, tmp_path):
    path = tmp_path / "secret.yaml"
    path.write_bytes(encrypt(SECRET_YAML))
    assert refusal(collection, [str(tmp_path)]) == (
        f"file {path}: the file is encrypted with Ansible Vault, and no vault password was given. Fix: give "
        "ansible-playbook the vault password: --ask-vault-pass, --vault-password-file FILE or --vault-id "
        "LABEL@SOURCE")


def test_a_wrong_password_says_none_decrypts_it_and_names_the_vault_id(collection, tmp_path):
    path = tmp_path / "secret.yaml"
    path.write_bytes(encrypt(SECRET_YAML, vault_id="prod"))
    assert refusal(collection, [str(path)], b"wrong") == (
        f"file {path}: the file is encrypted with Ansible Vault (vault ID prod), and none of the vault passwords "
        "given decrypts it. Fix: give ansible-playbook the password it was encrypted with: --ask-vault-pass, "
        "--vault-password-file FILE or --vault-id LABEL@SOURCE (for this one: --vault-id prod@SOURCE)")


def test_a_vault_value_without_its_password_names_file_line_and_column(collection, tmp_path):
    path = tmp_path / "secret.yaml"
    path.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  password: "
                    + vault_value(SECRET_VALUE, indent="    ", password=b"other"))
    assert refusal(collection, [str(path)], PASSWORD).startswith(
        f"file {path}, line 5, column 13: the !vault value is encrypted with Ansible Vault, and none of the "
        "vault passwords given decrypts it.")


def test_a_damaged_vault_file_is_named(collection, tmp_path):
    path = tmp_path / "secret.yaml"
    path.write_text("$ANSIBLE_VAULT;1.1;AES256\nnot hex\n")
    assert refusal(collection, [str(path)], PASSWORD).startswith(f"file {path}: the file is not valid Ansible Vault data")


# ----- kubeconfig ---------------------------------------------------------------------------------------------

KUBECONFIG = textwrap.dedent("""\
    apiVersion: v1
    clusters:
    - name: c
      cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.crt}
    users:
    - name: u
      user: {token: a-long-bearer-token-0123456789, client-key: /abs/key.pem, exec: {command: ./bin/auth}}
    contexts:
    - name: x
      context: {cluster: c, user: u}
    current-context: x
    """)


def test_a_vaulted_kubeconfig_becomes_the_inline_mapping_with_paths_as_kubectl_reads_them(collection, tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "kubeconfig.vault").write_bytes(encrypt(KUBECONFIG))
    reader = collection.vault_input.VaultInput(loader(PASSWORD)._vault)
    config = reader.kubeconfig("conf/kubeconfig.vault", str(tmp_path))
    assert config["clusters"][0]["cluster"]["certificate-authority"] == str(tmp_path / "conf" / "ca.crt")
    assert config["users"][0]["user"]["client-key"] == "/abs/key.pem"
    assert config["users"][0]["user"]["exec"]["command"] == str(tmp_path / "conf" / "bin" / "auth")
    assert config["users"][0]["user"]["token"] == "a-long-bearer-token-0123456789"
    packed = collection.redact.pack_protected_input({"kubeconfig": config, "parent": "p"})
    assert "kubeconfig" not in packed and "a-long-bearer-token" not in json.dumps(
        {key: value for key, value in packed.items() if key != collection.redact.PROTECTED_INPUT})


def test_plain_and_missing_kubeconfigs_stay_paths(collection, tmp_path):
    (tmp_path / "plain").write_text(KUBECONFIG)
    reader = collection.vault_input.VaultInput(loader()._vault)
    for value in ("plain", "missing", str(tmp_path / "plain"), "", None, {"clusters": []}):
        assert reader.kubeconfig(value, str(tmp_path)) is None


def test_a_vaulted_kubeconfig_without_its_password_is_named(collection, tmp_path):
    (tmp_path / "kubeconfig").write_bytes(encrypt(KUBECONFIG))
    with pytest.raises(collection.errors.InputError) as raised:
        collection.vault_input.VaultInput(loader()._vault).kubeconfig("kubeconfig", str(tmp_path))
    assert str(raised.value).startswith("kubeconfig kubeconfig: the file is encrypted with Ansible Vault, and no "
                                        "vault password was given. Fix:")


def test_a_vaulted_kubeconfig_that_is_not_yaml_shows_no_content(collection, tmp_path):
    (tmp_path / "kubeconfig").write_bytes(encrypt("token: [" + SECRET_VALUE))
    with pytest.raises(collection.errors.InputError) as raised:
        collection.vault_input.VaultInput(loader(PASSWORD)._vault).kubeconfig("kubeconfig", str(tmp_path))
    assert "not valid YAML at line" in str(raised.value) and SECRET_VALUE not in str(raised.value)


# ----- the action plugin --------------------------------------------------------------------------------------


def action(collection, tmp_path, data_loader, args):
    spec = importlib.util.spec_from_file_location("applyset_apply_action",
                                                  REPO_ROOT / "plugins" / "action" / "applyset_apply.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    plugin = module.ActionModule.__new__(module.ActionModule)
    data_loader.set_basedir(str(tmp_path))
    plugin._loader = data_loader
    plugin._task = SimpleNamespace(_role=None, args=args)
    return plugin


def test_the_action_plugin_hands_plain_paths_over_and_decrypted_bytes_hidden(collection, tmp_path):
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "plain.yaml").write_text(SECRET_YAML.replace("db", "plain"))
    (tmp_path / "manifests" / "secret.yaml").write_bytes(encrypt(SECRET_YAML))
    (tmp_path / "kubeconfig").write_bytes(encrypt(KUBECONFIG))
    plugin = action(collection, tmp_path, loader(PASSWORD), {})
    args, contents = plugin.decrypt(plugin.module_args({"src": "manifests/", "kubeconfig": "kubeconfig"}))
    assert args["src"] == [os.path.join(str(tmp_path), "manifests/")]
    assert sorted(contents) == [os.path.realpath(tmp_path / "manifests" / "secret.yaml")]
    packed = collection.redact.pack_protected_input(args, src_contents=contents)
    assert set(packed) == {"src", collection.redact.PROTECTED_INPUT}
    carried = collection.redact.unpack_protected_input(packed[collection.redact.PROTECTED_INPUT])
    assert carried["src_contents"] == contents and carried["kubeconfig"]["current-context"] == "x"
    assert [m.obj["metadata"]["name"] for m in read(collection, packed["src"], carried["src_contents"])] == [
        "plain", "db"]


def test_the_action_plugin_leaves_src_alone_when_the_set_is_removed(collection, tmp_path):
    (tmp_path / "secret.yaml").write_bytes(encrypt(SECRET_YAML))
    plugin = action(collection, tmp_path, loader(), {})
    assert plugin.decrypt(plugin.module_args({"src": "secret.yaml", "state": "absent"}))[1] is None
    with pytest.raises(collection.errors.InputError):
        plugin.decrypt(plugin.module_args({"src": "secret.yaml"}))
