"""kubeyaml: manifests read as kubectl reads them.

The scalar table below was generated once with kubectl's own reading code (k8s.io/apimachinery's
YAMLOrJSONDecoder, sigs.k8s.io/yaml and go-yaml v2, from the Go module cache) on a document per
scalar: the value kubectl sends for ``v: SCALAR`` and the key it sends for ``SCALAR: v``.
tests/integration/test_yaml_scalars.py checks a part of it against the API server.
"""

import json
import math

import pytest
import yaml

from applyset.kubeyaml import stream as kubeyaml
from applyset.kubeyaml import go_json as kubeyaml_json
from applyset.kubeyaml import scalars as kubeyaml_scalars
from applyset.kubeyaml.scalars import YamlError
from applyset.kubeyaml.stream import read_stream

# (scalar as written, value kubectl sends, key kubectl sends); generated from go-yaml v2 + sigs.k8s.io/yaml
GO_YAML_V2_TABLE = [
    ('y', True, 'true'),
    ('Y', True, 'true'),
    ('yes', True, 'true'),
    ('Yes', True, 'true'),
    ('YES', True, 'true'),
    ('n', False, 'false'),
    ('N', False, 'false'),
    ('no', False, 'false'),
    ('No', False, 'false'),
    ('NO', False, 'false'),
    ('on', True, 'true'),
    ('On', True, 'true'),
    ('ON', True, 'true'),
    ('off', False, 'false'),
    ('Off', False, 'false'),
    ('OFF', False, 'false'),
    ('true', True, 'true'),
    ('True', True, 'true'),
    ('TRUE', True, 'true'),
    ('false', False, 'false'),
    ('False', False, 'false'),
    ('FALSE', False, 'false'),
    ('tRUE', 'tRUE', 'tRUE'),
    ('oN', 'oN', 'oN'),
    ('yES', 'yES', 'yES'),
    ('~', None, 'REFUSED'),
    ('null', None, 'REFUSED'),
    ('Null', None, 'REFUSED'),
    ('NULL', None, 'REFUSED'),
    ('nULL', 'nULL', 'nULL'),
    ('-', 'REFUSED', '-'),
    ('+', '+', '+'),
    ('.', '.', '.'),
    ('..', '..', '..'),
    ('...', '...', '...'),
    ('--', '--', '--'),
    ('<<', '<<', 'REFUSED'),
    ('=', '=', '='),
    ('==', '==', '=='),
    ('12:30', '12:30', '12:30'),
    ('1:30.5', '1:30.5', '1:30.5'),
    ('190:20:30', '190:20:30', '190:20:30'),
    ('-12:30', '-12:30', '-12:30'),
    ('0', 0, '0'),
    ('00', 0, '0'),
    ('-0', 0, '0'),
    ('+0', 0, '0'),
    ('01', 1, '1'),
    ('07', 7, '7'),
    ('08', 8, '8'),
    ('09', 9, '9'),
    ('010', 8, '8'),
    ('0o17', 15, '15'),
    ('0O17', 15, '15'),
    ('0o18', '0o18', '0o18'),
    ('-0o17', -15, '-15'),
    ('0x1F', 31, '31'),
    ('0X1f', 31, '31'),
    ('0x', '0x', '0x'),
    ('0o', '0o', '0o'),
    ('0b', '0b', '0b'),
    ('0b101', 5, '5'),
    ('0B101', 5, '5'),
    ('-0b101', -5, '-5'),
    ('+0b11', 3, '3'),
    ('0b2', '0b2', '0b2'),
    ('0x1g', '0x1g', '0x1g'),
    ('1_000', 1000, '1000'),
    ('1__0', 10, '10'),
    ('_1', '_1', '_1'),
    ('1_', 1, '1'),
    ('0x_1F', 31, '31'),
    ('0b_1', 1, '1'),
    ('1_000.5', 1000.5, '1000.5'),
    ('1e3', 1000, '1000'),
    ('1E3', 1000, '1000'),
    ('1e+3', 1000, '1000'),
    ('1e-3', 0.001, '0.001'),
    ('1.e3', 1000, '1000'),
    ('1.', 1, '1'),
    ('.5', 0.5, '0.5'),
    ('-.5', -0.5, '-0.5'),
    ('+.5', 0.5, '0.5'),
    ('.5e3', 500, '500'),
    ('._5', '._5', '._5'),
    ('.5_0', 0.5, '0.5'),
    ('1e', '1e', '1e'),
    ('1e+', '1e+', '1e+'),
    ('e3', 'e3', 'e3'),
    ('.e3', '.e3', '.e3'),
    ('.inf', 'REFUSED', '.inf'),
    ('.Inf', 'REFUSED', '.inf'),
    ('.INF', 'REFUSED', '.inf'),
    ('+.inf', 'REFUSED', '.inf'),
    ('-.inf', 'REFUSED', '-.inf'),
    ('-.Inf', 'REFUSED', '-.inf'),
    ('.InF', '.InF', '.InF'),
    ('inf', 'inf', 'inf'),
    ('Infinity', 'Infinity', 'Infinity'),
    ('.nan', 'REFUSED', '.nan'),
    ('.NaN', 'REFUSED', '.nan'),
    ('.NAN', 'REFUSED', '.nan'),
    ('nan', 'nan', 'nan'),
    ('NaN', 'NaN', 'NaN'),
    ('9223372036854775807', 9223372036854775807, '9223372036854775807'),
    ('9223372036854775808', 9.223372036854776e+18, 'REFUSED'),
    ('-9223372036854775808', -9223372036854775808, '-9223372036854775808'),
    ('-9223372036854775809', -9.223372036854776e+18, '-9.223372e+18'),
    ('18446744073709551615', 1.8446744073709552e+19, 'REFUSED'),
    ('18446744073709551616', 1.8446744073709552e+19, '1.8446744e+19'),
    ('99999999999999999999', 1e+20, '1e+20'),
    ('0x7FFFFFFFFFFFFFFF', 9223372036854775807, '9223372036854775807'),
    ('0x8000000000000000', 9.223372036854776e+18, 'REFUSED'),
    ('0xFFFFFFFFFFFFFFFF', 1.8446744073709552e+19, 'REFUSED'),
    ('0x10000000000000000', '0x10000000000000000', '0x10000000000000000'),
    ('0777777777777777777777777', 7.777777777777778e+23, '7.777778e+23'),
    ('1e21', 1e+21, '1e+21'),
    ('1e20', 1e+20, '1e+20'),
    ('1e19', 1e+19, '1e+19'),
    ('1e-7', 1e-07, '1e-07'),
    ('1e-6', 1e-06, '1e-06'),
    ('123456789.123', 123456789.123, '1.2345679e+08'),
    ('3.14159265358979', 3.14159265358979, '3.1415927'),
    ('1e400', '1e400', '1e400'),
    ('-1e400', '-1e400', '-1e400'),
    ('1e-400', 0, '0'),
    ('0.1', 0.1, '0.1'),
    ('100.0', 100, '100'),
    ('-0.0', 0, '-0'),
    ('0.0', 0, '0'),
    ('2001-12-14', '2001-12-14', '2001-12-14'),
    ('2001-12-14t21:59:43.10-05:00', '2001-12-14t21:59:43.10-05:00', '2001-12-14t21:59:43.10-05:00'),
    ('2001-12-14T21:59:43Z', '2001-12-14T21:59:43Z', '2001-12-14T21:59:43Z'),
    ('2001-12-14', '2001-12-14', '2001-12-14'),
    ('21:59:43.10', '21:59:43.10', '21:59:43.10'),
    ('2002-12-14', '2002-12-14', '2002-12-14'),
    ('2001-13-14', '2001-13-14', '2001-13-14'),
    ('2001-02-30', '2001-02-30', '2001-02-30'),
    ('20011-01-01', '20011-01-01', '20011-01-01'),
    ('2001-1-2', '2001-1-2', '2001-1-2'),
    ('abc', 'abc', 'abc'),
    ('0.5.6', '0.5.6', '0.5.6'),
    ('1,000', '1,000', '1,000'),
    ('$1', '$1', '$1'),
    ('@x', 'REFUSED', 'REFUSED'),
    ('`x', 'REFUSED', 'REFUSED'),
    ('1/2', '1/2', '1/2'),
    ('v1', 'v1', 'v1'),
    ('1.2.3', '1.2.3', '1.2.3'),
    ('0xZZ', '0xZZ', '0xZZ'),
    ('12e', '12e', '12e'),
    ('1_e3', 1000, '1000'),
    ('1e_3', 1000, '1000'),
    ('+-1', '+-1', '+-1'),
    ('--1', '--1', '--1'),
    ('0b-1', -1, '-1'),
    ('½', '½', '½'),
    ('""', '', ''),
    ("''", '', ''),
    ("'y'", 'y', 'y'),
    ('"1"', '1', '1'),
    ('!!str 1', '1', '1'),
    ('!!int "12"', 12, '12'),
    ('!!int 1.5', 'REFUSED', 'REFUSED'),
    ('!!float 1', 1, '1'),
    ('!!float "1"', 1, '1'),
    ('!!bool yes', True, 'true'),
    ('!!bool 1', 'REFUSED', 'REFUSED'),
    ('!!null ~', None, 'REFUSED'),
    ('!!null a', 'REFUSED', 'REFUSED'),
    ('!!binary aGVsbG8=', 'hello', 'hello'),
    ('!!binary "aGVs bG8="', 'REFUSED', 'REFUSED'),
    ('!!binary /w==', '�', '�'),
    ('!!timestamp 2001-01-01', '2001-01-01', '2001-01-01'),
    ('!!timestamp x', 'REFUSED', 'REFUSED'),
    ('!foo 12', '12', '12'),
    ('! 12', '12', '12'),
    ('!!str', '', 'REFUSED'),
    ('!!merge x', 'x', 'x'),
    ('!<tag:yaml.org,2002:int> 7', 7, '7'),
    ('!!int 0x1F', 31, '31'),
    ('!!float .inf', 'REFUSED', '.inf'),
    ('!!int 9223372036854775808', 9.223372036854776e+18, 'REFUSED'),
    ('"\\u00e9"', 'é', 'é'),
]


