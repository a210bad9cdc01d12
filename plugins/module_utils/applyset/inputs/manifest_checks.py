"""What makes a manifest acceptable, checked before any request: ``validate`` reports every
problem of every document at once (``InputErrors``), as the API server would refuse them.

Checks: each document is a mapping with string apiVersion, kind and metadata.name; names and
namespaces valid as the server checks them (``names``); no generateName; labels and
annotations map strings to strings; no ApplySet member label in the input; sizes within what
the server stores; no object given twice.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from typing import Protocol

from . import names
from .. import spec
from ..object_meta import KubeObject
from ..errors import InputError, InputErrors


class InputDocument(Protocol):
    """What the checks read of an input document: a ``manifests.Manifest`` (that module imports this one)."""

    @property
    def obj(self) -> object:
        ...

    @property
    def source(self) -> str:
        ...

    @property
    def mapping(self) -> KubeObject:
        ...

    @property
    def api_version(self) -> str | None:
        ...

    @property
    def group(self) -> str:
        ...

    @property
    def kind(self) -> str | None:
        ...

    @property
    def group_kind(self) -> spec.GroupKind:
        ...

    @property
    def ref(self) -> str | None:
        ...

    @property
    def identity(self) -> spec.ObjectId:
        ...


# A document's mapping or its metadata as the input gave it, not checked yet: any value may be of any type.
Unchecked = Mapping[str, object]
# {(group, kind): namespaced} of the custom resources that CRDs of the input define.
CrdKinds = dict[spec.GroupKind, bool]

_OBJECT_FIX = "each document must be a Kubernetes object with apiVersion, kind and metadata.name"


def validate(manifests: Iterable[InputDocument]) -> None:
    """Check every one of ``manifests`` and raise one ``InputErrors`` listing all problems found.

    Checks: each document is a mapping with string apiVersion, kind and metadata.name; the
    name and namespace are valid as the API server checks them (``names``); no generateName;
    labels and annotations map strings to strings; no ApplySet member label in the input; no
    object given twice.
    """
    problems: list[InputError] = []
    first_seen: dict[spec.ObjectId, InputDocument] = {}
    crd_kinds = _kinds_defined_by_crds(manifests)
    for manifest in manifests:
        found = _problems_of(manifest, crd_kinds)
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


def _problem(manifest: InputDocument, message: str, fix: str, extra: Mapping[str, object] | None = None) -> InputError:
    ref = manifest.ref
    details: dict[str, object] = {"source": manifest.source, "object": ref}
    if extra:
        details.update(extra)
    obj = f"{manifest.source} ({ref})" if ref else manifest.source
    return InputError(message, obj=obj, fix=fix, details=details)


def _kinds_defined_by_crds(manifests: Iterable[InputDocument]) -> CrdKinds:
    """{(group, kind): namespaced} of the custom resources that CRDs in the input define."""
    kinds: CrdKinds = {}
    for manifest in manifests:
        obj = manifest.mapping
        if manifest.api_version is None or manifest.group_kind != spec.CRD_KIND:
            continue
        found_spec = obj.get("spec")
        crd_spec = found_spec if isinstance(found_spec, dict) else {}
        found_names = crd_spec.get("names")
        crd_names = found_names if isinstance(found_names, dict) else {}
        group, kind = crd_spec.get("group"), crd_names.get("kind")
        if isinstance(group, str) and isinstance(kind, str):
            kinds[spec.GroupKind(group, kind)] = crd_spec.get("scope", "Namespaced") != "Cluster"
    return kinds


def _problems_of(manifest: InputDocument, crd_kinds: CrdKinds | None = None) -> list[InputError]:
    """Return the problems of one manifest (the duplicate check aside)."""
    obj = manifest.obj
    if not isinstance(obj, dict):
        fix = _OBJECT_FIX
        if isinstance(obj, list):
            fix += "; separate several objects with --- or wrap them in a v1 List"
        return [_problem(manifest, f"the document is not a mapping but a {type_name(obj)}", fix)]
    problems: list[InputError] = []
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str) or not api_version:
        problems.append(_missing(manifest, "apiVersion", api_version, 'e.g. "apps/v1" or "v1"'))
    elif api_version.count("/") > 1 or "" in api_version.split("/"):
        problems.append(_problem(manifest, f'apiVersion "{api_version}" is not GROUP/VERSION or VERSION',
                                 'write e.g. "apps/v1" or "v1"'))
    kind = obj.get("kind")
    if not text_or_none(kind):
        problems.append(_missing(manifest, "kind", kind, 'e.g. "Deployment"'))

    if "metadata" not in obj:
        problems.append(_problem(manifest, "metadata.name is missing", "set metadata.name"))
        return problems
    metadata = obj["metadata"]
    if not isinstance(metadata, dict):
        problems.append(_problem(manifest, f"metadata is not a mapping but a {type_name(metadata)}",
                                 "make metadata a mapping with at least a name"))
        return problems
    problems.extend(_metadata_problems(manifest, metadata))
    problems.extend(_name_problems(manifest, metadata, crd_kinds or {}))
    problems.extend(_size_problems(manifest, obj))
    return problems


# What the API server accepts: ConfigMap and Secret content is limited to 1 MiB, and a
# request body to 3 MiB. Checked here so the object is refused before any write.
MAX_DATA_BYTES = 1024 * 1024
MAX_OBJECT_BYTES = 3 * 1024 * 1024


def _size_problems(manifest: InputDocument, obj: Unchecked) -> list[InputError]:
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


def _data_bytes(obj: Unchecked, base64_data: bool) -> int:
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


def _decoded_length(text: str) -> int:
    try:
        return len(base64.b64decode(text, validate=False))
    except (binascii.Error, ValueError):
        return len(text) * 3 // 4  # not valid base64: the server will say so


def _metadata_problems(manifest: InputDocument, metadata: Unchecked) -> list[InputError]:
    problems: list[InputError] = []
    if "generateName" in metadata:
        problems.append(_problem(
            manifest, "metadata.generateName is not supported: server-side apply needs a stable "
                      "name to find the object again on the next run (and to prune it)",
            "replace metadata.generateName with a fixed metadata.name"))
    name = metadata.get("name")
    if not text_or_none(name):
        problems.append(_missing(manifest, "metadata.name", name, "give the object a name"))
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        problems.append(_problem(manifest, f"metadata.namespace is a {type_name(namespace)}, "
                                           "not a string", "quote the namespace"))
    for field in ("labels", "annotations"):
        problems.extend(_string_map_problems(manifest, field, metadata.get(field)))
    labels = metadata.get("labels")
    if isinstance(labels, dict) and spec.LABEL_PART_OF in labels:
        problems.append(_problem(
            manifest, f'ApplySet label "{spec.LABEL_PART_OF}" already set in input data',
            "remove the label from the manifest; the ApplySet tooling adds it itself"))
    return problems


def _name_problems(manifest: InputDocument, metadata: Unchecked, crd_kinds: CrdKinds) -> list[InputError]:
    """metadata.name and metadata.namespace as the API server would check them."""
    problems: list[InputError] = []
    name, namespace = metadata.get("name"), metadata.get("namespace")
    group, kind = manifest.group, manifest.kind
    if isinstance(name, str) and name and kind:
        problem = names.name_problem(group, kind, name, served_by_crd=manifest.group_kind in crd_kinds)
        if problem:
            problems.append(_problem(manifest, problem, names.fix_for(name)))
    # A namespace on a cluster-scoped object is dropped later, as kubectl does.
    cluster_scoped = (group, kind) in names.CLUSTER_SCOPED or crd_kinds.get(manifest.group_kind) is False
    if isinstance(namespace, str) and namespace and not cluster_scoped:
        problem = names.namespace_problem(namespace)
        if problem:
            problems.append(_problem(manifest, problem, names.fix_for(namespace)))
    for problem, fix in names.metadata_map_problems(metadata.get("labels"), metadata.get("annotations")):
        problems.append(_problem(manifest, problem, fix))
    return problems


def _string_map_problems(manifest: InputDocument, field: str, value: object) -> list[InputError]:
    if value is None:
        return []
    if not isinstance(value, dict):
        return [_problem(manifest, f"metadata.{field} is not a mapping but a {type_name(value)}",
                         f"make metadata.{field} a mapping of strings to strings")]
    problems: list[InputError] = []
    for key, item in value.items():
        if not isinstance(key, str):
            problems.append(_problem(manifest, f"metadata.{field} has a non-string key {key!r}",
                                     "quote the key"))
        elif not isinstance(item, str):
            problems.append(_problem(
                manifest, f'metadata.{field}["{key}"] is a {type_name(item)} ({item!r}), not a string',
                'quote the value, e.g. "true" or "1"'))
    return problems


def _missing(manifest: InputDocument, field: str, value: object, example: str) -> InputError:
    if value is None:
        message = f"{field} is missing"
    elif isinstance(value, str):
        message = f"{field} is empty"
    else:
        message = f"{field} is a {type_name(value)}, not a string"
    return _problem(manifest, message, f"set {field} to a string, {example}")


def text_or_none(value: object) -> str | None:
    """The value if it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def type_name(value: object) -> str:
    """Name a YAML value's type in the user's terms (isinstance: Ansible subclasses str)."""
    for python_type, name in _TYPE_NAMES:
        if isinstance(value, python_type):
            return name
    return "null" if value is None else type(value).__name__


# bool before int: True is an int too.
_TYPE_NAMES = ((bool, "boolean"), (int, "number"), (float, "number"), (str, "string"),
               (dict, "mapping"), (list, "list"))
