"""Read YAML and JSON manifests the way kubectl reads them.

kubectl reads every file, and standard input, with k8s.io/apimachinery's YAMLOrJSONDecoder:

* a stream whose first non-blank character is ``{`` is a sequence of JSON values; when the first
  or second value is not valid JSON, the rest of the stream is read as YAML;
* anything else is cut into documents at every line that starts with ``---`` (only spaces and a
  comment may follow on that line), and each document is converted to JSON by sigs.k8s.io/yaml.
  That parses it with go-yaml v2, whose resolver follows YAML 1.1 with its own twists: ``y``,
  ``n``, ``on``, ``off`` are booleans, integers may be written in bases 2, 8 and 16 and with
  ``_``, ``12:30`` (a base-60 number to YAML 1.1) stays a string, ``=`` is a plain string,
  merge keys (``<<``) are applied in the order they appear, ``!!binary`` is decoded, and
  timestamps stay strings. Map keys that are not strings become strings (``1``, ``true``);
* the JSON is then decoded with integers kept as 64-bit integers, and sent again as JSON. So a
  float that is a whole number (``1e3``) reaches the server as the integer ``1000``, an integer
  beyond 64 bits as a float, and NaN or infinity cannot be sent at all.

This module does the same on top of PyYAML's parser (libyaml; go-yaml v2 is a port of libyaml),
so the objects we send are the objects kubectl sends. The rules are go-yaml v2's ``resolve.go``
and ``decode.go`` and sigs.k8s.io/yaml's ``yaml.go``; the names below follow them.
"""

import base64
import binascii
import codecs
import decimal
import json
import math
import re
import struct

try:
    import yaml
except ImportError as error:
    # PyYAML is a requirement (requirements.txt). Without it this file still imports, so that
    # the modules can report the missing library: they fail with YAML_IMPORT_ERROR.
    yaml = None
    YAML_IMPORT_ERROR = error
else:
    YAML_IMPORT_ERROR = None


_TAG = "tag:yaml.org,2002:"
STR_TAG, BOOL_TAG, INT_TAG, FLOAT_TAG = _TAG + "str", _TAG + "bool", _TAG + "int", _TAG + "float"
NULL_TAG, TIMESTAMP_TAG, BINARY_TAG, MERGE_TAG = _TAG + "null", _TAG + "timestamp", _TAG + "binary", _TAG + "merge"
MAP_TAG, SEQ_TAG = _TAG + "map", _TAG + "seq"
# What our resolver gives a plain (unquoted, untagged) scalar; the builder resolves it the go-yaml
# v2 way. PyYAML's own resolver is never used: it knows YAML 1.1 in another dialect.
PLAIN_TAG = "tag:applyset.kubernetes,2025:plain"

# go-yaml v2 resolves only these tags; any other (a custom "!foo", !!binary) keeps the text.
_RESOLVABLE_TAGS = frozenset({"", STR_TAG, BOOL_TAG, INT_TAG, FLOAT_TAG, NULL_TAG, TIMESTAMP_TAG})

# resolveMap of resolve.go: words that are looked up before anything else.
_RESOLVE_MAP = {}
for _value, _tag, _words in (
        (True, BOOL_TAG, "y Y yes Yes YES true True TRUE on On ON"),
        (False, BOOL_TAG, "n N no No NO false False FALSE off Off OFF"),
        (None, NULL_TAG, "~ null Null NULL"),
        (math.nan, FLOAT_TAG, ".nan .NaN .NAN"),
        (math.inf, FLOAT_TAG, ".inf .Inf .INF +.inf +.Inf +.INF"),
        (-math.inf, FLOAT_TAG, "-.inf -.Inf -.INF"),
        ("<<", MERGE_TAG, "<<")):
    for _word in _words.split():
        _RESOLVE_MAP[_word] = (_tag, _value)
_RESOLVE_MAP[""] = (NULL_TAG, None)

# resolveTable of resolve.go: the first character says what a plain scalar may be. Anything
# else (letters other than these, quotes, '=', '_', any non-ASCII character) is a string.
_HINTS = {**{c: "S" for c in "+-"}, **{c: "D" for c in "0123456789"},
          **{c: "M" for c in "yYnNtTfFoO~"}, ".": "."}

