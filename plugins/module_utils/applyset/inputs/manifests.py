"""Load and validate the user's manifests, without any cluster access.

Two entry points produce ``Manifest`` lists: ``load_sources`` (files, directories, globs) and
``load_definition`` (inline dicts, lists or YAML/JSON text). Text of either kind is read by
``kubeyaml`` exactly as kubectl reads it, and List kinds are unwrapped as kubectl's resource
builder unwraps them. ``validate`` then checks them all and reports every problem at once, so
that bad input is refused before the first write.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Union, cast

from ..object_meta import KubeObject, ObjectMeta

from ..kubeyaml import stream as kubeyaml
from ..kubeyaml import scalars as kubeyaml_scalars
from ..kubeyaml import go_json as kubeyaml_json
from ..kubeyaml import document as kubeyaml_document
from .. import spec
from ..errors import InputError, InputErrors
from .manifest_checks import text_or_none, type_name
# Re-exported: callers know them as manifests.validate and manifests.MAX_*_BYTES.

# Kept here for the modules, which report a missing PyYAML with it.
YAML_IMPORT_ERROR = kubeyaml_document.YAML_IMPORT_ERROR

MAX_FILE_BYTES = 64 * 1024 * 1024
# What kubectl reads from a directory (k8s.io/cli-runtime's FileExtensions, case-sensitive).
MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")

_GLOB_CHARACTERS = frozenset("*?[")

# What ``src`` may be: one path, or paths (a path that is no string is refused with the others' problems).
Sources = Union[str, "os.PathLike[str]", Iterable[object]]
# A file to read and how messages name it: ``(path to open, path to show)``.
SourceFile = tuple[str, str]


@dataclasses.dataclass
class Manifest:
    """One input document and where it came from (``app.yaml, document 2``).

    The properties read the document defensively: before ``validate`` has run they return
    None (or "") for missing or mistyped fields instead of raising.
    """

    obj: object
    source: str

    # api_version, version, kind and name are None (or "") before ``validate`` and strings after it, so
    # they are left unannotated (Any): their readers in rules/ and steps/ run on validated manifests only.

    def _field(self, key: str) -> object:
        return self.obj.get(key) if isinstance(self.obj, dict) else None

    @property
    def mapping(self) -> KubeObject:
        """The document as a mapping ({} when it is not one: ``validate`` refuses it then)."""
        return self.obj if isinstance(self.obj, dict) else {}

    @property
    def metadata(self) -> ObjectMeta:
        """The metadata mapping ({} when missing or not a mapping)."""
        metadata = self._field("metadata")
        return cast(ObjectMeta, metadata) if isinstance(metadata, dict) else {}

    @property
    def api_version(self) -> Any:  # a str once validate() passed, else None (so for version, kind, name)
        """apiVersion as written (``apps/v1``), or None when missing or not a string."""
        return text_or_none(self._field("apiVersion"))

    @property
    def group(self) -> str:
        """API group: the part of apiVersion before '/', "" for the core group (``v1``)."""
        group, slash, _version = (self.api_version or "").partition("/")
        return group if slash else ""

    @property
    def version(self) -> Any:
        """API version: the part of apiVersion after '/', or all of it (``v1``)."""
        return (self.api_version or "").partition("/")[2] or self.api_version

    @property
    def kind(self) -> Any:
        """kind as written, or None when missing or not a string."""
        return text_or_none(self._field("kind"))

    @property
    def name(self) -> Any:
        """metadata.name, or None when missing, empty or not a string."""
        return text_or_none(self.metadata.get("name"))

    @property
    def namespace(self) -> str | None:
        """metadata.namespace, or None when it is not set (or empty)."""
        return text_or_none(self.metadata.get("namespace"))

    @property
    def group_kind(self) -> spec.GroupKind:
        """The object's spec.GroupKind."""
        return spec.GroupKind(self.group, self.kind)

    @property
    def ref(self) -> str | None:
        """Human reference such as ``Deployment shop/web`` or ``Namespace shop``.

        None while kind or name are unknown (an invalid document).
        """
        if not (self.kind and self.name):
            return None
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    @property
    def identity(self) -> spec.ObjectId:
        """What makes two documents the same object: its ``ObjectId`` (read once ``validate`` found its
        kind and name)."""
        return spec.ObjectId.of(self.group_kind, self.namespace, self.name)


