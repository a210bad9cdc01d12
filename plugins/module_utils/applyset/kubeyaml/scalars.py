"""What a YAML scalar is to go-yaml v2: its resolve rules, Go's number parsing, ``!!binary``.

A plain scalar resolves as go-yaml v2's ``resolve.go`` says, YAML 1.1 with its own twists: ``y``,
``n``, ``on``, ``off`` are booleans, integers may be written in bases 2, 8 and 16 and with ``_``,
``12:30`` (a base-60 number to YAML 1.1) stays a string, ``=`` is a plain string, and timestamps
stay strings. An explicit tag must fit its text. ``!!binary`` is decoded as Go decodes it. The
tags, ``Uint64`` and ``YamlError`` that the other kubeyaml files share are defined here too.
Pure: no PyYAML needed.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import math
import re
from typing import Union, cast

# A resolved scalar: what go-yaml v2 decodes it into (a timestamp, a merge key or an unresolvable tag keep the text).
Scalar = Union[bool, int, float, str, None]

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
_RESOLVE_MAP: dict[str, tuple[str, Scalar]] = {}
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

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 fix: str | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.fix = fix


# --------------------------------------------------------------------------------------------
# Scalars: go-yaml v2's resolve()


def resolve(tag: str, text: str) -> tuple[str, Scalar]:
    """Resolve a scalar as go-yaml v2's ``resolve(tag, in)`` does.

    ``tag`` is the scalar's explicit tag in long form, or "" for a plain scalar. Returns
    ``(resolved tag, value)``: the value is a bool, int (``Uint64`` above int64), float, None
    or the text itself (strings, timestamps, merge keys, unresolvable tags). Raises
    ``YamlError`` when an explicit tag does not fit the text (``!!int abc``).
    """
    if tag not in _RESOLVABLE_TAGS:
        return tag, text
    rtag: str = STR_TAG
    value: Scalar = text
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
        return FLOAT_TAG, float(cast(int, value))  # rtag is INT_TAG: an int
    # kubectl quotes the text here; we give its length only: it may be a Secret's value.
    raise YamlError(f"cannot decode {_short(rtag)} ({_characters(text)}, not shown) as a {_short(tag)}",
                    fix=f"drop the {_short(tag)} tag (quote the value to keep it as text), or write "
                        f"{_WHAT_FITS[tag]} there")


# What a value with an explicit tag must look like, for the fix of a value that does not fit.
_WHAT_FITS = {BOOL_TAG: "true or false", INT_TAG: "an integer", FLOAT_TAG: "a number", NULL_TAG: "null",
              TIMESTAMP_TAG: "a date or time such as 2001-12-14T21:59:43Z"}


def _characters(text: str) -> str:
    return "1 character" if len(text) == 1 else f"{len(text)} characters"


def _resolve_number(tag: str, text: str) -> tuple[str, Scalar]:
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
        real = float(plain)
        if not math.isinf(real):  # ParseFloat fails on overflow: the text stays a string
            return FLOAT_TAG, real
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


def _parse_dot_float(text: str) -> float | None:
    """Go's strconv.ParseFloat for a text that starts with '.' (None when it refuses)."""
    if not _DOT_FLOAT.fullmatch(text) or not _underscores_ok(text):
        return None
    number = float(text.replace("_", ""))
    return None if math.isinf(number) else number


def _underscores_ok(text: str) -> bool:
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


def go_parse_uint(text: str, base: int = 0) -> int | None:
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


def go_parse_int(text: str, base: int = 0) -> int | None:
    """Go's strconv.ParseInt(text, base, 64): an optional sign, then ``go_parse_uint``'s syntax;
    None outside int64."""
    negative = text[:1] == "-"
    unsigned = go_parse_uint(text[1:] if text[:1] in ("+", "-") else text, base)
    if unsigned is None:
        return None
    value = 0 - unsigned if negative else unsigned
    return value if INT64_MIN <= value <= INT64_MAX else None


def is_timestamp(text: str) -> bool:
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


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _short(tag: str) -> str:
    return "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag


def decode_binary(text: str) -> str:
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


def _replace_each_byte(error: UnicodeError) -> tuple[str, int]:
    # Go's JSON encoder replaces every invalid byte on its own; Python's "replace" would
    # replace a broken multi-byte sequence as a whole.
    return "\ufffd", cast(UnicodeDecodeError, error).start + 1  # registered for decoding only


codecs.register_error("applyset-go-replace", _replace_each_byte)