_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
# What Go's strconv.ParseFloat accepts from a text that starts with ".".
_DOT_FLOAT = re.compile(r"\.[0-9_]+([eE][-+]?[0-9_]+)?")
# The layouts go-yaml v2 tries (allowedTimestampFormats); only an explicit !!timestamp needs them,
# since a plain timestamp stays the text it was.
_TIMESTAMP = re.compile(
    r"(?P<y>[0-9]{4})-(?P<m>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"(?:(?:[Tt](?P<t1>[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]+)?)(?:Z|[-+][0-9]{2}:[0-9]{2}))"
    r"|(?: (?P<t2>[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]+)?)))?")

INT64_MIN, INT64_MAX, UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1


class Uint64(int):
    """An integer above int64's range as go-yaml v2 gives it (uint64): JSON turns it into a float."""


class YamlError(ValueError):
    """A document kubectl would refuse, with the 0-based line (and column) it is about.

    Args:
        message: what is wrong. It never quotes a scalar's value: the value may be a Secret's.
        line, column: 0-based position in the whole stream, when known.
        fix: what to write instead, when it is more precise than "correct the YAML there".
    """

    def __init__(self, message, line=None, column=None, fix=None):
        super().__init__(message)
        self.line = line
        self.column = column
        self.fix = fix


# --------------------------------------------------------------------------------------------
# Scalars: go-yaml v2's resolve()


def resolve(tag, text):
    """Resolve a scalar as go-yaml v2's ``resolve(tag, in)`` does.

    ``tag`` is the scalar's explicit tag in long form, or "" for a plain scalar. Returns
    ``(resolved tag, value)``: the value is a bool, int (``Uint64`` above int64), float, None
    or the text itself (strings, timestamps, merge keys, unresolvable tags). Raises
    ``YamlError`` when an explicit tag does not fit the text (``!!int abc``).
    """
    if tag not in _RESOLVABLE_TAGS:
        return tag, text
    rtag, value = STR_TAG, text
    hint = _HINTS.get(text[0]) if text else "N"
    if hint and tag != STR_TAG:
        found = _RESOLVE_MAP.get(text)
        if found is not None:
            rtag, value = found
        elif hint == ".":
            number = _parse_dot_float(text)
            if number is not None:
                rtag, value = FLOAT_TAG, number
        elif hint in "DS":
            rtag, value = _resolve_number(tag, text)
    if tag in ("", rtag, STR_TAG):
        return rtag, value
    if tag == FLOAT_TAG and rtag == INT_TAG:
        return FLOAT_TAG, float(value)
    # kubectl quotes the text here; we give its length only: it may be a Secret's value.
    raise YamlError(f"cannot decode {_short(rtag)} ({_characters(text)}, not shown) as a {_short(tag)}",
                    fix=f"drop the {_short(tag)} tag (quote the value to keep it as text), or write "
                        f"{_WHAT_FITS[tag]} there")


# What a value with an explicit tag must look like, for the fix of a value that does not fit.
_WHAT_FITS = {BOOL_TAG: "true or false", INT_TAG: "an integer", FLOAT_TAG: "a number", NULL_TAG: "null",
              TIMESTAMP_TAG: "a date or time such as 2001-12-14T21:59:43Z"}


def _characters(text):
    return "1 character" if len(text) == 1 else f"{len(text)} characters"


def _resolve_number(tag, text):
    """The 'D' and 'S' branch of resolve(): timestamp, int, uint, float, or the text."""
    if tag in ("", TIMESTAMP_TAG) and is_timestamp(text):
        return TIMESTAMP_TAG, text  # decoded into interface{}, a timestamp is its text
    plain = text.replace("_", "")
    number = go_parse_int(plain)
    if number is not None:
        return INT_TAG, number
    number = go_parse_uint(plain)
    if number is not None:
        return INT_TAG, Uint64(number)
    if _YAML_STYLE_FLOAT.fullmatch(plain):
        number = float(plain)
        if not math.isinf(number):  # ParseFloat fails on overflow: the text stays a string
            return FLOAT_TAG, number
    # Last, resolve.go reads what follows "0b" in base 2, where a sign is allowed: 0b-1 is -1.
    if plain.startswith("0b"):
        number = go_parse_int(plain[2:], 2)
        if number is not None:
            return INT_TAG, number
        number = go_parse_uint(plain[2:], 2)
        if number is not None:
            return INT_TAG, Uint64(number)
    elif plain.startswith("-0b"):
        number = go_parse_int("-" + plain[3:], 2)
        if number is not None:
            return INT_TAG, number
    return STR_TAG, text


