"""Helm's release records, read and decoded: what ``helm.take_over`` takes over and retires.

Helm 3 and Helm 4 keep a release as one record per revision in the release's namespace, named
``sh.helm.release.v1.<name>.v<N>`` and labelled ``owner=helm``, ``name``, ``status`` and
``version``: a Secret of type ``helm.sh/release.v1`` with the default ``secret`` storage driver, a
ConfigMap with ``HELM_DRIVER=configmap``. Its data key ``release`` holds base64(gzip(JSON of the
release)); the API base64-encodes a Secret's data once more. ``helm list`` shows a release while
such a record exists, and ``helm uninstall`` deletes what the newest one's manifest names, so
retiring a release means deleting them all. (The ``sql`` driver keeps them outside the cluster.)

Objects Helm installed carry the annotations ``meta.helm.sh/release-name`` and
``meta.helm.sh/release-namespace`` (Helm 3.2 and later), which say which release owns them.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from dataclasses import dataclass
from typing import Any, TypedDict

from ..object_meta import KubeObject, ObjectMeta, metadata_of
from .. import spec
from ..errors import ApiError, ApplySetError
from ..kube.api import KubeApi
from ..kube.discovery import Discovery, Resource
from ..kubeyaml.stream import read_stream

RELEASE_TYPE = "helm.sh/release.v1"
RELEASE_NAME = "meta.helm.sh/release-name"
RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
# A release Helm is in the middle of changing: taking it over would race Helm.
PENDING = frozenset({"pending-install", "pending-upgrade", "pending-rollback", "uninstalling"})
_GZIP_MAGIC = b"\x1f\x8b\x08"

# A release as Helm encodes it in a record (JSON: name, info, chart, manifest, config ...): Helm's
# format, not a Kubernetes object; only ``chart.metadata``, ``info.status`` and ``manifest`` are read.
HelmRelease = dict[str, Any]


class ReleaseProvenance(TypedDict):
    """What the set's first revision keeps of a release it took over (``Release.provenance``)."""

    name: str
    namespace: str
    revision: int
    status: str
    chart: dict[str, str]
    manifest_sha256: str
    objects: list[str]


@dataclass(frozen=True)
class Record:
    """One revision's record: its ``kind`` (``spec.SECRET_KIND`` or ``spec.CONFIGMAP_KIND``), ``name``,
    ``uid`` (to delete exactly it), ``version`` and ``status``."""

    kind: spec.GroupKind
    name: str
    uid: str | None
    version: int
    status: str


@dataclass(frozen=True)
class Release:
    """A release as its newest record describes it: ``name``, ``namespace``, ``version`` and
    ``status`` of the newest revision, its ``chart`` metadata (name, version, appVersion), the
    ``manifest`` Helm installed, and every revision's ``records`` (oldest first)."""

    name: str
    namespace: str
    version: int
    status: str
    chart: dict[str, str]  # the chart's name, version and appVersion, those it has
    manifest: str
    records: tuple[Record, ...]

    @property
    def ref(self) -> str:
        """``namespace/name``, as the refusals name it."""
        return f"{self.namespace}/{self.name}"

    @property
    def pending(self) -> bool:
        """Whether Helm is in the middle of changing it (``PENDING``)."""
        return self.status in PENDING

    def provenance(self) -> ReleaseProvenance:
        """What the set's first revision keeps of the release: its chart metadata, revision and
        the digest and objects of its manifest; never its values (they may hold secrets) nor the
        manifest's text (it may hold a Secret's data)."""
        return {"name": self.name, "namespace": self.namespace, "revision": self.version, "status": self.status,
                "chart": dict(self.chart),
                "manifest_sha256": hashlib.sha256(self.manifest.encode()).hexdigest(),
                "objects": [ref.text for ref in manifest_objects(self.manifest, self.namespace)]}


