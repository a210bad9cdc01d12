"""Load and validate the user's manifests, without any cluster access.

Two entry points produce ``Manifest`` lists: ``load_sources`` (files, directories, globs) and
``load_definition`` (inline dicts, lists or YAML text). ``validate`` then checks them all and
reports every problem at once, so that bad input is refused before the first write.
"""

import base64
import binascii
import dataclasses
import glob
import json
import os

try:
    import yaml
except ImportError as error:
    # PyYAML is a requirement (requirements.txt). Without it this file still imports, so that
    # the modules can report the missing library: they fail with YAML_IMPORT_ERROR.
    yaml = None
    YAML_IMPORT_ERROR = error
else:
    YAML_IMPORT_ERROR = None

from . import spec
from .errors import InputError, InputErrors

MAX_FILE_BYTES = 64 * 1024 * 1024
MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")

_YAML_TAG = "tag:yaml.org,2002:"


def _scalar_text(loader, node):
    return node.value


# How the fast path builds each plain scalar, by resolved tag. Timestamps stay strings as
# written: a datetime cannot be sent as JSON, and to Kubernetes "2024-01-01" is text.
_SCALAR_BUILDERS = {
    _YAML_TAG + "str": _scalar_text,
    _YAML_TAG + "timestamp": _scalar_text,
    _YAML_TAG + "null": lambda loader, node: None,
}
if yaml is not None:
    _SCALAR_BUILDERS.update({
        _YAML_TAG + "bool": yaml.SafeLoader.construct_yaml_bool,
        _YAML_TAG + "int": yaml.SafeLoader.construct_yaml_int,
        _YAML_TAG + "float": yaml.SafeLoader.construct_yaml_float,
    })
_MAP_TAG = _YAML_TAG + "map"
_SEQ_TAG = _YAML_TAG + "seq"


class _NotPlainYaml(Exception):
    """The document uses a YAML feature the fast path leaves to PyYAML."""


class ManifestLoaderMixin:
    """Speed-ups for a PyYAML safe loader reading Kubernetes manifests.

    Plain documents (maps, lists, strings, numbers, booleans, nulls) are built by a direct
    recursive walk instead of PyYAML's generic constructor, and plain-scalar tags are resolved
    once per distinct value. Together with libyaml this loads about 1.5 times faster than
    ``yaml.CSafeLoader``. Anything else (merge keys, explicit tags such as !!binary, complex
    keys) goes through the standard safe constructor, errors included, so the result is
    always what the safe loader gives, except that timestamps stay strings.
    """

    def __init__(self, stream):
        super().__init__(stream)
        # Manifests repeat the same plain scalars (keys above all) thousands of times.
        self._plain_scalar_tags = {}

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode and implicit[0]:
            tag = self._plain_scalar_tags.get(value)
            if tag is None:
                tag = self._plain_scalar_tags[value] = super().resolve(kind, value, implicit)
            return tag
        return super().resolve(kind, value, implicit)

    # This loader has no path resolvers, so the composer's path tracking can be skipped.
    def descend_resolver(self, current_node, current_index):
        pass

    def ascend_resolver(self):
        pass

    def construct_mapping(self, node, deep=False):
        # PyYAML keeps the last of two equal keys; in a manifest that silently drops data.
        seen = set()
        for key_node, _value in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _YAML_TAG + "merge":
                if key_node.value in seen:
                    raise _duplicate_key(node, key_node)
                seen.add(key_node.value)
        return super().construct_mapping(node, deep)

    def construct_document(self, node):
        try:
            return self._build(node, {})
        except _NotPlainYaml:
            return super().construct_document(node)

    def _build(self, node, built):
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            build_scalar = _SCALAR_BUILDERS.get(tag)
            if build_scalar is None:
                raise _NotPlainYaml
            return build_scalar(self, node)
        # An alias is the same node object again: build it once, as PyYAML does.
        known = built.get(id(node))
        if known is not None:
            return known
        if tag == _MAP_TAG:
            result = built[id(node)] = {}
            for key_node, value_node in node.value:
                # Complex keys may be unhashable: let PyYAML report those. Merge keys
                # ("<<") have their own tag, so they take that path too.
                if not isinstance(key_node, yaml.ScalarNode):
                    raise _NotPlainYaml
                key = self._build(key_node, built)
                if key in result:
                    raise _duplicate_key(node, key_node)
                result[key] = self._build(value_node, built)
            return result
        if tag == _SEQ_TAG:
            result = built[id(node)] = []
            result.extend(self._build(item, built) for item in node.value)
            return result
        raise _NotPlainYaml