# --------------------------------------------------------------------------------------------
# Loading


def load_sources(src: Sources, base_dir: str | None = None,
                 contents: Mapping[str, bytes] | None = None) -> list[Manifest]:
    """Load manifests from files, directories and globs.

    ``src`` is a path or a list of paths. A file is read whatever its extension; a directory
    is searched recursively for ``*.yaml``, ``*.yml`` and ``*.json`` (hidden entries skipped);
    anything else with ``*``, ``?`` or ``[`` is a recursive glob whose matching files are read.
    Relative paths are resolved against ``base_dir`` when given. Files are read in sorted
    order within each entry, and each file only once. Each manifest's source is ``PATH, document N``.

    ``contents`` maps the real path of a file (``os.path.realpath``) to the bytes to read in
    its place: the action plugin decrypts Ansible Vault files on the controller and hands their
    plain bytes over this way, so that they keep their place in the order and their name in
    messages. Every other file is read from disk.

    Returns:
        The ``Manifest`` list, not yet validated (see ``validate``).

    Raises:
        InputErrors: every problem of every entry at once: a path that does not exist or cannot be
            read, a file too large or not UTF-8/UTF-16, YAML or JSON that kubectl would refuse.
    """
    files, problems = source_files(src, base_dir)
    manifests = []
    for path, shown in files:
        try:
            manifests.extend(_load_file(path, shown, (contents or {}).get(os.path.realpath(path))))
        except InputError as error:
            problems.append(error)
    if problems:
        raise InputErrors(problems)
    return manifests


def source_files(src: Sources, base_dir: str | None = None) -> tuple[list[SourceFile], list[InputError]]:
    """The files ``load_sources`` reads for ``src``, in order and each once, and the problems met.

    Returns ``([(path to open, path to show), ...], [InputError, ...])``. The action plugin lists
    the files with it too, to find the vaulted ones among exactly the files the module reads.
    """
    entries = [src] if isinstance(src, (str, os.PathLike)) else list(src)
    problems: list[InputError] = []
    found: list[SourceFile] = []
    for entry in entries:
        try:
            found.extend(_expand_entry(entry, base_dir))
        except InputError as error:
            problems.append(error)
    files: list[SourceFile] = []
    seen_files: set[str] = set()
    for path, shown in found:
        real_path = os.path.realpath(path)
        if real_path not in seen_files:
            seen_files.add(real_path)
            files.append((path, shown))
    return files, problems


def _expand_entry(entry: object, base_dir: str | None) -> list[SourceFile]:
    """Return the (path, shown path) of every file one ``src`` entry stands for."""
    if not isinstance(entry, (str, os.PathLike)) or not os.fspath(entry):
        raise InputError(f"expected a path, got {type_name(entry)} {entry!r}", obj="src",
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
        fix="check the path; applyset_apply looks a relative src up in the role's files/ directory and the "
            "role (in a role), then the playbook's directory"
            + (f"; here it was resolved against {base_dir}" if base_dir else ""))


def _expand_glob(pattern: str, entry: str, base_dir: str | None) -> list[SourceFile]:
    # Only files count: a pattern like "dir/**" matches directories too, and walking them as
    # well would read their files twice. Use "dir/" to read a whole directory.
    matches = sorted(match for match in glob.glob(pattern, recursive=True) if os.path.isfile(match))
    if not matches:
        raise InputError("the pattern matches no files", obj=entry,
                         fix="check the pattern; use ** to match files in subdirectories")
    if base_dir and not os.path.isabs(os.path.expanduser(entry)):
        return [(match, os.path.relpath(match, base_dir)) for match in matches]
    return [(match, match) for match in matches]