def _parse_dot_float(text):
    """Go's strconv.ParseFloat for a text that starts with '.' (None when it refuses)."""
    if not _DOT_FLOAT.fullmatch(text) or not _underscores_ok(text):
        return None
    number = float(text.replace("_", ""))
    return None if math.isinf(number) else number


def _underscores_ok(text):
    """Go's underscoreOK: '_' only between digits (or after a base prefix)."""
    saw = "^"
    if text[:1] in ("+", "-"):
        text = text[1:]
    start, hexadecimal = 0, False
    if len(text) >= 2 and text[0] == "0" and text[1] in "bBoOxX":
        start, saw, hexadecimal = 2, "0", text[1] in "xX"
    for char in text[start:]:
        if char.isdigit() and char.isascii() or hexadecimal and char in "abcdefABCDEF":
            saw = "0"
        elif char == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


def go_parse_uint(text, base=0):
    """Go's strconv.ParseUint(text, base, 64): the value, or None where Go returns an error.

    ``base`` 0 reads the prefixes 0b, 0o, 0x, and 0 (octal) of ``text``.
    """
    if not text:
        return None
    digits = text
    if base == 0:
        base = 10
        if text[0] == "0":
            prefix = text[1:2].lower()
            if len(text) >= 3 and prefix in ("b", "o", "x"):
                base, digits = {"b": 2, "o": 8, "x": 16}[prefix], text[2:]
            else:
                base, digits = 8, text[1:]
    value = 0
    for char in digits:
        digit = _DIGIT_VALUES.get(char)
        if digit is None or digit >= base:
            return None
        value = value * base + digit
    return value if value <= UINT64_MAX else None


_DIGIT_VALUES = {c: int(c, 36) for c in "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"}


def go_parse_int(text, base=0):
    """Go's strconv.ParseInt(text, base, 64): an optional sign, then ``go_parse_uint``'s syntax;
    None outside int64."""
    negative = text[:1] == "-"
    unsigned = go_parse_uint(text[1:] if text[:1] in ("+", "-") else text, base)
    if unsigned is None:
        return None
    value = 0 - unsigned if negative else unsigned
    return value if INT64_MIN <= value <= INT64_MAX else None


def is_timestamp(text):
    """Whether go-yaml v2 reads ``text`` as a timestamp (one of its four layouts)."""
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return False
    month, day = int(match["m"]), int(match["d"])
    if not 1 <= month <= 12 or not 1 <= day <= _days_in_month(int(match["y"]), month):
        return False
    clock = match["t1"] or match["t2"]
    if clock:
        hour, minute, second = (float(part) for part in clock.split(":"))
        return hour < 24 and minute < 60 and second < 60
    return True


def _days_in_month(year, month):
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _short(tag):
    return "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag


def decode_binary(text):
    """The !!binary scalar ``text`` as go-yaml v2 decodes it: base64 (line breaks ignored) to a string.

    Go keeps the bytes; JSON then replaces each byte that is not valid UTF-8 by U+FFFD.
    Raises ``YamlError`` when ``text`` is not base64; the message gives its length, not the text.
    """
    try:
        data = base64.b64decode(text.replace("\n", "").replace("\r", ""), validate=True)
    except (binascii.Error, ValueError):
        raise YamlError(f"!!binary value contains invalid base64 data ({_characters(text)}, not shown)",
                        fix="write the base64 of the bytes (base64 -w0 FILE), or drop the !!binary tag "
                            "to keep the text") from None
    return data.decode("utf-8", errors="applyset-go-replace")


def _replace_each_byte(error):
    # Go's JSON encoder replaces every invalid byte on its own; Python's "replace" would
    # replace a broken multi-byte sequence as a whole.
    return "\ufffd", error.start + 1


codecs.register_error("applyset-go-replace", _replace_each_byte)