def _duplicate_key(mapping_node, key_node):
    return yaml.constructor.ConstructorError(
        "while constructing a mapping", mapping_node.start_mark,
        f"found duplicate key {key_node.value!r}", key_node.start_mark)


if yaml is not None:
    class _ManifestLoader(ManifestLoaderMixin, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        """The loader used for all input: libyaml's parser when installed, else pure Python."""

    _ManifestLoader.add_constructor(_YAML_TAG + "timestamp", _scalar_text)

_GLOB_CHARACTERS = frozenset("*?[")


@dataclasses.dataclass
class Manifest:
    """One input document and where it came from (``app.yaml, document 2``).

    The properties read the document defensively: before ``validate`` has run they return
    None (or "") for missing or mistyped fields instead of raising.
    """

    obj: object
    source: str

    def _field(self, key):
        return self.obj.get(key) if isinstance(self.obj, dict) else None

    @property
    def metadata(self):
        """The metadata mapping ({} when missing or not a mapping)."""
        metadata = self._field("metadata")
        return metadata if isinstance(metadata, dict) else {}

    @property
    def api_version(self):
        return _text_or_none(self._field("apiVersion"))

    @property
    def group(self):
        """API group: the part of apiVersion before '/', "" for the core group (``v1``)."""
        group, slash, _version = (self.api_version or "").partition("/")
        return group if slash else ""

    @property
    def version(self):
        """API version: the part of apiVersion after '/', or all of it (``v1``)."""
        return (self.api_version or "").partition("/")[2] or self.api_version

    @property
    def kind(self):
        return _text_or_none(self._field("kind"))

    @property
    def name(self):
        return _text_or_none(self.metadata.get("name"))

    @property
    def namespace(self):
        """metadata.namespace, or None when it is not set (or empty)."""
        return _text_or_none(self.metadata.get("namespace"))

    @property
    def group_kind(self):
        """The object's spec.GroupKind."""
        return spec.GroupKind(self.group, self.kind)

    @property
    def ref(self):
        """Human reference such as ``Deployment shop/web`` or ``Namespace shop``.

        None while kind or name are unknown (an invalid document).
        """
        if not (self.kind and self.name):
            return None
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    @property
    def identity(self):
        """What makes two documents the same object: (group, kind, namespace, name)."""
        return (self.group, self.kind, self.namespace, self.name)


# --------------------------------------------------------------------------------------------
# Loading


def load_sources(src, base_dir=None):
    """Load manifests from files, directories and globs.

    ``src`` is a path or a list of paths. A file is read whatever its extension; a directory
    is searched recursively for ``*.yaml``, ``*.yml`` and ``*.json`` (hidden entries skipped);
    anything else with ``*``, ``?`` or ``[`` is a recursive glob whose matching files are read.
    Relative paths are resolved against ``base_dir`` when given. Files are read in sorted
    order within each entry, and each file only once. All problems are raised together as
    ``InputErrors``.
    """
    entries = [src] if isinstance(src, (str, os.PathLike)) else list(src)
    problems = []
    files = []  # (path to open, path to show)
    for entry in entries:
        try:
            files.extend(_expand_entry(entry, base_dir))
        except InputError as error:
            problems.append(error)

    manifests = []
    seen_files = set()
    for path, shown in files:
        real_path = os.path.realpath(path)
        if real_path in seen_files:
            continue
        seen_files.add(real_path)
        try:
            manifests.extend(_load_file(path, shown))
        except InputError as error:
            problems.append(error)
    if problems:
        raise InputErrors(problems)
    return manifests


def _expand_entry(entry, base_dir):
    """Return the (path, shown path) of every file one ``src`` entry stands for."""
    if not isinstance(entry, (str, os.PathLike)) or not os.fspath(entry):
        raise InputError(f"expected a path, got {_type_name(entry)} {entry!r}", obj="src",
                         fix="give a file, a directory or a glob pattern")
    entry = os.fspath(entry)
    path = os.path.expanduser(entry)
    if base_dir and not os.path.isabs(path):
        path = os.path.join(base_dir, path)
    if os.path.isdir(path):
        return _walk_directory(path, entry)
    if os.path.isfile(path):
        return [(path, entry)]
    if os.path.exists(path):
        # A FIFO or device would block or never end.
        raise InputError("not a regular file", obj=entry, fix="give a file or a directory")
    if _GLOB_CHARACTERS & set(entry):
        return _expand_glob(path, entry, base_dir)
    raise InputError(
        "no such file or directory", obj=entry,
        fix="check the path; relative paths are resolved against "
            + (base_dir if base_dir else "the current directory"))


def _expand_glob(pattern, entry, base_dir):
    # Only files count: a pattern like "dir/**" matches directories too, and walking them as
    # well would read their files twice. Use "dir/" to read a whole directory.
    matches = sorted(match for match in glob.glob(pattern, recursive=True) if os.path.isfile(match))
    if not matches:
        raise InputError("the pattern matches no files", obj=entry,
                         fix="check the pattern; use ** to match files in subdirectories")
    if base_dir and not os.path.isabs(os.path.expanduser(entry)):
        return [(match, os.path.relpath(match, base_dir)) for match in matches]
    return [(match, match) for match in matches]


def _walk_directory(root, shown_root):
    """List manifest files under ``root`` recursively, sorted by path.

    Symbolic links are followed, so the real path of every directory on the way down is
    remembered: meeting one again below itself means a link loop.
    """
    found = []

    def walk(directory, shown, ancestors):
        try:
            entries = list(os.scandir(directory))
        except OSError as error:
            raise InputError(f"cannot read directory: {error.strerror}", obj=shown,
                             fix="check that the directory exists and is readable") from error
        for item in entries:
            if item.name.startswith("."):
                continue
            item_shown = os.path.normpath(os.path.join(shown, item.name))
            if item.is_dir():  # follows symlinks
                real = os.path.realpath(item.path)
                if real in ancestors:
                    raise InputError(
                        f"symbolic link loop: it leads back to {real}", obj=item_shown,
                        fix="remove the link or point it outside the directory it is in")
                walk(item.path, item_shown, ancestors | {real})
            elif item.name.endswith(MANIFEST_EXTENSIONS) and item.is_file():
                found.append((item.path, item_shown))

    walk(root, shown_root, frozenset({os.path.realpath(root)}))
    # Sorting by the shown path keeps the order independent of base_dir and of scandir.
    found.sort(key=lambda pair: pair[1])
    return found


def _load_file(path, shown):
    """Read one file and return its manifests."""
    file_ref = f"file {shown}"
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise InputError(
                f"the file is {size} bytes, more than the limit of {MAX_FILE_BYTES} bytes",
                obj=file_ref, fix="split it into smaller files")
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise InputError(f"cannot read the file: {error.strerror}", obj=file_ref,
                         fix="check that the file exists and is readable") from error
    try:
        # Plain utf-8, not utf-8-sig, so that the offset counts from the start of the file.
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise InputError(
            f"the file is not valid UTF-8 (byte offset {error.start})", obj=file_ref,
            fix="save the file as UTF-8") from error
    if path.endswith(".json"):
        documents = [_parse_json(text, file_ref)]
    else:
        documents = _parse_yaml(text, file_ref)
    return _to_manifests(documents, shown)


def load_definition(definition, source="definition"):
    """Load manifests given inline: a dict, a list of dicts, or YAML/JSON text.

    A list may also hold YAML text items. Empty documents and None items are skipped.
    Syntax errors of all text items are raised together as ``InputErrors``.
    """
    if definition is None:
        return []
    if isinstance(definition, (list, tuple)):
        items = [(item, f"{source} item {number}") for number, item in enumerate(definition, 1)]
    elif isinstance(definition, (str, dict)):
        items = [(definition, source)]
    else:
        raise InputErrors([InputError(
            f"expected a mapping, a list or YAML text, got {_type_name(definition)}", obj=source,
            fix="give one Kubernetes object, a list of them, or YAML text")])
    manifests = []
    problems = []
    for item, item_source in items:
        if isinstance(item, str):
            try:
                manifests.extend(_to_manifests(_parse_text(item, item_source), item_source))
            except InputError as error:
                problems.append(error)
        elif item is not None:
            # Anything else is one document; validate() reports what is not a mapping.
            manifests.extend(_to_manifests([item], item_source, single=True))
    if problems:
        raise InputErrors(problems)
    return manifests


def _parse_text(text, source):
    """Parse inline text: JSON when it is JSON (tabs and all), YAML otherwise."""
    if text.lstrip().startswith(("{", "[")):
        try:
            return [json.loads(text)]
        except ValueError:
            pass  # YAML flow style also starts with '{' or '['.
    return _parse_yaml(text, source)


class _DuplicateJsonKey(ValueError):
    pass


def _unique_keys(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateJsonKey(key)
        result[key] = value
    return result


def _parse_json(text, source):
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateJsonKey as error:
        raise InputError(f"JSON object has a duplicate key {error.args[0]!r}", obj=source,
                         fix="keep one of the two; the second would silently replace the first") from None
    except json.JSONDecodeError as error:
        raise InputError(
            f"JSON syntax error at line {error.lineno}, column {error.colno}: {error.msg}",
            obj=source, fix="correct the JSON at that position") from error


# Aliases share one object when loaded but are copied when sent; a small document can
# stand for billions of values ("billion laughs"). No real manifest comes near this.
MAX_EXPANDED_VALUES = 1_000_000


def _expanded_size(value, memo):
    """How many values ``value`` becomes once every alias is written out."""
    if not isinstance(value, (dict, list)):
        return 1
    known = memo.get(id(value))
    if known is not None:
        return known
    children = value.values() if isinstance(value, dict) else value
    size = 1 + sum(_expanded_size(child, memo) for child in children)
    memo[id(value)] = size
    return size


def _parse_yaml(text, source):
    """Parse every YAML document of ``text``; None stands for an empty document."""
    documents = []
    try:
        for document in yaml.load_all(text, Loader=_ManifestLoader):
            documents.append(document)
    except yaml.YAMLError as error:
        raise _yaml_error(error, source, len(documents) + 1) from error
    if "*" in text:  # only documents with aliases can expand
        for number, document in enumerate(documents, start=1):
            size = _expanded_size(document, {})
            if size > MAX_EXPANDED_VALUES:
                raise InputError(
                    f"document {number} expands through YAML aliases to {size:,} values "
                    f"(more than {MAX_EXPANDED_VALUES:,})", obj=source,
                    fix="write the values out, or use fewer nested aliases")
    return documents


def _yaml_error(error, source, document_number):
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    if mark is not None:
        where = f"line {mark.line + 1}, column {mark.column + 1}"
    else:
        where = f"document {document_number}"
    context = getattr(error, "context", None)
    detail = f"{problem} ({context})" if context else problem
    return InputError(f"YAML syntax error at {where}: {detail}", obj=source,
                      fix="correct the YAML at that position")


def _to_manifests(documents, source, single=False):
    """Wrap parsed documents as manifests, skipping empty ones and flattening Lists."""
    manifests = []
    for number, document in enumerate(documents, start=1):
        if document is None:
            continue
        document_source = source if single else f"{source}, document {number}"
        _flatten_into(manifests, document, document_source)
    return manifests


def _flatten_into(manifests, document, source):
    if _is_list(document):
        for number, item in enumerate(document["items"], start=1):
            _flatten_into(manifests, item, f"{source}, item {number}")
    else:
        manifests.append(Manifest(document, source))


def _is_list(document):
    # kubectl's own List wrapper (kubectl get -o yaml), and typed lists such as ConfigMapList.
    if not isinstance(document, dict) or document.get("apiVersion") != "v1":
        return False
    kind = document.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and isinstance(document.get("items"), list)


# --------------------------------------------------------------------------------------------
# Validation

_OBJECT_FIX = "each document must be a Kubernetes object with apiVersion, kind and metadata.name"


def validate(manifests):
    """Check every manifest and raise one ``InputErrors`` listing all problems found.

    Checks: each document is a mapping with string apiVersion, kind and metadata.name; no
    generateName; labels and annotations map strings to strings; no ApplySet member label
    in the input; no object given twice.
    """
    problems = []
    first_seen = {}
    for manifest in manifests:
        found = _problems_of(manifest)
        problems.extend(found)
        if found:
            continue
        identity = manifest.identity
        first = first_seen.setdefault(identity, manifest)
        if first is not manifest:
            problems.append(_problem(
                manifest, f"the same object is also defined in {first.source}",
                "keep one of the two definitions", {"first_source": first.source}))
    if problems:
        raise InputErrors(problems)


def _problem(manifest, message, fix, extra=None):
    ref = manifest.ref
    details = {"source": manifest.source, "object": ref}
    if extra:
        details.update(extra)
    obj = f"{manifest.source} ({ref})" if ref else manifest.source
    return InputError(message, obj=obj, fix=fix, details=details)


def _problems_of(manifest):
    """Return the problems of one manifest (the duplicate check aside)."""
    obj = manifest.obj
    if not isinstance(obj, dict):
        fix = _OBJECT_FIX
        if isinstance(obj, list):
            fix += "; separate several objects with --- or wrap them in a v1 List"
        return [_problem(manifest, f"the document is not a mapping but a {_type_name(obj)}", fix)]
    problems = []
    api_version = obj.get("apiVersion")
    if not _text_or_none(api_version):
        problems.append(_missing(manifest, "apiVersion", api_version, 'e.g. "apps/v1" or "v1"'))
    elif api_version.count("/") > 1 or "" in api_version.split("/"):
        problems.append(_problem(manifest, f'apiVersion "{api_version}" is not GROUP/VERSION or VERSION',
                                 'write e.g. "apps/v1" or "v1"'))
    kind = obj.get("kind")
    if not _text_or_none(kind):
        problems.append(_missing(manifest, "kind", kind, 'e.g. "Deployment"'))

    if "metadata" not in obj:
        problems.append(_problem(manifest, "metadata.name is missing", "set metadata.name"))
        return problems
    metadata = obj["metadata"]
    if not isinstance(metadata, dict):
        problems.append(_problem(manifest, f"metadata is not a mapping but a {_type_name(metadata)}",
                                 "make metadata a mapping with at least a name"))
        return problems
    problems.extend(_metadata_problems(manifest, metadata))
    problems.extend(_size_problems(manifest, obj))
    return problems


# What the API server accepts: ConfigMap and Secret content is limited to 1 MiB, and a
# request body to 3 MiB. Checked here so the object is refused before any write.
MAX_DATA_BYTES = 1024 * 1024
MAX_OBJECT_BYTES = 3 * 1024 * 1024


def _size_problems(manifest, obj):
    kind = obj.get("kind")
    if obj.get("apiVersion") == "v1" and kind in ("ConfigMap", "Secret"):
        size = _data_bytes(obj, base64_data=kind == "Secret")
        if size > MAX_DATA_BYTES:
            return [_problem(manifest, f"{kind} content is {size} bytes, over the limit of {MAX_DATA_BYTES} bytes",
                             "split the data over several objects, or mount it from elsewhere")]
        return []
    size = len(json.dumps(obj, separators=(",", ":"), default=str))
    if size > MAX_OBJECT_BYTES:
        return [_problem(manifest, f"the object is {size} bytes, over the API server's limit of "
                                   f"{MAX_OBJECT_BYTES} bytes", "make it smaller or split it")]
    return []


def _data_bytes(obj, base64_data):
    """Content size as the API server counts it: the values only, base64 ones decoded."""
    total = 0
    for field in ("data", "binaryData", "stringData"):
        values = obj.get(field)
        if not isinstance(values, dict):
            continue
        encoded = field == "binaryData" or (base64_data and field == "data")
        for value in values.values():
            text = str(value)
            total += _decoded_length(text) if encoded else len(text.encode())
    return total


def _decoded_length(text):
    try:
        return len(base64.b64decode(text, validate=False))
    except (binascii.Error, ValueError):
        return len(text) * 3 // 4  # not valid base64: the server will say so


def _metadata_problems(manifest, metadata):
    problems = []
    if "generateName" in metadata:
        problems.append(_problem(
            manifest, "metadata.generateName is not supported: server-side apply needs a stable "
                      "name to find the object again on the next run (and to prune it)",
            "replace metadata.generateName with a fixed metadata.name"))
    name = metadata.get("name")
    if not _text_or_none(name):
        problems.append(_missing(manifest, "metadata.name", name, "give the object a name"))
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        problems.append(_problem(manifest, f"metadata.namespace is a {_type_name(namespace)}, "
                                           "not a string", "quote the namespace"))
    for field in ("labels", "annotations"):
        problems.extend(_string_map_problems(manifest, field, metadata.get(field)))
    labels = metadata.get("labels")
    if isinstance(labels, dict) and spec.LABEL_PART_OF in labels:
        problems.append(_problem(
            manifest, f'ApplySet label "{spec.LABEL_PART_OF}" already set in input data',
            "remove the label from the manifest; the ApplySet tooling adds it itself"))
    return problems


def _string_map_problems(manifest, field, value):
    if value is None:
        return []
    if not isinstance(value, dict):
        return [_problem(manifest, f"metadata.{field} is not a mapping but a {_type_name(value)}",
                         f"make metadata.{field} a mapping of strings to strings")]
    problems = []
    for key, item in value.items():
        if not isinstance(key, str):
            problems.append(_problem(manifest, f"metadata.{field} has a non-string key {key!r}",
                                     "quote the key"))
        elif not isinstance(item, str):
            problems.append(_problem(
                manifest, f'metadata.{field}["{key}"] is a {_type_name(item)} ({item!r}), not a string',
                'quote the value, e.g. "true" or "1"'))
    return problems


def _missing(manifest, field, value, example):
    if value is None:
        message = f"{field} is missing"
    elif isinstance(value, str):
        message = f"{field} is empty"
    else:
        message = f"{field} is a {_type_name(value)}, not a string"
    return _problem(manifest, message, f"set {field} to a string, {example}")


def _text_or_none(value):
    """The value if it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _type_name(value):
    """Name a YAML value's type in the user's terms (isinstance: Ansible subclasses str)."""
    for python_type, name in _TYPE_NAMES:
        if isinstance(value, python_type):
            return name
    return "null" if value is None else type(value).__name__


# bool before int: True is an int too.
_TYPE_NAMES = ((bool, "boolean"), (int, "number"), (float, "number"), (str, "string"),
               (dict, "mapping"), (list, "list"))