def read_one(text):
    [(_number, document)] = read_stream(text)
    return document


def same(actual, expected):
    """Equal, with ints and floats told apart (1 is not 1.0 on the wire) and NaN equal to itself."""
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    return actual == expected and type(actual) is type(expected)


@pytest.mark.parametrize("scalar,value,key", GO_YAML_V2_TABLE, ids=[row[0] for row in GO_YAML_V2_TABLE])
def test_scalar_as_value_and_as_key_is_what_kubectl_sends(scalar, value, key):
    doc = "apiVersion: v1\nkind: X\n"
    if value == "REFUSED":
        with pytest.raises(YamlError):
            read_one(f"{doc}v: {scalar}\n")
    else:
        assert same(read_one(f"{doc}v: {scalar}\n")["v"], value)
        assert same(read_one(f"{doc}v:\n- {scalar}\n")["v"][0], value)
    if key == "REFUSED":
        with pytest.raises(YamlError):
            read_one(f"{doc}{scalar}: v\n")
    else:
        document = read_one(f"{doc}{scalar}: v\n")
        assert list(document) == ["apiVersion", "kind", key] or set(document) == {"apiVersion", "kind", key}
        assert document[key] == "v"


def test_the_table_covers_what_the_brief_names():
    written = {row[0] for row in GO_YAML_V2_TABLE}
    assert {"y", "n", "on", "off", "0o17", "0b101", "1_000", ".5", "-.5", "1e3", ".inf", ".nan", "12:30",
            "=", "<<", "!!binary aGVsbG8=", "2001-12-14", "~"} <= written
    assert len(written) >= 150


