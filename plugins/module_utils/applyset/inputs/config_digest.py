"""The config digest (applyset_apply's ``config_digest`` option): Helm charts' ``checksum/config``
pod annotation, computed for the user.

A Deployment that mounts the ConfigMap ``shop-settings`` keeps running the old settings after a
deploy that changed them: its pod template did not change, so its controller starts no new pods
(kubernetes/kubernetes#22368). Helm charts work around it by hand with a pod-template annotation
holding the checksum of the config. Here the run does it: each pod template of a workload of the
set gets the annotation ``applyset.kubernetes.ansible/config-digest`` with one digest of every
ConfigMap and Secret of the set that the template references (volumes, projected volumes,
``envFrom``, ``env[].valueFrom``), so a changed one changes the template and the workload rolls;
an unchanged one leaves the digest, and the template, as they were (the no-op re-run writes
nothing). A rollback to an earlier revision restores that revision's digest with its ConfigMaps,
so the workloads roll back too.

Only the digest is written, never a value: sha256 over each object's kind, name and the data it
stores (a Secret's ``stringData`` counted as the ``data`` it becomes). References to objects that
are not in the set (made by another tool) are not followed: the run reads nothing more.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from typing import Any

from .. import spec
from ..object_meta import KubeObject
from ..spec import GroupKind, ObjectId
from .manifests import Manifest

ANNOTATION = spec.OWN_PREFIX + "config-digest"

# Where each workload kind keeps its pod template. Not Jobs (their template is immutable: a change
# would be refused) nor Pods (an annotation starts nothing).
TEMPLATE_PATHS = {
    GroupKind("apps", "Deployment"): ("spec", "template"),
    GroupKind("apps", "StatefulSet"): ("spec", "template"),
    GroupKind("apps", "DaemonSet"): ("spec", "template"),
    GroupKind("apps", "ReplicaSet"): ("spec", "template"),
    GroupKind("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template"),
    GroupKind("argoproj.io", "Rollout"): ("spec", "template"),
}

_CONFIG_KINDS = {spec.CONFIGMAP_KIND: "ConfigMap", spec.SECRET_KIND: "Secret"}
_KIND_NAMED = {kind: group_kind for group_kind, kind in _CONFIG_KINDS.items()}

ConfigRef = tuple[str, str]
"""A ConfigMap or Secret a pod spec reads: ``(kind, name)``, in the pod's namespace."""
# A referenced object and what it holds: (kind, name, the ConfigMap or Secret).
UsedConfig = tuple[str, str, KubeObject]
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def mappings(value: object) -> list[dict[str, Any]]:  # the maps of a list of a pod spec (JSON)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def get_path(mapping: object, *path: str) -> object:
    for key in path:
        mapping = mapping.get(key) if isinstance(mapping, dict) else None
    return mapping


def references(pod_spec: dict[str, Any]) -> set[ConfigRef]:
    """``(kind, name)`` of every ConfigMap and Secret the pod spec reads: its volumes (projected
    sources too), and each container's ``envFrom`` and ``env[].valueFrom``."""
    found: set[ConfigRef] = set()
    for volume in mappings(pod_spec.get("volumes")):
        found |= _named(volume.get("configMap"), "ConfigMap", "name")
        found |= _named(volume.get("secret"), "Secret", "secretName")
        for source in mappings(get_path(volume, "projected", "sources")):
            found |= _named(source.get("configMap"), "ConfigMap", "name") | _named(source.get("secret"), "Secret", "name")
    for container in (c for key in _CONTAINER_LISTS for c in mappings(pod_spec.get(key))):
        for source in mappings(container.get("envFrom")):
            found |= _named(source.get("configMapRef"), "ConfigMap", "name") | _named(source.get("secretRef"), "Secret", "name")
        for variable in mappings(container.get("env")):
            value_from = variable.get("valueFrom")
            found |= _named(get_path(value_from, "configMapKeyRef"), "ConfigMap", "name")
            found |= _named(get_path(value_from, "secretKeyRef"), "Secret", "name")
    return found


def _named(ref: object, kind: str, key: str) -> set[ConfigRef]:
    name = ref.get(key) if isinstance(ref, dict) else None
    return {(kind, name)} if isinstance(name, str) and name else set()


def stored_form(obj: KubeObject) -> dict[str, object]:
    """What a ConfigMap or Secret stores, for its digest: a Secret's ``stringData`` is the ``data``
    (base64) it becomes, so writing a value either way gives the same digest."""
    if obj.get("kind") == "Secret":
        data = dict(obj.get("data") or {})
        for key, value in (obj.get("stringData") or {}).items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        return {"data": data, "type": obj.get("type") or "Opaque"}
    return {"data": obj.get("data") or {}, "binaryData": obj.get("binaryData") or {}}


def digest(configs: list[UsedConfig]) -> str:
    """One sha256 over ``(kind, name, stored form)`` of each referenced object, in a fixed order."""
    canonical = json.dumps(sorted([kind, name, stored_form(obj)] for kind, name, obj in configs),
                           sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def annotate(members: list[Manifest], default_namespace: str | None) -> tuple[list[Manifest], list[str]]:
    """``members`` with the config digest on the pod template of each workload that references a
    ConfigMap or Secret of the set (in its namespace), and the references of those workloads.
    Annotated workloads are copies: the caller's documents are left as given."""
    configs = {ObjectId.of(m.group_kind, m.namespace or default_namespace, m.name): m.mapping
               for m in members if m.group_kind in _CONFIG_KINDS and m.name}
    if not configs:
        return members, []
    result, annotated = [], []
    for member in members:
        used = _used_configs(member, configs, member.namespace or default_namespace)
        if not used:
            result.append(member)
            continue
        result.append(_with_digest(member, digest(used)))
        annotated.append(member.ref or member.source)
    return result, annotated


def _used_configs(member: Manifest, configs: dict[ObjectId, KubeObject], namespace: str | None) -> list[UsedConfig]:
    """The ConfigMaps and Secrets of the set (``configs``, by kind, namespace and name) that the pod
    template of ``member`` references, or [] for a member without a pod template."""
    template = _template(member)
    pod_spec = get_path(template, "spec")
    if not isinstance(pod_spec, dict):
        return []
    keys = [(kind, name, ObjectId.of(_KIND_NAMED[kind], namespace, name)) for kind, name in sorted(references(pod_spec))]
    return [(kind, name, configs[key]) for kind, name, key in keys if key in configs]


def _template(member: Manifest) -> dict[str, Any] | None:  # the pod template: JSON of the manifest
    path = TEMPLATE_PATHS.get(member.group_kind)
    template = get_path(member.mapping, *path) if path else None
    return template if isinstance(template, dict) else None


def _with_digest(member: Manifest, value: str) -> Manifest:
    annotated = Manifest(copy.deepcopy(member.mapping), member.source)
    template = _template(annotated)
    if template is None:
        return member  # never: only members with a pod template reference config
    metadata = template.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), ANNOTATION: value}
    return annotated