# --------------------------------------------------------------------------------------------
# JSON: what sigs.k8s.io/yaml and kubectl's JSON round trip make of values and keys


def json_number(value):
    """The number ``value`` as the server receives it from kubectl (after Go's JSON round trip).

    Whole floats become ints (Go writes 1000.0 as 1000, read back as an int64), ints beyond
    int64 become floats. NaN and infinity cannot be written as JSON: ``YamlError``.
    """
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise YamlError(f"json: unsupported value: {_go_float_name(value)}")
        if value.is_integer() and abs(value) < 1e21:
            # Go writes the shortest digits that give the float back, padded with zeros
            # (9.2e18 as 9200000000000000000); that text is read back as an int64 if it fits.
            whole = int(decimal.Decimal(repr(value)))
            if INT64_MIN <= whole <= INT64_MAX:
                return whole
        return value
    if INT64_MIN <= value <= INT64_MAX:
        return int(value)
    return float(value)


def _go_float_name(value):
    if math.isnan(value):
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


def json_key(value):
    """The map key ``value`` (a resolved scalar) as sigs.k8s.io/yaml turns it into a JSON key (a string).

    Raises ``YamlError`` for the key types it refuses: null and integers beyond int64.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Uint64) or isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        raise YamlError(f"unsupported map key of type: uint64, key: {value}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float32_g(value)
    raise YamlError("unsupported map key of type: <nil> (a null key such as ~, null or an empty key)"
                    if value is None else f"unsupported map key of type: {type(value).__name__}")


def format_float32_g(value):
    """Go's strconv.FormatFloat(value, 'g', -1, 32), as sigs.k8s.io/yaml formats float keys."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    for precision in range(1, 10):  # the shortest digits that give the float32 back
        text = f"{abs(single):.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == abs(single):
            break
    mantissa, _e, exponent = text.partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    exponent = int(exponent)
    sign = "-" if single < 0 else ""
    if exponent < -4 or exponent >= 6:  # %e form; Go writes at least two exponent digits
        fraction = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{fraction}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    point = exponent + 1
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def to_json_value(value, where="value"):
    """Normalise an already parsed ``value`` (a dict from a playbook) as kubectl's JSON would.

    Keys become strings (``json_key``), numbers what the server receives (``json_number``).
    Containers are copied only where something changes, so ready values come back as they
    are. Raises ``YamlError`` naming the path of a value that cannot be sent, from ``where``
    (``value``, ``the object``) down: ``the object.spec.x``.
    """
    if isinstance(value, dict):
        result = None
        for number, (key, item) in enumerate(value.items()):
            text = key if key.__class__ is str else _json_key_at(key, where)
            new = to_json_value(item, f"{where}.{text}")
            if result is None and (text is not key or new is not item):
                result = dict(list(value.items())[:number])  # the unchanged entries so far
            if result is not None:
                if text in result:
                    raise YamlError(f"{where}: two keys are both the JSON key {text!r} (e.g. 1 and \"1\")")
                result[text] = new
        return value if result is None else result
    if isinstance(value, list):
        items = [to_json_value(item, f"{where}[{number}]") for number, item in enumerate(value)]
        return value if all(new is old for new, old in zip(items, value)) else items
    if isinstance(value, tuple):
        return [to_json_value(item, f"{where}[{number}]") for number, item in enumerate(value)]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        try:
            number = json_number(value)
        except YamlError as error:
            raise YamlError(f"{where}: {error}") from None
        return value if number == value and type(number) is type(value) else number
    raise YamlError(f"{where}: a {type(value).__name__} cannot be sent as JSON")


def _json_key_at(key, where):
    try:
        return json_key(key)
    except YamlError as error:
        raise YamlError(f"{where}: {error}") from None


# --------------------------------------------------------------------------------------------
# Documents: go-yaml v2's decode of one document, on PyYAML's node graph

_MAX_CACHED_SCALARS = 50_000
# Manifests repeat the same plain scalars (keys above all) thousands of times; they are resolved
# once. Values are stored ready to send, or as the YamlError to raise where they are used.
_plain_values = {}
_plain_keys = {}


def _plain_value(text):
    found = _plain_values.get(text, _MISSING)
    if found is _MISSING:
        if len(_plain_values) > _MAX_CACHED_SCALARS:
            _plain_values.clear()
        _tag, value = resolve("", text)
        try:
            found = json_number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
                else value
        except YamlError as error:
            found = error
        _plain_values[text] = found
    return found