@dataclass(frozen=True)
class ManifestObject:
    """One object of a release's manifest: ``api_version``, ``kind``, ``name`` and the ``namespace``
    it names (None when it names none: the release's, for a namespaced kind)."""

    api_version: str
    kind: str
    name: str
    namespace: str | None

    @property
    def text(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


def decode(data_value: str, in_secret: bool = True) -> HelmRelease:
    """The release JSON of a record's ``data.release`` value as the API returns it (a Secret's
    ``in_secret``, base64-encoded once more by the API, or a ConfigMap's).

    Raises:
        ValueError: when the value is not a Helm release.
    """
    raw = base64.b64decode(base64.b64decode(data_value) if in_secret else data_value)
    if raw[:3] == _GZIP_MAGIC:  # Helm compresses; it still reads uncompressed records
        raw = gzip.decompress(raw)
    release = json.loads(raw)
    if not isinstance(release, dict):
        raise ValueError("not a Helm release")
    return release


def encode(release: HelmRelease) -> str:
    """A record Secret's ``data.release`` value for ``release`` (as Helm writes it; for tests)."""
    inner = base64.b64encode(gzip.compress(json.dumps(release).encode(), mtime=0))
    return base64.b64encode(inner).decode()


def record_name(name: str, version: int) -> str:
    """The Secret that holds revision ``version`` of release ``name``."""
    return f"sh.helm.release.v1.{name}.v{version}"


def owner_of(meta: ObjectMeta) -> tuple[str, str] | None:
    """The ``(release, namespace)`` the Helm annotations of ``meta`` name, or None."""
    annotations = meta.get("annotations") or {}
    name = annotations.get(RELEASE_NAME)
    return (name, annotations.get(RELEASE_NAMESPACE) or meta.get("namespace") or "") if name else None


def manifest_objects(manifest: str, namespace: str) -> list[ManifestObject]:
    """The objects of a release's ``manifest`` (Helm's rendered YAML stream), in order."""
    found = []
    for _number, doc in read_stream(manifest or ""):
        if not isinstance(doc, dict) or not doc.get("kind"):
            continue
        meta = metadata_of(doc)
        found.append(ManifestObject(str(doc.get("apiVersion") or ""), str(doc["kind"]), str(meta.get("name") or ""),
                                    meta.get("namespace") or None))
    return found


def object_ids(release: Release, discovery: Discovery) -> dict[spec.ObjectId, Resource]:
    """``{ObjectId: Resource}`` of the release's objects of kinds the server serves (a namespaced
    object that names no namespace is in the release's)."""
    ids: dict[spec.ObjectId, Resource] = {}
    for obj in manifest_objects(release.manifest, release.namespace):
        group, _slash, version = obj.api_version.rpartition("/")
        res = discovery.for_gvk(group, version, obj.kind)
        if res is None:
            continue
        namespace = (obj.namespace or release.namespace) if res.namespaced else ""
        ids[spec.ObjectId.of(res.group_kind, namespace, obj.name)] = res
    return ids


def read(client: KubeApi, discovery: Discovery, name: str, namespace: str) -> Release | None:
    """Release ``name`` in ``namespace`` as its newest record describes it (Secrets, else
    ConfigMaps: Helm's two in-cluster storage drivers); None when Helm keeps no record of it
    there (never installed, uninstalled, or already taken over).

    Raises:
        ApplySetError: when the records cannot be listed or read (naming the release and the fix).
    """
    for kind, plural in ((spec.SECRET_KIND, "secrets"), (spec.CONFIGMAP_KIND, "configmaps")):
        res = discovery.for_group_kind(kind)
        if res is None:
            continue
        try:
            listed = [obj for obj in client.list(res, namespace, label_selector=f"owner=helm,name={name}",
                                                 metadata_only=False)
                      if kind == spec.CONFIGMAP_KIND or obj.get("type") == RELEASE_TYPE]
        except ApiError as err:
            raise ApplySetError(f"cannot read the records of Helm release {namespace}/{name}: {err.message}",
                                obj=f"Helm release {namespace}/{name}",
                                fix=f"grant this user list on {plural} in that namespace") from err
        if listed:
            return _release(kind, listed, name, namespace)
    return None


def _release(kind: spec.GroupKind, listed: list[KubeObject], name: str, namespace: str) -> Release:
    records = sorted((_record(kind, obj) for obj in listed), key=lambda r: r.version)
    newest = next(obj for obj in listed if obj["metadata"]["name"] == records[-1].name)
    try:
        release = decode((newest.get("data") or {}).get("release") or "", in_secret=kind == spec.SECRET_KIND)
    except (ValueError, OSError) as err:
        raise ApplySetError(f"the record {records[-1].name} of Helm release {namespace}/{name} cannot be read "
                            f"({err})", obj=f"{kind.kind} {namespace}/{records[-1].name}",
                            fix="repair or delete the damaged record with helm or kubectl, then run again") from err
    metadata = (release.get("chart") or {}).get("metadata") or {}
    chart = {key: metadata[key] for key in ("name", "version", "appVersion") if metadata.get(key)}
    status = (release.get("info") or {}).get("status") or records[-1].status
    return Release(name, namespace, records[-1].version, status, chart, release.get("manifest") or "", tuple(records))


def _record(kind: spec.GroupKind, obj: KubeObject) -> Record:
    meta = metadata_of(obj)
    labels = meta.get("labels") or {}
    version = labels.get("version") or meta.get("name", "").rpartition(".v")[2]
    return Record(kind, meta.get("name", ""), meta.get("uid"), int(version) if str(version).isdigit() else 0,
                  labels.get("status") or "")
