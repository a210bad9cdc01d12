"""Bad input the loader must refuse (or must keep accepting), without a cluster.

The integration corpus (tests/integration/test_bad_input.py) runs every case through the
ansible CLI against a real API server. This file pins down, at the function that decides,
the problems that corpus found (fixed in 444a878): input accepted silently (duplicate keys),
input found only by the server after the first write (objects over the size limit), input
that can exhaust the controller (alias expansion), and an empty ``src`` entry that the
action plugin turned into a directory; and what those checks must keep accepting, such as
content of exactly 1 MiB, which the API server accepts.
"""

import base64
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from applyset.inputs import manifests
from applyset.inputs import manifest_checks
from applyset.errors import InputError, InputErrors

REPO_ROOT = Path(__file__).resolve().parents[3]
MIB = 1024 * 1024


def load_text(text, tmp_path, name="input.yaml"):
    path = tmp_path / name
    path.write_text(text)
    loaded = manifests.load_sources([str(path)])
    manifest_checks.validate(loaded)
    return loaded


def messages(raised):
    return "\n".join(str(error) for error in raised.value.errors)


def test_sparse_file_over_the_limit_is_refused_without_reading_it(tmp_path):
    # 64 MiB is the limit the integration corpus assumes: a file one byte bigger is refused.
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as handle:
        handle.truncate(64 * MIB + 1)
    with pytest.raises(InputErrors) as raised:
        manifests.load_sources([str(path)])
    assert f"file {path}: the file is {64 * MIB + 1} bytes" in messages(raised)


# ----- duplicate mapping keys ---------------------------------------------------------------------------------

DUPLICATE_KEYS = {
    "block-top-level": ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: '1'\ndata:\n  y: '2'\n",
                        "line 7"),
    "block-nested": ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: '1'\n  x: '2'\n", "line 7"),
    "flow": ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, name: b}\n", "line 3"),
}


@pytest.mark.parametrize("text,where", DUPLICATE_KEYS.values(), ids=DUPLICATE_KEYS.keys())
def test_duplicate_yaml_keys_are_refused_with_their_line(tmp_path, text, where):
    with pytest.raises(InputErrors) as raised:
        load_text(text, tmp_path)
    assert "duplicate key" in messages(raised) and where in messages(raised)


def test_duplicate_json_keys_are_refused(tmp_path):
    text = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1", "x": "2"}}'
    with pytest.raises(InputErrors) as raised:
        load_text(text, tmp_path, "cm.json")
    assert "duplicate key" in messages(raised)


def test_merge_keys_may_override_merged_values(tmp_path):
    """What a duplicate-key check must keep accepting: `<<` merges, then explicit keys win."""
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\n  labels: &base {a: '1', b: '2'}\n"
            "data:\n  <<: *base\n  b: '3'\n")
    loaded = load_text(text, tmp_path)
    assert loaded[0].obj["data"] == {"a": "1", "b": "3"}


# ----- alias expansion ("billion laughs") ----------------------------------------------------------------------


def alias_bomb(levels=9, fanout=9):
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: bomb}", "spec:",
             '  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        lines.append(f"  l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * fanout) + "]")
    return "\n".join(lines) + "\n"


def test_alias_expansion_bomb_is_refused(tmp_path):
    # Loading is cheap (aliases share one object); sending would expand 387 million strings.
    with pytest.raises(InputError) as raised:
        load_text(alias_bomb(), tmp_path)
    assert "alias" in str(raised.value)


def test_modest_aliases_stay_accepted(tmp_path):
    loaded = load_text(alias_bomb(levels=3, fanout=3), tmp_path)
    assert len(json.dumps(loaded[0].obj)) < 2000


# ----- objects over the API server's size limit ----------------------------------------------------------------


def test_configmap_over_1mib_is_refused_before_any_request():
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
           "data": {"a": "x" * (MIB // 2), "b": "y" * (MIB // 2 + 1)}}
    with pytest.raises(InputErrors) as raised:
        manifest_checks.validate([manifests.Manifest(big, "big.yaml, document 1")])
    assert "big.yaml, document 1 (ConfigMap big)" in messages(raised) and "1048576" in messages(raised)


def test_secret_over_1mib_is_refused_before_any_request():
    value = base64.b64encode(b"z" * (MIB + 1)).decode()
    big = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "big"}, "data": {"blob": value}}
    with pytest.raises(InputErrors) as raised:
        manifest_checks.validate([manifests.Manifest(big, "definition item 1")])
    assert "definition item 1 (Secret big)" in messages(raised) and "1048576" in messages(raised)


# The API server sums the values only (ValidateConfigMap, ValidateSecret: totalSize += len(value))
# and refuses more than 1 MiB; a value of exactly 1 MiB under any key is accepted (checked against
# kube-apiserver v1.34 with a server-side dry run: 201 for 1048576 bytes, 422 for 1048577).
def content_of(size):
    """Objects whose content (the values, summed) is ``size`` bytes."""
    return {
        "configmap-data": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "edge"},
                           "data": {"payload": "x" * size}},
        "configmap-two-keys": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "edge"},
                               "data": {"first-half": "x" * (size // 2), "second-half": "y" * (size - size // 2)}},
        "secret-data": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "edge"},
                        "data": {"payload": base64.b64encode(b"z" * size).decode()}},
        "secret-stringdata": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "edge"},
                              "stringData": {"payload": "s" * size}},
    }


EXACTLY_1MIB, ONE_BYTE_MORE = content_of(MIB), content_of(MIB + 1)


@pytest.mark.parametrize("case", EXACTLY_1MIB)
def test_content_of_exactly_1mib_is_accepted_and_one_byte_more_refused_as_the_server_does(case):
    assert manifest_checks.validate([manifests.Manifest(EXACTLY_1MIB[case], "edge.yaml, document 1")]) is None
    with pytest.raises(InputErrors) as raised:
        manifest_checks.validate([manifests.Manifest(ONE_BYTE_MORE[case], "edge.yaml, document 1")])
    assert "edge.yaml, document 1" in messages(raised) and "1048576" in messages(raised)


# ----- an empty src entry in the action plugin -----------------------------------------------------------------


def action_module():
    spec = importlib.util.spec_from_file_location("applyset_apply_action",
                                                  REPO_ROOT / "plugins" / "action" / "applyset_apply.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ActionModule


def resolver(basedir, role_path=None):
    action = action_module().__new__(action_module())
    action._task = SimpleNamespace(_role=SimpleNamespace(_role_path=role_path) if role_path else None)
    action._loader = SimpleNamespace(get_basedir=lambda: str(basedir))
    return action


@pytest.mark.parametrize("in_role", [False, True], ids=["playbook", "role"])
def test_empty_src_entry_is_passed_on_for_the_module_to_refuse(tmp_path, in_role):
    role = tmp_path / "roles" / "deploy"
    (role / "files").mkdir(parents=True)
    action = resolver(tmp_path, role if in_role else None)
    assert action._resolve("") == ""


def test_relative_src_entries_still_resolve(tmp_path):
    (tmp_path / "manifests").mkdir()
    assert resolver(tmp_path)._resolve("manifests/") == os.path.join(str(tmp_path), "manifests/")


def test_the_module_refuses_an_empty_src_entry():
    with pytest.raises(InputErrors) as raised:
        manifests.load_sources([""])
    assert "src: expected a path, got string ''" in messages(raised)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
