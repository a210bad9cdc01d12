"""Loading and validating manifests (and how their errors read)."""

import json
import os
import time

import pytest
import yaml

from applyset.inputs import manifests
from applyset.inputs import manifest_checks
from applyset import spec
from applyset.errors import ApiError, ApplySetError, ConflictError, InputError, InputErrors, ParentError
from applyset.inputs.manifests import Manifest

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: shop
"""


def configmap(name, namespace="shop", **metadata):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, **metadata}}


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def names(loaded):
    return [manifest.name for manifest in loaded]


def problems_of(documents):
    """Validate and return the list of InputError raised (empty when valid)."""
    loaded = [Manifest(document, f"item {number}") for number, document in enumerate(documents, 1)]
    try:
        manifest_checks.validate(loaded)
    except InputErrors as raised:
        return raised.errors
    return []


class TestManifest:
    def test_properties(self):
        manifest = Manifest({"apiVersion": "apps/v1", "kind": "Deployment",
                             "metadata": {"name": "web", "namespace": "shop"}}, "app.yaml, document 1")
        assert manifest.api_version == "apps/v1"
        assert (manifest.group, manifest.version, manifest.kind) == ("apps", "v1", "Deployment")
        assert (manifest.name, manifest.namespace) == ("web", "shop")
        assert manifest.group_kind == spec.GroupKind("apps", "Deployment")
        assert manifest.ref == "Deployment shop/web"

    def test_core_group_and_cluster_scope(self):
        manifest = Manifest({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}, "x")
        assert (manifest.group, manifest.version) == ("", "v1")
        assert manifest.namespace is None
        assert manifest.ref == "Namespace shop"
        assert str(manifest.group_kind) == "Namespace"

    def test_empty_namespace_counts_as_unset(self):
        manifest = Manifest(configmap("a", namespace=""), "x")
        assert manifest.namespace is None

    def test_invalid_document_is_read_defensively(self):
        manifest = Manifest(["not", "a", "mapping"], "x")
        assert (manifest.api_version, manifest.kind, manifest.name, manifest.namespace) == \
            (None, None, None, None)
        assert manifest.ref is None
        assert Manifest({"kind": "X", "metadata": "oops"}, "x").name is None


class TestLoadFiles:
    def test_multi_document_file_skips_empty_documents(self, tmp_path):
        write(tmp_path / "app.yaml",
              "---\n" + CONFIGMAP.format(name="a") + "---\n---\n# only a comment\n---\n"
              + CONFIGMAP.format(name="b"))
        loaded = manifests.load_sources(str(tmp_path / "app.yaml"))
        assert names(loaded) == ["a", "b"]
        # Document numbers count empty documents, so they match what the user sees in the file.
        assert loaded[0].source == f"{tmp_path}/app.yaml, document 1"
        assert loaded[1].source == f"{tmp_path}/app.yaml, document 4"

    def test_relative_paths_resolve_against_base_dir(self, tmp_path):
        write(tmp_path / "manifests" / "app.yaml", CONFIGMAP.format(name="a"))
        loaded = manifests.load_sources("manifests/app.yaml", base_dir=str(tmp_path))
        assert names(loaded) == ["a"]
        assert loaded[0].source == "manifests/app.yaml, document 1"

    def test_list_of_sources_keeps_order(self, tmp_path):
        write(tmp_path / "b.yaml", CONFIGMAP.format(name="b"))
        write(tmp_path / "a.yaml", CONFIGMAP.format(name="a"))
        loaded = manifests.load_sources(["b.yaml", "a.yaml"], base_dir=str(tmp_path))
        assert names(loaded) == ["b", "a"]

    def test_same_file_twice_is_read_once(self, tmp_path):
        write(tmp_path / "a.yaml", CONFIGMAP.format(name="a"))
        loaded = manifests.load_sources(["a.yaml", str(tmp_path / "a.yaml"), "."],
                                        base_dir=str(tmp_path))
        assert names(loaded) == ["a"]

    def test_current_directory_paths_are_shown_plainly(self, tmp_path):
        write(tmp_path / "a.yaml", CONFIGMAP.format(name="a"))
        loaded = manifests.load_sources(".", base_dir=str(tmp_path))
        assert loaded[0].source == "a.yaml, document 1"

    def test_explicit_file_with_any_extension(self, tmp_path):
        write(tmp_path / "app.txt", CONFIGMAP.format(name="a"))
        assert names(manifests.load_sources(str(tmp_path / "app.txt"))) == ["a"]

    def test_json_file_with_tabs(self, tmp_path):
        document = configmap("a")
        write(tmp_path / "a.json", json.dumps(document, indent="\t"))
        loaded = manifests.load_sources(str(tmp_path / "a.json"))
        assert loaded[0].obj == document
        assert loaded[0].source == f"{tmp_path}/a.json, document 1"

    def test_json_syntax_error_names_line_and_column(self, tmp_path):
        write(tmp_path / "a.json", '{\n  "apiVersion": "v1",\n  "kind" "ConfigMap"\n}\n')
        with pytest.raises(InputErrors) as raised:
            manifests.load_sources(str(tmp_path / "a.json"))
        error = raised.value.errors[0]
        assert error.obj == f"file {tmp_path}/a.json"
        assert error.message.startswith("JSON syntax error at line 3, column 10:")

    def test_utf8_byte_order_mark_is_accepted(self, tmp_path):
        (tmp_path / "a.yaml").write_bytes(b"\xef\xbb\xbf" + CONFIGMAP.format(name="a").encode())
        (tmp_path / "a.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(configmap("b")).encode())
        assert names(manifests.load_sources(["a.yaml", "a.json"], base_dir=str(tmp_path))) == \
            ["a", "b"]

    def test_timestamps_stay_strings(self, tmp_path):
        write(tmp_path / "a.yaml", CONFIGMAP.format(name="a") + "data:\n  day: 2024-01-01\n")
        assert manifests.load_sources(str(tmp_path / "a.yaml"))[0].obj["data"]["day"] == "2024-01-01"

    def test_kind_list_is_flattened(self, tmp_path):
        items = [configmap("a"), configmap("b")]
        write(tmp_path / "list.yaml",
              CONFIGMAP.format(name="first") + "---\n"
              + json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        loaded = manifests.load_sources(str(tmp_path / "list.yaml"))
        assert names(loaded) == ["first", "a", "b"]
        assert loaded[2].source == f"{tmp_path}/list.yaml, document 2, item 2"

    def test_typed_lists_are_flattened_and_nested_lists_refused_as_kubectl_does(self):
        typed = {"apiVersion": "v1", "kind": "ConfigMapList", "items": [configmap("b")]}
        assert names(manifests.load_definition(typed)) == ["b"]
        outer = {"apiVersion": "v1", "kind": "List", "items": [configmap("a"), typed]}
        with pytest.raises(InputErrors) as raised:
            manifests.load_definition(outer)
        [error] = raised.value.errors
        assert error.obj == "definition, item 2"
        assert error.message.startswith("a list inside a list: kubectl cannot apply it")

    def test_any_list_kind_with_items_is_flattened_whatever_its_group(self):
        # kubectl's unstructured decoder reads any document with items as a list.
        role = {"kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1", "metadata": {"name": "r"}}
        document = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleList", "items": [role]}
        loaded = manifests.load_definition(document)
        assert [m.obj for m in loaded] == [role]
        assert loaded[0].source == "definition, item 1"
        shopping = {"apiVersion": "example.com/v1", "kind": "ShoppingList", "items": [],
                    "metadata": {"name": "x"}}
        assert manifests.load_definition(shopping) == []

    def test_items_inherit_the_kind_and_api_version_of_a_typed_list(self):
        document = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleList",
                    "items": [{"metadata": {"name": "a"}}, {"kind": "ClusterRole", "metadata": {"name": "b"}}]}
        loaded = manifests.load_definition(document)
        assert [(m.api_version, m.kind, m.name) for m in loaded] == [
            ("rbac.authorization.k8s.io/v1", "Role", "a"), (None, "ClusterRole", "b")]
        plain = manifests.load_definition({"apiVersion": "v1", "kind": "List", "items": [{"metadata": {"name": "c"}}]})
        assert plain[0].kind is None  # "List" names no item kind: validate says kind is missing

    def test_items_that_are_no_list_are_refused(self):
        with pytest.raises(InputErrors) as raised:
            manifests.load_definition([{"apiVersion": "v1", "kind": "List", "items": "x"},
                                       {"apiVersion": "v1", "kind": "List", "items": None}])
        assert [e.message for e in raised.value.errors] == ["items is a string, not a list",
                                                            "items is null, not a list"]

    def test_a_kind_that_is_no_list_but_has_items_is_refused(self):
        document = {"apiVersion": "example.com/v1", "kind": "Cart", "metadata": {"name": "x"}, "items": []}
        with pytest.raises(InputErrors) as raised:
            manifests.load_definition(document)
        assert "kubectl reads it as a list of its items" in raised.value.errors[0].message

    def test_list_items_are_named_per_item_in_files(self, tmp_path):
        write(tmp_path / "roles.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleList\nitems:\n"
              "- metadata: {name: a}\n- metadata: {name: b}\n")
        loaded = manifests.load_sources(str(tmp_path / "roles.yaml"))
        assert [m.source for m in loaded] == [f"{tmp_path}/roles.yaml, document 1, item 1",
                                              f"{tmp_path}/roles.yaml, document 1, item 2"]
        assert {m.kind for m in loaded} == {"Role"}


class TestLoadDirectoriesAndGlobs:
    @pytest.fixture
    def tree(self, tmp_path):
        root = tmp_path / "manifests"
        write(root / "b.yaml", CONFIGMAP.format(name="b"))
        write(root / "a.yml", CONFIGMAP.format(name="a"))
        write(root / "c.json", json.dumps(configmap("c")))
        write(root / "sub" / "d.yaml", CONFIGMAP.format(name="d"))
        write(root / "sub" / "deeper" / "e.yaml", CONFIGMAP.format(name="e"))
        write(root / "README.md", "# not a manifest\n")
        write(root / ".hidden.yaml", CONFIGMAP.format(name="hidden-file"))
        write(root / ".git" / "x.yaml", CONFIGMAP.format(name="hidden-dir"))
        return root

    def test_directory_is_read_recursively_in_path_order(self, tree):
        loaded = manifests.load_sources("manifests", base_dir=str(tree.parent))
        assert names(loaded) == ["a", "b", "c", "d", "e"]
        assert loaded[3].source == "manifests/sub/d.yaml, document 1"

    def test_directory_with_trailing_slash(self, tree):
        loaded = manifests.load_sources(str(tree) + "/")
        assert names(loaded) == ["a", "b", "c", "d", "e"]

    def test_glob_is_sorted_and_recursive(self, tree):
        loaded = manifests.load_sources("manifests/**/*.yaml", base_dir=str(tree.parent))
        assert names(loaded) == ["b", "d", "e"]
        assert [m.source for m in loaded][1] == "manifests/sub/d.yaml, document 1"

    def test_glob_skips_directories(self, tree):
        # "*" also matches README.md (a comment only, so no documents) and the directory sub/,
        # which a glob does not walk.
        loaded = manifests.load_sources(str(tree / "*"))
        assert names(loaded) == ["a", "b", "c"]

    def test_glob_matching_nothing(self, tmp_path):
        with pytest.raises(InputErrors) as raised:
            manifests.load_sources("nothing/*.yaml", base_dir=str(tmp_path))
        assert raised.value.errors[0].obj == "nothing/*.yaml"
        assert "matches no files" in raised.value.errors[0].message

    def test_missing_path(self, tmp_path):
        with pytest.raises(InputErrors) as raised:
            manifests.load_sources(["missing.yaml", "also-missing"], base_dir=str(tmp_path))
        errors = raised.value.errors
        assert [error.obj for error in errors] == ["missing.yaml", "also-missing"]
        assert all("no such file or directory" in error.message for error in errors)
        assert str(tmp_path) in errors[0].fix

    def test_bad_entries(self, tmp_path):
        os.mkfifo(tmp_path / "fifo.yaml")
        with pytest.raises(InputErrors) as raised:
            manifests.load_sources(["", None, "fifo.yaml"], base_dir=str(tmp_path))
        assert [error.message for error in raised.value.errors] == [
            "expected a path, got string ''", "expected a path, got null None", "not a regular file"]

    def test_empty_source_list(self):
        assert manifests.load_sources([]) == []

    def test_path_objects(self, tmp_path):
        write(tmp_path / "a.yaml", CONFIGMAP.format(name="a"))
        assert names(manifests.load_sources(tmp_path / "a.yaml")) == ["a"]

    def test_symlink_loop_is_refused(self, tmp_path):
        write(tmp_path / "manifests" / "sub" / "a.yaml", CONFIGMAP.format(name="a"))
        os.symlink("..", tmp_path / "manifests" / "sub" / "loop")
        with pytest.raises(InputErrors) as raised:
            manifests.load_sources("manifests", base_dir=str(tmp_path))
        [error] = raised.value.errors
        assert error.obj == "manifests/sub/loop"
        assert error.message == f"symbolic link loop: it leads back to {tmp_path / 'manifests'}"

    def test_indirect_symlink_loop_is_refused(self, tmp_path):
        # The link leads above the walked directory, and from there back into it.
        write(tmp_path / "manifests" / "a.yaml", CONFIGMAP.format(name="a"))
        os.symlink(str(tmp_path), tmp_path / "manifests" / "up")
        with pytest.raises(InputErrors) as raised:
            manifests.load_sources("manifests", base_dir=str(tmp_path))
        [error] = raised.value.errors
        assert error.obj == "manifests/up/manifests"
        assert "symbolic link loop" in error.message

    def test_symlinked_directory_without_loop_is_followed(self, tmp_path):
        write(tmp_path / "shared" / "a.yaml", CONFIGMAP.format(name="a"))
        (tmp_path / "manifests").mkdir()
        os.symlink(str(tmp_path / "shared"), tmp_path / "manifests" / "one")
        os.symlink(str(tmp_path / "shared"), tmp_path / "manifests" / "two")
        loaded = manifests.load_sources("manifests", base_dir=str(tmp_path))
        # Both links lead to the same file, which is read once.
        assert names(loaded) == ["a"]
        assert loaded[0].source == "manifests/one/a.yaml, document 1"


class TestFileErrors:
    def test_non_utf8_names_file_and_offset(self, tmp_path):
        (tmp_path / "bad.yaml").write_bytes(b"apiVersion: v1\nkind: Config\xffMap\n")
        with pytest.raises(InputErrors) as raised:
            manifests.load_sources("bad.yaml", base_dir=str(tmp_path))
        error = raised.value.errors[0]
        assert error.obj == "file bad.yaml"
        assert error.message == "the file is not valid UTF-8 (byte offset 27)"
        assert error.fix

    def test_non_utf8_offset_counts_the_byte_order_mark(self, tmp_path):
        (tmp_path / "bad.yaml").write_bytes(b"\xef\xbb\xbfab\xff")
        with pytest.raises(InputErrors) as raised:
            manifests.load_sources("bad.yaml", base_dir=str(tmp_path))
        assert raised.value.errors[0].message == "the file is not valid UTF-8 (byte offset 5)"

    def test_yaml_error_names_line_and_column(self, tmp_path):
        write(tmp_path / "bad.yaml", CONFIGMAP.format(name="a") + "---\nkind: [a, b\nname: x\n")
        with pytest.raises(InputErrors) as raised:
            manifests.load_sources("bad.yaml", base_dir=str(tmp_path))
        error = raised.value.errors[0]
        assert error.obj == "file bad.yaml"
        assert error.message.startswith("YAML syntax error at line 8, column 5:")
        assert "line 8" in str(error)

    def test_file_too_big(self, tmp_path, monkeypatch):
        monkeypatch.setattr(manifests, "MAX_FILE_BYTES", 10)
        write(tmp_path / "big.yaml", CONFIGMAP.format(name="a"))
        with pytest.raises(InputErrors) as raised:
            manifests.load_sources("big.yaml", base_dir=str(tmp_path))
        error = raised.value.errors[0]
        assert error.obj == "file big.yaml"
        assert "more than the limit of 10 bytes" in error.message

    def test_all_file_problems_are_reported_together(self, tmp_path):
        (tmp_path / "bad.yaml").write_bytes(b"\xff")
        write(tmp_path / "worse.yaml", "a: [\n")
        with pytest.raises(InputErrors) as raised:
            manifests.load_sources(["bad.yaml", "worse.yaml", "missing.yaml"], base_dir=str(tmp_path))
        assert [error.obj for error in raised.value.errors] == \
            ["missing.yaml", "file bad.yaml", "file worse.yaml"]
        text = str(raised.value)
        assert text.splitlines()[0] == "3 problems in the input:"
        assert len(text.splitlines()) == 4


class TestLoadDefinition:
    def test_dict(self):
        loaded = manifests.load_definition(configmap("a"))
        assert names(loaded) == ["a"]
        assert loaded[0].source == "definition"

    def test_list(self):
        loaded = manifests.load_definition([configmap("a"), None, configmap("b")])
        assert names(loaded) == ["a", "b"]
        assert [m.source for m in loaded] == ["definition item 1", "definition item 3"]

    def test_yaml_text(self):
        loaded = manifests.load_definition(CONFIGMAP.format(name="a") + "---\n"
                                           + CONFIGMAP.format(name="b"))
        assert names(loaded) == ["a", "b"]
        assert loaded[1].source == "definition, document 2"

    def test_json_text_with_tabs(self):
        loaded = manifests.load_definition(json.dumps(configmap("a"), indent="\t"))
        assert names(loaded) == ["a"]

    def test_yaml_flow_text(self):
        loaded = manifests.load_definition("{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}")
        assert names(loaded) == ["a"]

    def test_list_of_yaml_texts(self):
        loaded = manifests.load_definition([CONFIGMAP.format(name="a"), configmap("b")])
        assert [m.source for m in loaded] == ["definition item 1, document 1", "definition item 2"]

    def test_text_named_by_its_source_comment(self):
        loaded = manifests.load_definition(["# Source: templates/web.yaml.j2\n" + CONFIGMAP.format(name="a"),
                                            "# Source:  kustomize overlays/prod \n---\n" + CONFIGMAP.format(name="b")])
        assert [m.source for m in loaded] == ["templates/web.yaml.j2, document 1",
                                              "kustomize overlays/prod, document 1"]
        with pytest.raises(InputErrors) as raised:
            manifests.load_definition(["# Source: templates/bad.yaml.j2\na: [\n"])
        assert raised.value.errors[0].obj == "templates/bad.yaml.j2"

    def test_custom_source_and_empty_input(self):
        assert manifests.load_definition(configmap("a"), source="vars")[0].source == "vars"
        assert manifests.load_definition(None) == []
        assert manifests.load_definition("") == []
        assert manifests.load_definition([]) == []

    def test_yaml_error(self):
        with pytest.raises(InputErrors) as raised:
            manifests.load_definition("a: 1\nb: [\n")
        [error] = raised.value.errors
        assert error.obj == "definition"
        assert error.message.startswith("YAML syntax error at line 3")

    def test_yaml_errors_of_all_items_are_reported(self):
        with pytest.raises(InputErrors) as raised:
            manifests.load_definition(["a: [", configmap("a"), "b: {", "c: 1"])
        assert [error.obj for error in raised.value.errors] == \
            ["definition item 1", "definition item 3"]

    def test_wrong_type(self):
        with pytest.raises(InputErrors) as raised:
            manifests.load_definition(42)
        assert "got number" in raised.value.errors[0].message

    def test_non_mapping_items_are_left_to_validate(self):
        loaded = manifests.load_definition([42, ["x"]])
        assert [m.obj for m in loaded] == [42, ["x"]]
        with pytest.raises(InputErrors) as raised:
            manifest_checks.validate(loaded)
        assert [e.message for e in raised.value.errors] == [
            "the document is not a mapping but a number", "the document is not a mapping but a list"]

    def test_documents_are_not_copied(self):
        document = configmap("a")
        assert manifests.load_definition(document)[0].obj is document

    def test_dicts_are_made_what_kubectl_would_send(self):
        document = {**configmap("a"), "spec": {2: "x", True: "y", "n": 1.0, "big": 2 ** 64, "f": 0.5}}
        [loaded] = manifests.load_definition(document)
        assert loaded.obj["spec"] == {"2": "x", "true": "y", "n": 1, "big": float(2 ** 64), "f": 0.5}
        assert loaded.obj["metadata"] is document["metadata"]  # unchanged parts are not copied

    def test_dicts_with_values_json_cannot_hold_are_refused(self):
        with pytest.raises(InputErrors) as raised:
            manifests.load_definition([{**configmap("a"), "spec": {"x": float("nan")}}, {None: 1}])
        assert [(e.obj, e.message) for e in raised.value.errors] == [
            ("definition item 1", "the object.spec.x: json: unsupported value: NaN"),
            ("definition item 2", "the object: unsupported map key of type: <nil> (a null key such as ~, "
                                  "null or an empty key)")]


class TestValidate:
    def test_valid_input_passes(self):
        assert problems_of([configmap("a"), configmap("a", namespace="other"),
                            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
                            configmap("b", labels={"app": "x"}, annotations={"a": "1"})]) == []

    def test_not_a_mapping(self):
        [error] = problems_of([["a"]])
        assert error.message == "the document is not a mapping but a list"
        assert error.obj == "item 1"
        assert "List" in error.fix
        [error] = problems_of(["just text"])
        assert error.message == "the document is not a mapping but a string"

    @pytest.mark.parametrize("document, message", [
        ({"kind": "ConfigMap", "metadata": {"name": "a"}}, "apiVersion is missing"),
        ({"apiVersion": 1, "kind": "ConfigMap", "metadata": {"name": "a"}},
         "apiVersion is a number, not a string"),
        ({"apiVersion": "", "kind": "ConfigMap", "metadata": {"name": "a"}}, "apiVersion is empty"),
        ({"apiVersion": "apps/v1/x", "kind": "Deployment", "metadata": {"name": "a"}},
         'apiVersion "apps/v1/x" is not GROUP/VERSION or VERSION'),
        ({"apiVersion": "/v1", "kind": "Deployment", "metadata": {"name": "a"}},
         'apiVersion "/v1" is not GROUP/VERSION or VERSION'),
        ({"apiVersion": "v1", "metadata": {"name": "a"}}, "kind is missing"),
        ({"apiVersion": "v1", "kind": ["x"], "metadata": {"name": "a"}}, "kind is a list, not a string"),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, "metadata.name is missing"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, "metadata.name is missing"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 7}},
         "metadata.name is a number, not a string"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": "a"},
         "metadata is not a mapping but a string"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": 5}},
         "metadata.namespace is a number, not a string"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": ["x"]}},
         "metadata.labels is not a mapping but a list"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"on": True}}},
         'metadata.labels["on"] is a boolean (True), not a string'),
        ({"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "a", "annotations": {"n": 1}}},
         'metadata.annotations["n"] is a number (1), not a string'),
        ({"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "a", "annotations": {"n": None}}},
         'metadata.annotations["n"] is a null (None), not a string'),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {1: "x"}}},
         "metadata.labels has a non-string key 1"),
    ])
    def test_field_problems(self, document, message):
        [error] = problems_of([document])
        assert error.message == message
        assert error.fix
        assert error.obj.startswith("item 1")

    def test_null_labels_are_fine(self):
        assert problems_of([configmap("a", labels=None, annotations=None)]) == []

    def test_generate_name_is_refused_with_reason(self):
        document = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "run-"}}
        errors = problems_of([document])
        assert [error.message.split(":")[0] for error in errors] == \
            ["metadata.generateName is not supported", "metadata.name is missing"]
        assert "stable name" in errors[0].message
        assert "metadata.name" in errors[0].fix

    def test_part_of_label_in_input_uses_kubectl_message(self):
        document = configmap("a", labels={spec.LABEL_PART_OF: "applyset-x-v1"})
        [error] = problems_of([document])
        assert error.message == \
            'ApplySet label "applyset.kubernetes.io/part-of" already set in input data'
        assert error.obj == "item 1 (ConfigMap shop/a)"
        assert "remove" in error.fix
        assert error.details == {"source": "item 1", "object": "ConfigMap shop/a"}

    def test_duplicate_object_names_both_sources(self):
        duplicate = {"apiVersion": "apps/v1beta1", "kind": "Deployment",
                     "metadata": {"name": "web", "namespace": "shop"}}
        original = dict(duplicate, apiVersion="apps/v1")
        [error] = problems_of([original, configmap("web"), duplicate])
        assert error.obj == "item 3 (Deployment shop/web)"
        assert error.message == "the same object is also defined in item 1"
        assert error.details["first_source"] == "item 1"

    def test_unset_namespace_is_its_own_value(self):
        assert problems_of([configmap("a"), configmap("a", namespace=None)]) == []
        assert len(problems_of([configmap("a", namespace=None), configmap("a", namespace="")])) == 1

    def test_same_name_in_other_group_or_kind_is_fine(self):
        other_group = {"apiVersion": "example.com/v1", "kind": "ConfigMap",
                       "metadata": {"name": "a", "namespace": "shop"}}
        secret = dict(configmap("a"), kind="Secret")
        assert problems_of([configmap("a"), other_group, secret]) == []

    def test_all_problems_are_reported_at_once(self):
        documents = [
            {"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": 1}}},
            configmap("b"),
            configmap("b"),
            "text",
        ]
        with pytest.raises(InputErrors) as raised:
            manifest_checks.validate([Manifest(d, f"item {n}") for n, d in enumerate(documents, 1)])
        lines = str(raised.value).splitlines()
        assert lines[0] == "4 problems in the input:"
        assert lines[1].startswith("- item 1 (ConfigMap a): apiVersion is missing. Fix: ")
        assert lines[2].startswith('- item 1 (ConfigMap a): metadata.labels["x"] is a number')
        assert lines[3].startswith("- item 3 (ConfigMap shop/b): the same object is also defined")
        assert lines[4].startswith("- item 4: the document is not a mapping")
        assert isinstance(raised.value, InputError)

    def test_sources_from_files_appear_in_errors(self, tmp_path):
        write(tmp_path / "app.yaml", CONFIGMAP.format(name="a") + "---\n" + CONFIGMAP.format(name="a"))
        loaded = manifests.load_sources("app.yaml", base_dir=str(tmp_path))
        with pytest.raises(InputErrors) as raised:
            manifest_checks.validate(loaded)
        assert str(raised.value.errors[0]) == (
            "app.yaml, document 2 (ConfigMap shop/a): the same object is also defined in "
            "app.yaml, document 1. Fix: keep one of the two definitions")

    def test_many_documents_stay_fast(self, tmp_path):
        # Not a benchmark: a generous bound that only a non-linear algorithm would exceed.
        text = "---\n".join(CONFIGMAP.format(name=f"cm-{number}") for number in range(5000))
        write(tmp_path / "many.yaml", text)
        started = time.perf_counter()
        loaded = manifests.load_sources(str(tmp_path / "many.yaml"))
        manifest_checks.validate(loaded)
        assert len(loaded) == 5000
        assert time.perf_counter() - started < 5


class TestErrors:
    def test_str_with_all_parts(self):
        error = InputError("metadata.name is missing", obj="Deployment shop/web", fix="set it")
        assert str(error) == "Deployment shop/web: metadata.name is missing. Fix: set it"

    def test_str_with_missing_parts(self):
        assert str(ApplySetError("boom")) == "boom"
        assert str(ApplySetError("boom.", fix="retry")) == "boom. Fix: retry"
        assert str(ApplySetError("boom", obj="Secret x")) == "Secret x: boom"

    def test_to_dict(self):
        error = ParentError("wrong tool", obj="Secret shop/x", fix="take over", details={"a": 1})
        assert error.to_dict() == {"type": "ParentError", "message": "wrong tool",
                                   "object": "Secret shop/x", "fix": "take over",
                                   "details": {"a": 1}}

    def test_api_and_conflict_errors(self):
        body = {"kind": "Status", "reason": "Conflict", "details": {"causes": [
            {"type": "FieldManagerConflict", "field": ".spec.replicas"}, {"type": "x"}]}}
        error = ConflictError("Apply failed with 1 conflict", status=409, reason="Conflict",
                              body=body, obj="Deployment shop/web")
        assert isinstance(error, ApiError)
        assert (error.status, error.reason, error.body) == (409, "Conflict", body)
        assert error.conflicting_fields == [".spec.replicas"]
        result = error.to_dict()
        assert (result["status"], result["conflicting_fields"]) == (409, [".spec.replicas"])
        assert ApiError("x", status=500).to_dict()["reason"] is None

    def test_input_errors_aggregate(self):
        errors = InputErrors([InputError("a", obj="x", fix="f"), InputError("b")])
        assert str(errors) == "2 problems in the input:\n- x: a. Fix: f\n- b"
        assert [entry["message"] for entry in errors.to_dict()["errors"]] == ["a", "b"]
        assert str(InputErrors([InputError("a")])) == "1 problem in the input:\n- a"