def _walk_directory(root: str, shown_root: str) -> list[SourceFile]:
    """List manifest files under ``root`` recursively, sorted by path.

    Symbolic links are followed, so the real path of every directory on the way down is
    remembered: meeting one again below itself means a link loop.
    """
    found: list[SourceFile] = []

    def walk(directory: str, shown: str, ancestors: frozenset[str]) -> None:
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


def _load_file(path: str, shown: str, data: bytes | None = None) -> list[Manifest]:
    """Read one file (or ``data``, its bytes decrypted on the controller) and return its manifests."""
    file_ref = f"file {shown}"
    if data is None:
        data = _read_bytes(path, file_ref)
    if data.startswith(VAULT_HEADER):
        # Read as YAML it would be one string ("the document is not a mapping but a string").
        raise InputError(
            "the file is encrypted with Ansible Vault, and it was not decrypted on the controller", obj=file_ref,
            fix="run the module through its action plugin (a task applyset.kubernetes.applyset_apply), with the "
                "file on the controller and the vault password given to ansible-playbook")
    # Whatever the extension: kubectl tells JSON from YAML by the content.
    return _read_text(_decode(data, file_ref), shown, file_ref)


# The first bytes of a file that ansible-vault encrypted.
VAULT_HEADER = b"$ANSIBLE_VAULT;"


def _read_bytes(path: str, file_ref: str) -> bytes:
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise InputError(
                f"the file is {size} bytes, more than the limit of {MAX_FILE_BYTES} bytes",
                obj=file_ref, fix="split it into smaller files")
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise InputError(f"cannot read the file: {error.strerror}", obj=file_ref,
                         fix="check that the file exists and is readable") from error


