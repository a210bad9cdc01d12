"""Versioned ConfigMaps and Secrets: each content gets its own name, and the set's workloads are
pointed at it, so a changed one rolls them (issue 49; kapp's ``kapp.k14s.io/versioned``,
kustomize's ``configMapGenerator`` hash suffix).

A ConfigMap or Secret annotated ``applyset.kubernetes.ansible/versioned: "true"`` (or carrying
kapp's ``kapp.k14s.io/versioned``, whatever its value, so a kapp user moves without editing) is sent
as ``<name>-<digest>``, and so is one the task names (applyset_apply's ``versioned``): the first 10 hex digits of the sha256 of what it stores
(``config_digest.stored_form``), so the same content gets the same name on every run (the no-op
re-run writes nothing) and a Secret's values never show beyond that digest. The name it was given
is kept in the annotation ``applyset.kubernetes.ansible/versioned-name``: a body that already has it
(a revision's body, loaded by a rollback) keeps its base name, so renaming is idempotent.

Every reference to the name given, in the pod templates of the set's workloads (in the same
namespace), is rewritten to the new name: volumes, projected sources, ``envFrom``,
``env[].valueFrom`` and ``imagePullSecrets``. The older versions stay members; which of them a run
keeps is ``rules.versioned_keep``'s decision.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Collection, Mapping
from typing import Any

from .. import spec
from ..errors import InputError
from ..object_meta import KubeObject, ObjectMeta
from ..spec import GroupKind
from .config_digest import TEMPLATE_PATHS, get_path as _get, mappings as _maps, stored_form
from .manifests import Manifest

ANNOTATION = spec.OWN_PREFIX + "versioned"
KAPP_ANNOTATION = "kapp.k14s.io/versioned"
BASE_NAME = spec.OWN_PREFIX + "versioned-name"
DIGEST_LENGTH = 10  # kustomize's hash suffix is 10 characters too
_MAX_NAME = 253  # a ConfigMap's or Secret's name is a DNS subdomain

# Pod templates are rewritten in these kinds besides config_digest's: a Job's template and a Pod are
# immutable, but a new Job or Pod (or one recreated) must read the version of its own run.
_REWRITTEN = {**TEMPLATE_PATHS, GroupKind("batch", "Job"): ("spec", "template"), GroupKind("", "Pod"): ()}
_KINDS = {spec.CONFIGMAP_KIND: "ConfigMap", spec.SECRET_KIND: "Secret"}
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")

# (kind, namespace, name given) -> the versioned name
Renames = dict[tuple[str, "str | None", str], str]


def is_versioned(annotations: object) -> bool:
    """Whether an object's annotations mark it versioned (ours "true", or kapp's, any value)."""
    if not isinstance(annotations, dict):
        return False
    return annotations.get(ANNOTATION) == "true" or KAPP_ANNOTATION in annotations


def version_suffix(obj: dict[str, Any]) -> str:
    """The digest suffix of a ConfigMap's or Secret's content: sha256 of its stored form, 10 hex digits."""
    canonical = json.dumps(stored_form(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_LENGTH]


def marked_by_task(kind: str, metadata: Mapping[str, Any], marked: Collection[str]) -> bool:
    """Whether the task's list (applyset_apply's ``versioned``: ``ConfigMap``, ``Secret``, or one of
    them with ``/<name>``) marks an object of ``kind`` with ``metadata`` (its name as given: a
    versioned body's base name)."""
    annotations = metadata.get("annotations")
    base = annotations.get(BASE_NAME) if isinstance(annotations, dict) else None
    return kind in marked or f"{kind}/{base or metadata.get('name')}" in marked


def version(members: list[Manifest], default_namespace: str | None,
            marked: Collection[str] = ()) -> tuple[list[Manifest], Renames]:
    """``members`` with each versioned ConfigMap and Secret (annotated, or ``marked`` by the task)
    renamed and the workloads' references rewritten (copies: the caller's documents are left as
    given), and the renames made.

    Raises:
        InputError: a versioned name that would be longer than the server allows.
    """
    renames: Renames = {}
    result = []
    for member in members:
        kind = _KINDS.get(member.group_kind)
        if kind and isinstance(member.name, str) and _marked(kind, member.metadata, marked):
            member = _renamed(member)
            base = member.metadata["annotations"][BASE_NAME]
            renames[(kind, member.namespace or default_namespace, base)] = member.name
        result.append(member)
    if not renames:
        return members, {}
    return [_rewritten(m, renames, m.namespace or default_namespace) for m in result], renames


def _marked(kind: str, metadata: ObjectMeta, marked: Collection[str]) -> bool:
    """Whether an object is versioned: by its annotations or the task's list. Annotations of another
    type than a mapping leave it as given: the plan refuses them."""
    annotations: object = metadata.get("annotations")  # input: may be of any type
    if annotations is not None and not isinstance(annotations, dict):
        return False
    return is_versioned(annotations) or marked_by_task(kind, metadata, marked)


def _renamed(member: Manifest) -> Manifest:
    renamed = Manifest(copy.deepcopy(member.mapping), member.source)
    metadata = renamed.metadata
    if metadata.get("annotations") is None:
        metadata["annotations"] = {}
    annotations = metadata["annotations"]
    base = annotations.get(BASE_NAME) or member.name
    name = f"{base}-{version_suffix(renamed.mapping)}"
    if len(name) > _MAX_NAME:
        raise InputError(f"the versioned name {name!r} is longer than {_MAX_NAME} characters", obj=member.ref or member.source,
                         fix=f"shorten the name to at most {_MAX_NAME - DIGEST_LENGTH - 1} characters")
    metadata["name"] = name
    annotations[BASE_NAME] = base
    return renamed


def _rewritten(member: Manifest, renames: Renames, namespace: str | None) -> Manifest:
    """``member`` with its pod template's references renamed (a copy), or itself when none is."""
    body = rewritten_body(member.mapping, member.group_kind, renames, namespace)
    return member if body is None else Manifest(body, member.source)


def rewritten_body(body: KubeObject, group_kind: GroupKind, renames: Renames, namespace: str | None) -> KubeObject | None:
    """A copy of ``body`` (an object of ``group_kind`` in ``namespace``) with its pod template's references
    to the renamed ConfigMaps and Secrets rewritten, or None when it has none (a hook's body as a member's)."""
    path = _REWRITTEN.get(group_kind)
    if path is None:
        return None
    copied = copy.deepcopy(body)
    template = _get(copied, *path)
    pod_spec = template if not path else _get(template, "spec")
    if not isinstance(pod_spec, dict) or not rewrite_pod_spec(pod_spec, renames, namespace):
        return None
    return copied


def rewrite_pod_spec(pod_spec: dict[str, Any], renames: Renames, namespace: str | None) -> bool:
    """Rewrite in place every reference of ``pod_spec`` to a renamed ConfigMap or Secret; whether any was."""
    refs = [(volume.get("configMap"), "ConfigMap", "name") for volume in _maps(pod_spec.get("volumes"))]
    refs += [(volume.get("secret"), "Secret", "secretName") for volume in _maps(pod_spec.get("volumes"))]
    for volume in _maps(pod_spec.get("volumes")):
        for source in _maps(_get(volume, "projected", "sources")):
            refs += [(source.get("configMap"), "ConfigMap", "name"), (source.get("secret"), "Secret", "name")]
    refs += [(pull, "Secret", "name") for pull in _maps(pod_spec.get("imagePullSecrets"))]
    for container in (c for key in _CONTAINER_LISTS for c in _maps(pod_spec.get(key))):
        for source in _maps(container.get("envFrom")):
            refs += [(source.get("configMapRef"), "ConfigMap", "name"), (source.get("secretRef"), "Secret", "name")]
        for variable in _maps(container.get("env")):
            value_from = variable.get("valueFrom")
            refs += [(_get(value_from, "configMapKeyRef"), "ConfigMap", "name"),
                     (_get(value_from, "secretKeyRef"), "Secret", "name")]
    changed = False
    for ref, kind, key in refs:
        name = ref.get(key) if isinstance(ref, dict) else None
        new = renames.get((kind, namespace, name)) if isinstance(ref, dict) and isinstance(name, str) else None
        if isinstance(ref, dict) and new is not None and new != name:
            ref[key] = new
            changed = True
    return changed
