"""Label and annotation keys and values, checked as the API server checks them for every kind.

tests/integration/test_connection_errors.py compares each verdict here with the real server's.
"""

import pytest
from applyset.inputs import manifests, names
from applyset.inputs import manifest_checks
from applyset.errors import InputErrors

VALID_KEYS = ["app", "app.kubernetes.io/name", "a_b-c.d", "A1", "example.com/X_y", "x" * 63,
              "a" * 253 + "/b"]
INVALID_KEYS = [("has space", "name part"), ("-app", "name part"), ("app-", "name part"), ("a/b/c", "more than one"),
                ("/app", "empty prefix"), ("app/", "empty name part"), ("Example.com/app", "prefix"),
                ("x" * 64, "longer than 63"), ("", "empty name part")]


@pytest.mark.parametrize("key", VALID_KEYS)
def test_valid_keys(key):
    assert names.qualified_name_problems(key) == []


@pytest.mark.parametrize("key, problem", INVALID_KEYS)
def test_invalid_keys(key, problem):
    assert problem in " ".join(names.qualified_name_problems(key))


@pytest.mark.parametrize("value, valid", [("", True), ("1.0", True), ("v1_2-3", True), ("has space", False),
                                          ("v1.2.3+build", False), ("-x", False), ("x" * 63, True),
                                          ("x" * 64, False)])
def test_label_values(value, valid):
    assert (names.label_value_problems(value) == []) is valid


def test_annotation_keys_may_have_upper_case_but_labels_prefixes_may_not():
    assert names.metadata_map_problems(None, {"Example.COM/Note": "x"}) == []
    ((problem, fix),) = names.metadata_map_problems({"Example.COM/note": "x"}, None)
    assert problem.startswith('metadata.labels key "Example.COM/note" has a prefix "Example.COM" that is not a '
                              "DNS-1123 subdomain")


def test_annotations_are_limited_to_256_kib_in_total():
    assert names.metadata_map_problems(None, {"a": "x" * (256 * 1024 - 1)}) == []
    ((problem, fix),) = names.metadata_map_problems(None, {"a": "x" * (256 * 1024), "b": ""})
    assert "more than the 262144 bytes (256 KiB) the API server allows" in problem


def test_manifests_report_label_problems_with_the_object_and_a_fix():
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "a", "namespace": "shop", "labels": {"app": "has space", "bad key": "x"},
                       "annotations": {"Bad Key": "x"}}}
    loaded = manifests.load_definition([cm])
    with pytest.raises(InputErrors) as info:
        manifest_checks.validate(loaded)
    text = str(info.value)
    assert "3 problems in the input" in text
    assert 'metadata.labels["app"] value "has space" is not a valid label value' in text
    assert 'e.g. "has-space"' in text
    assert 'metadata.labels key "bad key" has a name part "bad key" with characters other than' in text
    assert 'metadata.annotations key "Bad Key" has a name part "bad key"' in text