def _decode(data: bytes, file_ref: str) -> str:
    """File bytes to text as kubectl decodes them: a UTF-16 byte order mark means UTF-16.

    Other files must be UTF-8 (a UTF-8 byte order mark is dropped). kubectl replaces bytes that
    are not UTF-8 with U+FFFD and goes on; we refuse the file rather than change its data.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as error:
            raise InputError(f"the file is not valid UTF-16 (byte offset {error.start})", obj=file_ref,
                             fix="save the file as UTF-8") from error
    try:
        # Plain utf-8, not utf-8-sig, so that the offset counts from the start of the file.
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise InputError(
            f"the file is not valid UTF-8 (byte offset {error.start})", obj=file_ref,
            fix="save the file as UTF-8") from error


def load_definition(definition: object, source: str = "definition") -> list[Manifest]:
    """Load manifests given inline: a dict, a list of dicts, or YAML/JSON text.

    Text is read as kubectl reads a file (``kubeyaml``); a text that starts with a comment line
    ``# Source: NAME`` (as ``helm template`` writes, and the deploy role for each template and
    kustomize build) is named NAME in messages. A dict was parsed by Ansible already
    (with PyYAML's rules, not kubectl's), so only its JSON form is made what kubectl would send:
    keys become strings and numbers what the server receives. A list may mix dicts and text.
    Empty documents and None items are skipped.

    Args:
        definition: a mapping, a list, or YAML/JSON text (or None: no manifests).
        source: how messages name the input (``definition``, ``definition item 2``, ``..., document 3``).

    Returns:
        The ``Manifest`` list, not yet validated (see ``validate``).

    Raises:
        InputErrors: the problems of all items together: a type that is no manifest, text that
            kubectl would refuse (naming the line and column), a value JSON cannot hold.
    """
    if definition is None:
        return []
    if isinstance(definition, (list, tuple)):
        items = [(item, f"{source} item {number}") for number, item in enumerate(definition, 1)]
    elif isinstance(definition, (str, dict)):
        items = [(definition, source)]
    else:
        raise InputErrors([InputError(
            f"expected a mapping, a list or YAML text, got {type_name(definition)}", obj=source,
            fix="give one Kubernetes object, a list of them, or YAML text")])
    manifests: list[Manifest] = []
    problems: list[InputError] = []
    for item, item_source in items:
        try:
            if isinstance(item, str):
                named = _SOURCE_LINE.match(item)
                item_source = named[1].strip() if named else item_source
                manifests.extend(_read_text(item, item_source, item_source))
            elif item is not None:
                # Anything else is one document; validate() reports what is not a mapping.
                _flatten_into(manifests, _as_sent(item, item_source), item_source)
        except InputError as error:
            problems.append(error)
    if problems:
        raise InputErrors(problems)
    return manifests


_SOURCE_LINE = re.compile(r"# Source: *([^\n]*\S)")


def _as_sent(item: object, source: str) -> object:
    try:
        return kubeyaml_json.to_json_value(item, where="the object")
    except kubeyaml_scalars.YamlError as error:
        raise InputError(str(error), obj=source, fix="give a value that JSON can hold") from None


def _read_text(text: str, source: str, error_ref: str) -> list[Manifest]:
    """Manifests of one text (a file's or an inline one): ``source, document N`` each."""
    try:
        documents = kubeyaml.read_stream(text)
    except kubeyaml_scalars.YamlError as error:
        raise _syntax_error(error, error_ref) from None
    manifests: list[Manifest] = []
    for number, document in documents:
        _flatten_into(manifests, document, f"{source}, document {number}")
    return manifests


def _syntax_error(error: kubeyaml_scalars.YamlError, source: str) -> InputError:
    message = str(error)
    language = "JSON" if message.startswith("JSON") else "YAML"
    message = message.removeprefix("JSON syntax error: ").removeprefix("JSON: ")
    if error.line is None:
        where = ""
    elif error.column is None:
        where = f" at line {error.line + 1}"
    else:
        where = f" at line {error.line + 1}, column {error.column + 1}"
    return InputError(f"{language} syntax error{where}: {message}", obj=source,
                      fix=error.fix or f"correct the {language} at that position")


def _flatten_into(manifests: list[Manifest], document: object, source: str) -> None:
    """Add ``document``, or each item of a List, as kubectl's resource builder unwraps them.

    Any mapping with an ``items`` field is a list to kubectl (apimachinery's unstructured
    decoder), whatever its kind or group (``v1 List``, ``rbac.authorization.k8s.io/v1
    RoleList``); items without apiVersion and kind get the list's, with ``List`` cut from the
    kind. kubectl refuses a list inside a list, and ``items: null`` in a v1 List; so do we.
    """
    if not (isinstance(document, dict) and "items" in document):
        manifests.append(Manifest(document, source))
        return
    items = document["items"]
    list_kind = document.get("kind")
    if not isinstance(items, list):
        raise InputError(f"items is {'null' if items is None else 'a ' + type_name(items)}, not a list",
                         obj=source, fix="make items a list of objects; kubectl reads any document with "
                                         "items as a list")
    if isinstance(list_kind, str) and not list_kind.endswith("List"):
        # kubectl would apply the items and drop the object itself: surely not what was meant.
        raise InputError(
            f"a {list_kind} with a top-level items field: kubectl reads it as a list of its items "
            "and drops the object itself", obj=source,
            fix="rename the items field, or use kind List to give a list of objects")
    item_kind = list_kind[:-len("List")] if isinstance(list_kind, str) else None
    for number, item in enumerate(items, start=1):
        item_source = f"{source}, item {number}"
        if isinstance(item, dict) and isinstance(item.get("items"), list):
            raise InputError("a list inside a list: kubectl cannot apply it (\"is not a list: no Items "
                             "field in this object\")", obj=item_source,
                             fix="move the inner list's items into the outer list")
        if isinstance(item, dict) and not item.get("apiVersion") and not item.get("kind") and item_kind:
            item = {"apiVersion": document.get("apiVersion"), "kind": item_kind, **item}
        manifests.append(Manifest(item, item_source))