class TestResolve:
    def test_explicit_tags(self):
        assert kubeyaml_scalars.resolve(kubeyaml_scalars.FLOAT_TAG, "1") == (kubeyaml_scalars.FLOAT_TAG, 1.0)
        assert kubeyaml_scalars.resolve(kubeyaml_scalars.STR_TAG, "1") == (kubeyaml_scalars.STR_TAG, "1")
        assert kubeyaml_scalars.resolve("!custom", "1") == ("!custom", "1")
        with pytest.raises(YamlError, match=r"cannot decode !!str \(3 characters, not shown\) as a !!int"):
            kubeyaml_scalars.resolve(kubeyaml_scalars.INT_TAG, "abc")

    def test_go_parse_int_and_uint(self):
        assert kubeyaml_scalars.go_parse_int("0x1F") == 31
        assert kubeyaml_scalars.go_parse_int("-0o17") == -15
        assert kubeyaml_scalars.go_parse_int("017") == 15
        assert kubeyaml_scalars.go_parse_int("08") is None
        assert kubeyaml_scalars.go_parse_int("9223372036854775808") is None
        assert kubeyaml_scalars.go_parse_uint("18446744073709551615") == 2 ** 64 - 1
        assert kubeyaml_scalars.go_parse_uint("18446744073709551616") is None
        assert kubeyaml_scalars.go_parse_uint("") is None
        assert kubeyaml_scalars.go_parse_int("-1", 2) == -1

    def test_timestamps(self):
        assert kubeyaml_scalars.is_timestamp("2024-02-29")
        assert not kubeyaml_scalars.is_timestamp("2023-02-29")
        assert kubeyaml_scalars.is_timestamp("2001-12-14T21:59:43.10-05:00")
        assert kubeyaml_scalars.is_timestamp("2001-12-14 21:59:43.10")
        assert not kubeyaml_scalars.is_timestamp("2001-12-14 25:00:00")
        assert not kubeyaml_scalars.is_timestamp("2001-12-14 21:59:43.10 -5")  # Go cannot parse this one

    def test_float32_key_formatting(self):
        cases = [(1e6, "1e+06"), (123456.0, "123456"), (0.0001, "0.0001"), (0.00001, "1e-05"),
                 (3.14159265358979, "3.1415927"), (1e39, ".inf"), (-1e39, "-.inf"), (-0.0, "-0"), (0.0, "0"),
                 (1.5, "1.5"), (1e21, "1e+21"), (100.0, "100"), (math.nan, ".nan"), (1.25e-7, "1.25e-07")]
        for value, text in cases:
            assert kubeyaml_json.format_float32_g(value) == text, value

    def test_json_number(self):
        assert kubeyaml_json.json_number(1000.0) == 1000 and isinstance(kubeyaml_json.json_number(1000.0), int)
        assert kubeyaml_json.json_number(9.2e18) == 9200000000000000000
        assert isinstance(kubeyaml_json.json_number(-9.223372036854775808e18), float)  # Go writes ...776000
        assert isinstance(kubeyaml_json.json_number(2 ** 63), float)
        assert kubeyaml_json.json_number(0.5) == 0.5
        with pytest.raises(YamlError, match="NaN"):
            kubeyaml_json.json_number(math.nan)
        with pytest.raises(YamlError, match=r"\+Inf"):
            kubeyaml_json.json_number(math.inf)

    def test_binary(self):
        assert kubeyaml_scalars.decode_binary("aGVs\nbG8=\n") == "hello"
        assert kubeyaml_scalars.decode_binary("/w==") == "\ufffd"
        assert kubeyaml_scalars.decode_binary("4oJB") == "\ufffd\ufffdA"  # each invalid byte on its own, as Go
        with pytest.raises(YamlError, match="invalid base64"):
            kubeyaml_scalars.decode_binary("aGVs bG8=")


