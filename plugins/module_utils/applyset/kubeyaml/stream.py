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
and ``decode.go`` and sigs.k8s.io/yaml's ``yaml.go``; the names follow them. This file owns the
streams: JSON sniffing, cutting documents at ``---`` and PyYAML's loaders (``read_stream``).
The rest lives beside it in this package:

* ``scalars``: what a scalar is (``resolve``, Go's number parsing, ``!!binary``);
* ``go_json``: what the JSON round trip makes of values and keys (``to_json_value``);
* ``document``: one document's value from PyYAML's nodes (merge keys, anchors).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

try:
    import yaml
except ImportError:  # the modules report it (document.YAML_IMPORT_ERROR)
    yaml = None

from .document import Node, build
from .go_json import json_number
from .scalars import MAP_TAG, PLAIN_TAG, SEQ_TAG, STR_TAG, YamlError

# One document of a stream: (its number, or a chunk's index or first line while reading, its value).
Document = tuple[int, object]
# A separator line of a stream: (its 0-based line, its match).
Separator = tuple[int, "re.Match[str]"]


class _NodeLoaderMixin:
    """PyYAML's parser and composer with no resolver of their own (the builder resolves)."""

    def resolve(self, kind: type, value: str, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            return PLAIN_TAG if implicit[0] else STR_TAG
        return MAP_TAG if kind is yaml.MappingNode else SEQ_TAG

    # No path resolvers, so the composer's path tracking can be skipped.
    def descend_resolver(self, current_node: Node, current_index: object) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


class _RedefiningComposer:
    """go-yaml v2 lets an anchor be defined again (later aliases mean the new one); PyYAML
    refuses. Only the pure-Python composer can be taught that, so it reads such documents."""

    # Given by the composer this is mixed into (yaml.SafeLoader's).
    anchors: dict[str, Node]
    peek_event: Callable[[], Any]

    def compose_node(self, parent: Node, index: object) -> Node:
        event = self.peek_event()
        if not isinstance(event, yaml.AliasEvent) and getattr(event, "anchor", None) is not None:
            self.anchors.pop(event.anchor, None)
        return super().compose_node(parent, index)  # type: ignore[misc]  # the composer next in the MRO


if yaml is not None:
    class _NodeLoader(_NodeLoaderMixin, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
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


def read_stream(text: str) -> list[Document]:
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


def _read_yaml_stream(text: str, first_number: int = 1) -> list[Document]:
    text = text.replace("\r\n", "\n")
    separators: list[Separator] = []  # (0-based line, match) of each separator line
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


def _has_content(text: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines())


def _read_one_pass(text: str, separators: list[Separator]) -> list[Document]:
    """Every document of ``text`` in one PyYAML pass: [(chunk index, value)]."""
    boundaries = [line for line, _match in separators]
    return [(_chunk_index(boundaries, line), value)
            for line, value in _documents(text, first_only=False) if value is not None]


def _documents(text: str, first_only: bool, line_offset: int = 0) -> list[Document]:
    """[(first line, value)] of the documents of ``text`` (of the first one if ``first_only``)."""
    try:
        return _compose_all(_NodeLoader, text, first_only, line_offset)
    except _DuplicateAnchor:
        return _compose_all(_RedefiningNodeLoader, text, first_only, line_offset)


class _DuplicateAnchor(Exception):
    pass


def _compose_all(loader_class: type, text: str, first_only: bool, line_offset: int) -> list[Document]:
    documents: list[Document] = []
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


def _chunk_index(boundaries: list[int], line: int) -> int:
    """How many separator lines come before ``line``."""
    low, high = 0, len(boundaries)
    while low < high:
        middle = (low + high) // 2
        if boundaries[middle] < line:
            low = middle + 1
        else:
            high = middle
    return low


def _read_chunks(text: str, separators: list[Separator]) -> list[Document]:
    """Each chunk between separator lines on its own, first document only (as go-yaml v2)."""
    documents: list[Document] = []
    starts = [(0, 0)] + [(line + 1, match.end() + 1) for line, match in separators]
    ends = [match.start() for _line, match in separators] + [len(text)]
    for index, ((line, start), end) in enumerate(zip(starts, ends)):
        chunk = text[start:end]
        if chunk.strip():
            documents += [(index, value) for _line, value in _documents(chunk, True, line)
                          if value is not None]
    return documents


def _check_node(loader: Any, line_offset: int) -> bool:  # loader: a PyYAML loader (untyped)
    try:
        return loader.check_node()
    except yaml.YAMLError as error:
        raise _yaml_error(error, line_offset) from None


def _next_node(loader: Any, line_offset: int) -> Node:
    try:
        return loader.get_node()
    except yaml.YAMLError as error:
        raise _yaml_error(error, line_offset) from None


def _yaml_error(error: Exception, line_offset: int) -> Exception:  # a YamlError, or _DuplicateAnchor
    problem = getattr(error, "problem", None) or str(error)
    if "found duplicate anchor" in (getattr(error, "context", None) or "") + problem:
        return _DuplicateAnchor()
    mark = getattr(error, "problem_mark", None)
    context = getattr(error, "context", None)
    detail = f"{problem} ({context})" if context else problem
    if mark is None:
        return YamlError(detail)
    return YamlError(detail, line_offset + mark.line, mark.column)


def _build(node: Node, text: str, line_offset: int, anchors: bool, aliases: bool) -> object:
    try:
        value = build(node, text, anchors)
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


def expanded_size(value: object, memo: dict[int, int]) -> int:
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


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateJsonKey(key)
        result[key] = value
    return result


class _JsonNumberError(Exception):
    """A JSON number Go cannot hold (1e400): the document is refused, not read as YAML."""


def _json_int(text: str) -> int | float:
    return json_number(int(text))


def _json_float(text: str) -> int | float:
    number = float(text)
    if math.isinf(number):
        raise _JsonNumberError(f"JSON number {text} is out of range")
    return json_number(number)


def _json_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


_JSON_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_int=_json_int,
                                 parse_float=_json_float, parse_constant=_json_constant)
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _read_json_stream(text: str) -> list[Document]:
    """A stream of JSON values; after a bad first or second value, the rest is YAML (kubectl)."""
    documents: list[Document] = []
    position, count = 0, 0
    while True:
        position = _JSON_SPACE.match(text, position).end()  # type: ignore[union-attr]  # it matches the empty string
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


def _yaml_after_json(text: str, position: int, count: int, json_error: YamlError) -> list[Document]:
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


def _json_error(error: ValueError, text: str) -> YamlError:
    if isinstance(error, json.JSONDecodeError):
        return YamlError(f"JSON syntax error: {error.msg}", error.lineno - 1, error.colno - 1)
    return YamlError(f"JSON: {error}")