def _plain_key(text):
    """(JSON key, identity of the Go key) of a plain scalar key, or the YamlError it raises."""
    found = _plain_keys.get(text)
    if found is None:
        if len(_plain_keys) > _MAX_CACHED_SCALARS:
            _plain_keys.clear()
        _tag, value = resolve("", text)
        try:
            found = (json_key(value), _identity(value))
        except YamlError as error:
            found = error
        _plain_keys[text] = found
    return found


def _identity(value):
    """What makes two Go map keys the same key: strings by value, others by type and value."""
    return value if isinstance(value, str) else (type(value).__name__, value)


class _Builder:
    """Build one document's value from PyYAML nodes with go-yaml v2's decoding rules.

    Differences from PyYAML's constructor: scalars resolve by ``resolve``; merge keys are
    applied where they appear (a later key, merged or not, replaces an earlier one, as in
    go-yaml v2, whereas YAML 1.1 lets explicit keys win); tags on mappings and sequences are
    ignored; keys become JSON strings. Kept from our loader before: a key given twice in one
    mapping is refused, where go-yaml v2 silently keeps the last one; and so are two keys that
    become the same JSON key (``1`` and ``"1"``), of which kubectl keeps either one.
    """

    def __init__(self, source, anchors):
        self._source = source  # the text parsed, to tell "! 12" from "12"
        self._anchors = anchors  # the text may have anchors: nodes can be shared, even loop
        self._built = {}  # id(node) -> value, so an alias is built once
        self._building = set()  # ids of the collections being built: an alias to one is a loop
        self._origins = {}  # id(mapping) -> {key: (Go key, text)} for keys that were no strings

    def value(self, node):
        if node.__class__ is yaml.ScalarNode:
            if node.tag == PLAIN_TAG:
                value = _plain_values.get(node.value, _MISSING)
                if value.__class__ is str:
                    return value
            return self._scalar(node)
        if self._anchors:
            return self._shared(node)
        if node.__class__ is yaml.MappingNode:
            result = {}
            self._fill(node, result)
            return result
        value = self.value
        return [value(item) for item in node.value]

    def _shared(self, node):
        """A collection in a text with anchors: built once, and never inside itself."""
        known = self._built.get(id(node))
        if known is not None:
            return known
        if id(node) in self._building:
            raise _error_at(node, "anchor value contains itself")
        self._building.add(id(node))
        try:
            if node.__class__ is yaml.MappingNode:
                result = {}
                self._fill(node, result)
            else:
                result = [self.value(item) for item in node.value]
        finally:
            self._building.discard(id(node))
        self._built[id(node)] = result
        return result

    def _scalar(self, node):
        tag = node.tag
        if tag == PLAIN_TAG:
            value = _plain_value(node.value)
            if value.__class__ is str:
                return value
            if self._non_specific(node):
                return node.value
            if value.__class__ is YamlError:
                raise _error_at(node, str(value))
            return value
        if tag == STR_TAG:
            return node.value
        try:
            rtag, value = resolve(tag, node.value)
            if rtag == BINARY_TAG:
                return decode_binary(value)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return json_number(value)
        except YamlError as error:
            raise _error_of_scalar(node, error) from None
        return value

    def _key(self, node):
        """(JSON key, identity of the Go key) of a key node."""
        if node.__class__ is not yaml.ScalarNode:
            raise _error_at(node, "invalid map key: a mapping or a sequence cannot be a key")
        tag = node.tag
        if tag == PLAIN_TAG:
            found = _plain_key(node.value)
            if found.__class__ is not tuple or found[1].__class__ is not str:
                if self._non_specific(node):
                    return node.value, node.value
                if found.__class__ is YamlError:
                    raise _error_at(node, str(found))
            return found
        if tag == STR_TAG:
            return node.value, node.value
        try:
            rtag, value = resolve(tag, node.value)
            if rtag == BINARY_TAG:
                value = decode_binary(value)
            return json_key(value), _identity(value)
        except YamlError as error:
            raise _error_of_scalar(node, error) from None

    def _non_specific(self, node):
        """Whether a plain-looking scalar was written with the tag "!": go-yaml v2 keeps its text.

        PyYAML resolves "! 12" like "12"; the tag shows only in the text, where the node
        starts (after its anchor, if any).
        """
        source, index = self._source, node.start_mark.index
        if source[index:index + 1] == "&":
            while index < len(source) and source[index] not in " \t\n":
                index += 1
            while source[index:index + 1] in (" ", "\t", "\n"):
                index += 1
        return source[index:index + 1] == "!"

    def _fill(self, node, target):
        """Set the entries of mapping ``node`` into ``target`` in order, merges included."""
        value, key_of = self.value, self._key
        for key_node, value_node in node.value:
            if key_node.value == "<<" and _is_merge(key_node):
                self._merge(value_node, target)
                continue
            key, identity = key_of(key_node)
            if key in target:
                self._check_override(node, key_node, key, identity, target)
            elif identity is not key:
                self._origins.setdefault(id(target), {})[key] = (identity, key_node.value)
            target[key] = value(value_node)

    def _check_override(self, node, key_node, key, identity, target):
        """A key that ``target`` has already: fine only if a merge set it, for the same Go key."""
        earlier, written = self._origins.get(id(target), {}).get(key, (key, key))
        if earlier != identity:
            raise _error_at(key_node, f"the keys {written!r} and {key_node.value!r} are both the JSON key "
                                      f"{key!r}; kubectl would keep either one")
        for other, _value in node.value:
            if other is key_node:
                break
            if not _is_merge(other) and self._key(other) == (key, identity):
                raise _error_at(key_node, f"found duplicate key {key_node.value!r}",
                                context="while constructing a mapping")

    def _merge(self, node, target):
        """go-yaml v2's merge(): a mapping, or a list of them where earlier ones win."""
        if node.__class__ is yaml.MappingNode:
            sources = [node]
        elif node.__class__ is yaml.SequenceNode:
            sources = list(reversed(node.value))
        else:
            sources = [None]
        for source in sources:
            if source is None or source.__class__ is not yaml.MappingNode:
                raise _error_at(node, "map merge requires map or sequence of maps as the value")
            if id(source) in self._building:
                raise _error_at(source, "anchor value contains itself")
            self._building.add(id(source))
            try:
                self._fill(source, target)
            finally:
                self._building.discard(id(source))