class TestTaggedScalarsThatDoNotFit:
    """kubectl quotes such a scalar (cannot decode !!str `hunter2` as a !!int): it may be a
    Secret's value, printed in the Ansible output. We name the line, the tag and the fix only."""

    SECRET = "hunter2-s3cr3t"

    @pytest.mark.parametrize("tag, fits", [("!!int", "an integer"), ("!!float", "a number"),
                                           ("!!bool", "true or false"), ("!!null", "null"),
                                           ("!!timestamp", "a date or time")])
    def test_the_value_is_never_quoted(self, tag, fits):
        text = f"apiVersion: v1\nkind: Secret\nstringData:\n  p: {tag} {self.SECRET}\n"
        with pytest.raises(YamlError) as caught:
            read_stream(text)
        error = caught.value
        assert self.SECRET not in str(error) and self.SECRET not in error.fix
        assert str(error) == f"cannot decode !!str ({len(self.SECRET)} characters, not shown) as a {tag}"
        assert (error.line, error.column) == (3, 5)
        assert error.fix.startswith(f"drop the {tag} tag (quote the value to keep it as text), or write {fits}")

    @pytest.mark.parametrize("written", ["!!int '{}'", '!!bool "{}"', "!!float |\n    {}"])
    def test_quoted_and_block_values_are_not_quoted_either(self, written):
        text = "stringData:\n  p: " + written.format(self.SECRET) + "\n"
        with pytest.raises(YamlError) as caught:
            read_stream(text)
        assert self.SECRET not in str(caught.value)

    def test_a_key_is_not_quoted_either(self):
        with pytest.raises(YamlError) as caught:
            read_stream(f"data:\n  !!int {self.SECRET}: x\n")
        assert self.SECRET not in str(caught.value) and caught.value.line == 1

    def test_binary_that_is_not_base64(self):
        with pytest.raises(YamlError) as caught:
            read_stream(f"data:\n  p: !!binary {self.SECRET}!\n")
        error = caught.value
        assert self.SECRET not in str(error)
        assert str(error) == "!!binary value contains invalid base64 data (15 characters, not shown)"
        assert "base64" in error.fix and error.line == 1

    def test_the_input_error_names_the_source_line_tag_and_fix(self):
        from applyset.inputs import manifests
        from applyset.errors import InputErrors

        text = f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  p: !!int {self.SECRET}\n"
        with pytest.raises(InputErrors) as caught:
            manifests.load_definition(text, source="secrets.yaml")
        message = str(caught.value)
        assert self.SECRET not in message
        assert "secrets.yaml: YAML syntax error at line 6, column 6: cannot decode !!str (14 characters, " \
               "not shown) as a !!int. Fix: drop the !!int tag" in message


