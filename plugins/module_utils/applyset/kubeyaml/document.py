"""One YAML document's value as go-yaml v2 decodes it, built on PyYAML's node graph.

Scalars resolve by ``scalars.resolve``; merge keys (``<<``) are applied in the order
they appear; tags on mappings and sequences are ignored; keys become JSON strings
(``go_json``); an anchor's value is built once and never inside itself; a key given twice
is refused. ``build`` is the entry point; ``kubeyaml`` reads streams into documents.
"""

from __future__ import annotations

from typing import Any, Union, cast

YAML_IMPORT_ERROR: ImportError | None
try:
    import yaml
except ImportError as error:
    # PyYAML is a requirement (requirements.txt). Without it the kubeyaml files still import, so
    # that the modules can report the missing library: they fail with YAML_IMPORT_ERROR.
    yaml = None
    YAML_IMPORT_ERROR = error
else:
    YAML_IMPORT_ERROR = None

from .go_json import json_key, json_number
from .scalars import BINARY_TAG, MERGE_TAG, PLAIN_TAG, STR_TAG, Scalar, YamlError, decode_binary, resolve

# A PyYAML node (ScalarNode, MappingNode or SequenceNode); PyYAML ships no types.
Node = Any
# What a Go map key is to go-yaml v2: a string by its value, anything else by its type and value.
KeyIdentity = Union[str, tuple[str, Scalar]]
# A key node's (JSON key, identity of the Go key).
Key = tuple[str, KeyIdentity]


def build(node: Node, source: str, anchors: bool) -> object:
    """One document's value, as kubectl would send it.

    Args:
        node: the document's root node, as PyYAML's composer gives it.
        source: the text parsed (the builder looks at it to tell ``! 12`` from ``12``).
        anchors: whether the text may have anchors (then nodes can be shared, even loop).

    Returns:
        The value: dicts with string keys, lists, and scalars ready to send. Raises
        ``YamlError`` at the node that kubectl would refuse.
    """
    return _Builder(source, anchors).value(node)


_MAX_CACHED_SCALARS = 50_000
# Manifests repeat the same plain scalars (keys above all) thousands of times; they are resolved
# once. Values are stored ready to send, or as the YamlError to raise where they are used.
_plain_values: dict[str, object] = {}  # a value ready to send, or the YamlError
_plain_keys: dict[str, Key | YamlError] = {}


def _plain_value(text: str) -> object:
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


def _plain_key(text: str) -> Key | YamlError:
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


def _identity(value: Scalar) -> KeyIdentity:
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

    def __init__(self, source: str, anchors: bool) -> None:
        self._source = source  # the text parsed, to tell "! 12" from "12"
        self._anchors = anchors  # the text may have anchors: nodes can be shared, even loop
        self._built: dict[int, dict[str, object] | list[object]] = {}  # id(node) -> value, so an alias is built once
        self._building: set[int] = set()  # ids of the collections being built: an alias to one is a loop
        # id(mapping) -> {key: (Go key, text)} for keys that were no strings
        self._origins: dict[int, dict[str, tuple[KeyIdentity, str]]] = {}

    def value(self, node: Node) -> object:
        if node.__class__ is yaml.ScalarNode:
            if node.tag == PLAIN_TAG:
                value = _plain_values.get(node.value, _MISSING)
                if value.__class__ is str:
                    return value
            return self._scalar(node)
        if self._anchors:
            return self._shared(node)
        if node.__class__ is yaml.MappingNode:
            mapping: dict[str, object] = {}
            self._fill(node, mapping)
            return mapping
        value = self.value
        return [value(item) for item in node.value]

    def _shared(self, node: Node) -> object:
        """A collection in a text with anchors: built once, and never inside itself."""
        known = self._built.get(id(node))
        if known is not None:
            return known
        if id(node) in self._building:
            raise _error_at(node, "anchor value contains itself")
        self._building.add(id(node))
        try:
            result: dict[str, object] | list[object]
            if node.__class__ is yaml.MappingNode:
                result = {}
                self._fill(node, result)
            else:
                result = [self.value(item) for item in node.value]
        finally:
            self._building.discard(id(node))
        self._built[id(node)] = result
        return result

    def _scalar(self, node: Node) -> object:
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
                return decode_binary(cast(str, value))  # an unresolvable tag keeps the text
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return json_number(value)
        except YamlError as error:
            raise _error_of_scalar(node, error) from None
        return value

    def _key(self, node: Node) -> Key:
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
            return cast(Key, found)  # a YamlError was raised just above
        if tag == STR_TAG:
            return node.value, node.value
        try:
            rtag, value = resolve(tag, node.value)
            if rtag == BINARY_TAG:
                value = decode_binary(cast(str, value))  # an unresolvable tag keeps the text
            return json_key(value), _identity(value)
        except YamlError as error:
            raise _error_of_scalar(node, error) from None

    def _non_specific(self, node: Node) -> bool:
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

    def _fill(self, node: Node, target: dict[str, object]) -> None:
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

    def _check_override(self, node: Node, key_node: Node, key: str, identity: KeyIdentity,
                        target: dict[str, object]) -> None:
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

    def _merge(self, node: Node, target: dict[str, object]) -> None:
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


def _is_merge(node: Node) -> bool:
    # go-yaml v2: a plain "<<" or one tagged !!merge; a quoted "<<" is an ordinary key.
    return node.__class__ is yaml.ScalarNode and node.value == "<<" and node.tag in (PLAIN_TAG, MERGE_TAG)


def _error_at(node: Node, message: str, context: str | None = None, fix: str | None = None) -> YamlError:
    mark = node.start_mark
    return YamlError(f"{message} ({context})" if context else message, mark.line, mark.column, fix)


def _error_of_scalar(node: Node, error: YamlError) -> YamlError:
    """``error`` of resolving or decoding ``node``'s text, placed at the node."""
    return _error_at(node, str(error), fix=error.fix)