_MISSING = object()


def _is_merge(node):
    # go-yaml v2: a plain "<<" or one tagged !!merge; a quoted "<<" is an ordinary key.
    return node.__class__ is yaml.ScalarNode and node.value == "<<" and node.tag in (PLAIN_TAG, MERGE_TAG)


def _error_at(node, message, context=None, fix=None):
    mark = node.start_mark
    return YamlError(f"{message} ({context})" if context else message, mark.line, mark.column, fix)


def _error_of_scalar(node, error):
    """``error`` of resolving or decoding ``node``'s text, placed at the node."""
    return _error_at(node, str(error), fix=error.fix)


class _NodeLoaderMixin:
    """PyYAML's parser and composer with no resolver of their own (the builder resolves)."""

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode:
            return PLAIN_TAG if implicit[0] else STR_TAG
        return MAP_TAG if kind is yaml.MappingNode else SEQ_TAG

    # No path resolvers, so the composer's path tracking can be skipped.
    def descend_resolver(self, current_node, current_index):
        pass

    def ascend_resolver(self):
        pass


class _RedefiningComposer:
    """go-yaml v2 lets an anchor be defined again (later aliases mean the new one); PyYAML
    refuses. Only the pure-Python composer can be taught that, so it reads such documents."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if not isinstance(event, yaml.AliasEvent) and getattr(event, "anchor", None) is not None:
            self.anchors.pop(event.anchor, None)
        return super().compose_node(parent, index)


if yaml is not None:
    class _NodeLoader(_NodeLoaderMixin, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        """libyaml's parser and composer when installed (fast), else PyYAML's."""

    class _RedefiningNodeLoader(_RedefiningComposer, _NodeLoaderMixin, yaml.SafeLoader):
        """Pure-Python reading for documents that define an anchor twice."""


# --------------------------------------------------------------------------------------------
# Streams: kubectl's document splitting and JSON sniffing

# A line that starts with "---" ends a document; only blanks and a comment may follow.
_SEPARATOR = re.compile(r"^---(.*)$", re.MULTILINE)
# Lines after which PyYAML would cut documents differently from kubectl: "..." (document end)
# and directives. When a stream has none, it can be read in one pass.
_ONE_PASS_BREAKERS = re.compile(r"^(\.\.\.|%)", re.MULTILINE)
# Aliases share one object when loaded but are copied when sent; a small document can
# stand for billions of values ("billion laughs"). No real manifest comes near this.
MAX_EXPANDED_VALUES = 1_000_000
# kubectl looks at this much of a stream to decide whether it is JSON.
JSON_SNIFF_LENGTH = 4096


def read_stream(text):
    """Read the manifest stream ``text`` as kubectl does: ``[(document number, value), ...]``.

    Empty documents (nothing, only comments, ``null``) are left out; numbers count the
    documents as written, so that errors can name them. Raises ``YamlError`` with the 0-based
    line of the problem when the stream cannot be read (the document number is in the message
    only when no line is known).
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    if text[:JSON_SNIFF_LENGTH].lstrip().startswith("{"):
        return _read_json_stream(text)
    return _read_yaml_stream(text)