class TestMappings:
    def test_merge_keys_apply_in_order_later_wins(self):
        # go-yaml v2 sets the merged keys where "<<" stands; YAML 1.1 would let "a: 1" win.
        assert read_one("a: 1\n<<: {a: 2, b: 3}\n") == {"a": 2, "b": 3}
        assert read_one("<<: {a: 2, b: 3}\na: 1\n") == {"a": 1, "b": 3}

    def test_merge_list_earlier_maps_win(self):
        text = "b: &b {a: 1, b: 2}\no: &o {b: 3, c: 4}\nm:\n  <<: [*b, *o]\n  d: 5\n"
        assert read_one(text)["m"] == {"a": 1, "b": 2, "c": 4, "d": 5}

    def test_merge_needs_maps(self):
        with pytest.raises(YamlError, match="map merge requires map or sequence of maps"):
            read_one("m:\n  <<: 1\n")
        with pytest.raises(YamlError, match="map merge requires"):
            read_one("m:\n  <<: [1]\n")

    def test_quoted_merge_key_is_an_ordinary_key_and_tagged_one_merges(self):
        assert read_one("m:\n  '<<': 1\n") == {"m": {"<<": 1}}
        assert read_one("m:\n  !!merge <<: {x: 1}\n") == {"m": {"x": 1}}
        assert read_one("v: <<\n") == {"v": "<<"}

    def test_duplicate_keys_are_refused_with_their_line(self):
        with pytest.raises(YamlError, match="found duplicate key 'a'") as raised:
            read_one("x: 0\na: 1\na: 2\n")
        assert raised.value.line == 2
        with pytest.raises(YamlError, match="duplicate key"):
            read_one("a: 1\n<<: {b: 1}\na: 2\n")
        with pytest.raises(YamlError, match="found duplicate key '31'"):  # both are the Go int 31
            read_one("0x1F: a\n31: b\n")

    def test_keys_that_become_the_same_json_key_are_refused(self):
        for text in ("1: a\n'1': b\n", "true: a\n'true': b\n", "m:\n  <<: {1: a}\n  '1': b\n", "1.0: a\n1: b\n"):
            with pytest.raises(YamlError, match="are both the JSON key"):
                read_one(text)

    def test_merged_key_may_be_overridden_by_the_same_go_key(self):
        assert read_one("m:\n  <<: {1: a}\n  1: b\n") == {"m": {"1": "b"}}

    def test_anchors_may_be_redefined_as_go_yaml_allows(self):
        assert read_one("a: &x 1\nb: &x 2\nc: *x\n") == {"a": 1, "b": 2, "c": 2}

    def test_loops_and_invalid_keys_are_refused(self):
        with pytest.raises(YamlError, match="anchor value contains itself"):
            read_one("a: &x [*x]\n")
        with pytest.raises(YamlError, match="anchor value contains itself"):
            read_one("a: &x {b: {<<: *x}}\n")
        with pytest.raises(YamlError, match="invalid map key"):
            read_one("? [a, b]\n: 1\n")
        with pytest.raises(YamlError, match="null key"):
            read_one("~: 1\n")
        with pytest.raises(YamlError, match="uint64"):
            read_one("18446744073709551615: a\n")

    def test_shared_anchors_stay_shared(self):
        document = read_one("a: &x {k: v}\nb: *x\n")
        assert document["a"] is document["b"]

    def test_tags_on_collections_are_ignored(self):
        assert read_one("v: !foo {a: 1}\nw: !!str [1]\nx: !!python/object/apply:os.system [id]\n") == \
            {"v": {"a": 1}, "w": [1], "x": ["id"]}

    def test_non_specific_tag_keeps_the_text(self):
        assert read_one("a: ! 12\nb: &n ! true\n! 1: x\nc: !foo 12\n") == {"a": "12", "b": "true", "1": "x", "c": "12"}

    def test_alias_expansion_is_limited(self, monkeypatch):
        monkeypatch.setattr(kubeyaml, "MAX_EXPANDED_VALUES", 10)
        with pytest.raises(YamlError, match="expands through YAML aliases to 18 values"):
            read_one("a: &a [1, 2, 3]\nb: [*a, *a, *a]\n")

    def test_deep_nesting_is_an_error_not_a_crash(self):
        with pytest.raises(YamlError):
            read_one("a: " + "[" * 5000 + "]" * 5000 + "\n")


class TestStreams:
    def test_documents_are_numbered_as_written(self):
        text = "---\na: 1\n---\n---\n# comment\n---\nb: 2\n...\n"
        assert read_stream(text) == [(1, {"a": 1}), (4, {"b": 2})]
        assert read_stream("a: 1\n--- # c\nb: 2\n---#c\nc: 3\n") == [(1, {"a": 1}), (2, {"b": 2}), (3, {"c": 3})]
        assert read_stream("") == [] and read_stream("# nothing\n") == [] and read_stream("---\n~\n") == []

    def test_separator_with_content_is_refused_as_kubectl_does(self):
        for text in ("a: 1\n--- !!map\nb: 2\n", "a: 1\n----\nb: 2\n", "--- {a: 1}\n"):
            with pytest.raises(YamlError, match="invalid YAML document separator"):
                read_stream(text)

    def test_text_after_a_document_end_marker_is_ignored_as_go_yaml_does(self):
        assert read_stream("a: 1\n...\nb: 2\n") == [(1, {"a": 1})]
        assert read_stream("a: 1\n...\ngarbage: [\n") == [(1, {"a": 1})]
        assert read_stream("a: 1\n...\n---\nb: 2\n") == [(1, {"a": 1}), (2, {"b": 2})]

    def test_directives_and_crlf(self):
        # kubectl cuts before go-yaml sees the directive, so "%YAML 1.1" stands alone and fails.
        with pytest.raises(YamlError, match="did not find expected <document start>"):
            read_stream("%YAML 1.1\n---\na: 1\n")
        assert read_stream("a: 1\r\n---\r\nb: |\r\n  x\r\n  y\r\n") == [(1, {"a": 1}), (2, {"b": "x\ny\n"})]

    def test_separator_lines_inside_block_scalars_stay_text(self):
        assert read_one("v: |\n  one\n  ---\n  three\n") == {"v": "one\n---\nthree\n"}

    def test_errors_carry_the_line_in_the_whole_stream(self):
        with pytest.raises(YamlError) as raised:
            read_stream("a: 1\n---\nb: 2\n--- # x\nc: [\n")
        assert raised.value.line == 5
        with pytest.raises(YamlError) as raised:  # the chunk-by-chunk path (a "..." line)
            read_stream("a: 1\n...\n---\nb: 2\n---\nc: [\n")
        assert raised.value.line == 6
        with pytest.raises(YamlError) as raised:
            read_stream("a: 1\n---\nb:\n\tc: 1\n")
        assert raised.value.line == 3

    def test_one_pass_and_chunk_by_chunk_agree(self):
        text = "a: &x {k: 1}\nb: *x\n---\n- 1\n---\n\n---\nc: 0x1F\nd: y\n"
        one_pass = read_stream(text)
        chunked = read_stream(text.replace("---\n- 1", "---#c\n- 1"))  # forces chunk by chunk
        assert one_pass == chunked == [(1, {"a": {"k": 1}, "b": {"k": 1}}), (2, [1]), (4, {"c": 31, "d": True})]

    def test_byte_order_mark_is_dropped(self):
        assert read_stream("\ufeffa: 1\n") == [(1, {"a": 1})]