def _read_yaml_stream(text, first_number=1):
    text = text.replace("\r\n", "\n")
    separators = []  # (0-based line, match) of each separator line
    line, position = 0, 0
    one_pass = not _ONE_PASS_BREAKERS.search(text)
    for match in _SEPARATOR.finditer(text):
        line += text.count("\n", position, match.start())
        position = match.start()
        rest = match.group(1).strip()
        if rest and not rest.startswith("#"):
            raise YamlError(f"invalid YAML document separator: {rest}", line)
        if match.group(1)[:1] not in ("", " ", "\t"):
            one_pass = False  # "---#x": a separator to kubectl, not to PyYAML
        separators.append((line, match))
    if one_pass:
        documents = _read_one_pass(text, separators)
    else:
        documents = _read_chunks(text, separators)
    # The text before a first "---" counts as a document only when it holds something.
    skipped = 1 if separators and not _has_content(text[:separators[0][1].start()]) else 0
    return [(first_number + index - skipped, value) for index, value in documents]


def _has_content(text):
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines())


def _read_one_pass(text, separators):
    """Every document of ``text`` in one PyYAML pass: [(chunk index, value)]."""
    boundaries = [line for line, _match in separators]
    return [(_chunk_index(boundaries, line), value)
            for line, value in _documents(text, first_only=False) if value is not None]


def _documents(text, first_only, line_offset=0):
    """[(first line, value)] of the documents of ``text`` (of the first one if ``first_only``)."""
    try:
        return _compose_all(_NodeLoader, text, first_only, line_offset)
    except _DuplicateAnchor:
        return _compose_all(_RedefiningNodeLoader, text, first_only, line_offset)


class _DuplicateAnchor(Exception):
    pass


def _compose_all(loader_class, text, first_only, line_offset):
    documents = []
    loader = loader_class(text)
    anchors, aliases = "&" in text, "*" in text  # without them, nodes are never shared
    try:
        while _check_node(loader, line_offset):
            node = _next_node(loader, line_offset)
            value = _build(node, text, line_offset, anchors, aliases)
            documents.append((line_offset + node.start_mark.line, value))
            if first_only:
                break
    finally:
        loader.dispose()
    return documents


def _chunk_index(boundaries, line):
    """How many separator lines come before ``line``."""
    low, high = 0, len(boundaries)
    while low < high:
        middle = (low + high) // 2
        if boundaries[middle] < line:
            low = middle + 1
        else:
            high = middle
    return low


def _read_chunks(text, separators):
    """Each chunk between separator lines on its own, first document only (as go-yaml v2)."""
    documents = []
    starts = [(0, 0)] + [(line + 1, match.end() + 1) for line, match in separators]
    ends = [match.start() for _line, match in separators] + [len(text)]
    for index, ((line, start), end) in enumerate(zip(starts, ends)):
        chunk = text[start:end]
        if chunk.strip():
            documents += [(index, value) for _line, value in _documents(chunk, True, line)
                          if value is not None]
    return documents