class TestJsonStreams:
    def test_several_json_objects(self):
        text = '{"a": 1.0, "b": 1e3, "c": 12345678901234567890, "d": 1.5}\n{"e": null}  {"f": [1]}\n'
        assert read_stream(text) == [(1, {"a": 1, "b": 1000, "c": 12345678901234567890.0, "d": 1.5}),
                                     (2, {"e": None}), (3, {"f": [1]})]

    def test_json_then_yaml(self):
        assert read_stream('{"a": 1}\n---\nb: y\n') == [(1, {"a": 1}), (2, {"b": True})]

    def test_yaml_flow_mapping_is_read_as_yaml(self):
        assert read_stream("{a: y, b: 0o17}\n") == [(1, {"a": True, "b": 15})]

    def test_third_bad_value_is_a_json_error(self):
        with pytest.raises(YamlError, match="JSON syntax error") as raised:
            read_stream('{"a": 1} {"b": 2} garbage\n')
        assert raised.value.line == 0

    def test_neither_json_nor_yaml(self):
        with pytest.raises(YamlError, match=r"JSON syntax error.*read as YAML instead: line 1"):
            read_stream('{"a": [}\n')

    def test_duplicate_keys_nan_and_huge_numbers_are_refused(self):
        with pytest.raises(YamlError, match="duplicate key 'a'"):
            read_stream('{"a": 1, "a": 2}')
        with pytest.raises(YamlError, match="out of range"):
            read_stream('{"a": 1e400}')
        with pytest.raises(YamlError):
            read_stream('{"a": NaN, "b": [}')

    def test_null_values_are_skipped_but_counted(self):
        assert read_stream('{"a": 1}\nnull\n{"b": 2}\n') == [(1, {"a": 1}), (3, {"b": 2})]


class TestToJsonValue:
    def test_keys_and_numbers(self):
        value = {2: [1.0, 0.5, 2 ** 64], True: None, 1.5: "x", "s": (1, 2)}
        assert kubeyaml_json.to_json_value(value) == {"2": [1, 0.5, float(2 ** 64)], "true": None, "1.5": "x", "s": [1, 2]}

    def test_unchanged_values_are_returned_as_they_are(self):
        value = {"a": [1, {"b": "c"}], "d": 0.5}
        assert kubeyaml_json.to_json_value(value) is value

    def test_refused_values_name_their_path(self):
        with pytest.raises(YamlError, match=r"^value.a\[1\]: json: unsupported value: \+Inf$"):
            kubeyaml_json.to_json_value({"a": [1, math.inf]})
        with pytest.raises(YamlError, match="a set cannot be sent as JSON"):
            kubeyaml_json.to_json_value({"a": {1, 2}})
        with pytest.raises(YamlError, match="both the JSON key '1'"):
            kubeyaml_json.to_json_value({"1": "a", 1: "b"})


def test_pure_python_reader_gives_the_same_values(monkeypatch):
    text = "a: &x {k: y}\nb: *x\nc: [0x1F, 1e3, ! 12, !!binary aGk=]\n---\nd: 2001-01-01\n"
    expected = read_stream(text)
    pure = type("PurePython", (kubeyaml._NodeLoaderMixin, yaml.SafeLoader), {})
    monkeypatch.setattr(kubeyaml, "_NodeLoader", pure)
    assert read_stream(text) == expected
    assert json.dumps(expected[0][1]) == '{"a": {"k": true}, "b": {"k": true}, "c": [31, 1000, "12", "hi"]}'