def _check_node(loader, line_offset):
    try:
        return loader.check_node()
    except yaml.YAMLError as error:
        raise _yaml_error(error, line_offset) from None


def _next_node(loader, line_offset):
    try:
        return loader.get_node()
    except yaml.YAMLError as error:
        raise _yaml_error(error, line_offset) from None


def _yaml_error(error, line_offset):
    problem = getattr(error, "problem", None) or str(error)
    if "found duplicate anchor" in (getattr(error, "context", None) or "") + problem:
        return _DuplicateAnchor()
    mark = getattr(error, "problem_mark", None)
    context = getattr(error, "context", None)
    detail = f"{problem} ({context})" if context else problem
    if mark is None:
        return YamlError(detail)
    return YamlError(detail, line_offset + mark.line, mark.column)


def _build(node, text, line_offset, anchors, aliases):
    try:
        value = _Builder(text, anchors).value(node)
    except YamlError as error:
        if error.line is not None:
            error.line += line_offset
        raise
    except RecursionError:
        raise YamlError("the document is nested too deeply", line_offset + node.start_mark.line) from None
    size = expanded_size(value, {}) if aliases else 0
    if size > MAX_EXPANDED_VALUES:
        raise YamlError(f"the document expands through YAML aliases to {size:,} values "
                        f"(more than {MAX_EXPANDED_VALUES:,})", line_offset + node.start_mark.line)
    return value


def expanded_size(value, memo):
    """How many values ``value`` becomes once every alias is written out; ``memo`` (a dict, by
    ``id``) keeps the sizes of shared values, so each is counted once per call tree."""
    if not isinstance(value, (dict, list)):
        return 1
    known = memo.get(id(value))
    if known is not None:
        return known
    children = value.values() if isinstance(value, dict) else value
    size = 1 + sum(expanded_size(child, memo) for child in children)
    memo[id(value)] = size
    return size


class _DuplicateJsonKey(ValueError):
    pass


def _unique_keys(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateJsonKey(key)
        result[key] = value
    return result


class _JsonNumberError(Exception):
    """A JSON number Go cannot hold (1e400): the document is refused, not read as YAML."""


def _json_int(text):
    return json_number(int(text))


def _json_float(text):
    number = float(text)
    if math.isinf(number):
        raise _JsonNumberError(f"JSON number {text} is out of range")
    return json_number(number)


def _json_constant(name):
    raise ValueError(f"{name} is not JSON")


_JSON_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_int=_json_int,
                                 parse_float=_json_float, parse_constant=_json_constant)
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _read_json_stream(text):
    """A stream of JSON values; after a bad first or second value, the rest is YAML (kubectl)."""
    documents = []
    position, count = 0, 0
    while True:
        position = _JSON_SPACE.match(text, position).end()
        if position == len(text):
            return documents
        try:
            value, position = _JSON_DECODER.raw_decode(text, position)
        except _DuplicateJsonKey as error:
            raise YamlError(f"JSON object has a duplicate key {error.args[0]!r}") from None
        except _JsonNumberError as error:
            raise YamlError(str(error)) from None
        except ValueError as error:
            json_error = _json_error(error, text)
            if count > 1:
                raise json_error from None
            return documents + _yaml_after_json(text, position, count, json_error)
        count += 1
        if value is not None:
            documents.append((count, value))


def _yaml_after_json(text, position, count, json_error):
    """kubectl reads the rest as YAML, from the end of the last JSON value's line."""
    rest_start = position
    while rest_start < len(text) and text[rest_start].isspace():
        rest_start += 1
        if text[rest_start - 1] == "\n":
            break
    first_line = text.count("\n", 0, rest_start)
    try:
        documents = _read_yaml_stream(text[rest_start:], first_number=count + 1)
    except YamlError as yaml_error:
        where = f"line {yaml_error.line + first_line + 1}: " if yaml_error.line is not None else ""
        raise YamlError(f"{json_error}; read as YAML instead: {where}{yaml_error}",
                        json_error.line, json_error.column) from None
    return documents


def _json_error(error, text):
    if isinstance(error, json.JSONDecodeError):
        return YamlError(f"JSON syntax error: {error.msg}", error.lineno - 1, error.colno - 1)
    return YamlError(f"JSON: {error}")
