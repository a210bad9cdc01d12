"""An in-memory API server for the read-only code (inventory, verify, parent writes): ``StubClient``
answers GET, LIST and the writes a verify repair sends from a dict of objects, with the resources
discovery would serve (``STANDARD``). Shared by the unit tests of several packages."""

from __future__ import annotations

import copy

from applyset import spec
from applyset.errors import ApiError, ConflictError
from applyset.kube.http_requests import Response
from applyset.kube.discovery import Discovery, Resource

ALL_VERBS = frozenset({"get", "list", "watch", "create", "update", "patch", "delete"})


def resource(group, version, kind, plural, namespaced=True, verbs=ALL_VERBS):
    return Resource(group=group, version=version, kind=kind, plural=plural, namespaced=namespaced, verbs=verbs,
                    singular=kind.lower())


SECRET = resource("", "v1", "Secret", "secrets")
CONFIGMAP = resource("", "v1", "ConfigMap", "configmaps")
SERVICE = resource("", "v1", "Service", "services")
NAMESPACE = resource("", "v1", "Namespace", "namespaces", namespaced=False)
DEPLOYMENT = resource("apps", "v1", "Deployment", "deployments")
CRD = resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
               namespaced=False)
APPLYSET_CR = resource("example.com", "v1", "ApplySet", "applysets", namespaced=False)
WIDGET = resource("example.com", "v1", "Widget", "widgets")
TOKEN_REVIEW = resource("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", namespaced=False,
                        verbs=frozenset({"create"}))
STANDARD = [SECRET, CONFIGMAP, SERVICE, NAMESPACE, DEPLOYMENT, CRD, APPLYSET_CR, WIDGET, TOKEN_REVIEW]


def _matches(selector, labels):
    if not selector:
        return True
    if "," in selector and " in (" not in selector:  # a conjunction: every requirement
        return all(_matches(part, labels) for part in selector.split(","))
    if " in (" in selector:
        key, _, values = selector.partition(" in (")
        return labels.get(key) in values.rstrip(")").split(",")
    if "=" in selector:
        key, _, value = selector.partition("=")
        return labels.get(key) == value
    return selector in labels


class StubClient:
    """Stands in for KubeClient: objects in memory, LISTs and applies recorded."""

    def __init__(self, resources=STANDARD, forbidden=(), tenant_of=None):
        self.discovery = Discovery(list(resources))
        self.objects = []  # (Resource, object)
        self.forbidden = set(forbidden)  # GroupKinds whose LIST answers 403
        # A tenant's credentials: LISTs only in these namespaces, never across all or of cluster-scoped kinds.
        self.tenant_of = set(tenant_of) if tenant_of is not None else None
        self.failing = {}  # (GroupKind, version) -> the ApiError its LIST raises
        self.lists = []  # (GroupKind, namespace, selector, metadata_only)
        self.applied = []  # (Resource, body, keyword arguments)
        self.conflict = False  # make the next apply answer 409

    def add(self, res, name, namespace=None, *, labels=None, annotations=None, **metadata):
        meta = {"name": name, "uid": f"uid-{res.kind}-{namespace}-{name}", "resourceVersion": "7",
                "labels": dict(labels or {}), "annotations": dict(annotations or {}), **metadata}
        if namespace:
            meta["namespace"] = namespace
        obj = {"metadata": meta, "data": {"secret": "c2VjcmV0"}} if res == SECRET else {"metadata": meta}
        self.objects.append((res, obj))
        return obj

    def parent(self, res, name, namespace="", *, tooling="applyset.kubernetes/0.1.0", kinds="", namespaces="",
               live_id=None, **extra_annotations):
        """A parent with the right id unless live_id says otherwise (None keeps it, "" drops it)."""
        annotations = {spec.ANNOTATION_GROUP_KINDS: kinds, spec.ANNOTATION_ADDITIONAL_NAMESPACES: namespaces}
        if tooling is not None:
            annotations[spec.ANNOTATION_TOOLING] = tooling
        annotations.update({spec.PREFIX + k.replace("_", "-"): v for k, v in extra_annotations.items()})
        annotations = {k: v for k, v in annotations.items() if v is not None}
        real_id = spec.compute_id(name, namespace, res.kind, res.group)
        labels = {} if live_id == "" else {spec.LABEL_ID: live_id or real_id}
        self.add(res, name, namespace or None, labels=labels, annotations=annotations)
        return real_id

    def member(self, res, name, namespace, applyset_id, **metadata):
        return self.add(res, name, namespace, labels={spec.LABEL_PART_OF: applyset_id}, **metadata)

    # -- the KubeClient interface the library uses --------------------------------------------
    def discover(self):
        return self.discovery

    def list(self, res, namespace=None, *, label_selector=None, metadata_only=True, page_size=500):
        self.lists.append((res.group_kind, namespace, label_selector, metadata_only))
        if res.group_kind in self.forbidden:
            raise ApiError(f'{res.plural} is forbidden: cannot list resource "{res.plural}"', status=403,
                           reason="Forbidden")
        if self.tenant_of is not None and (not res.namespaced or namespace not in self.tenant_of):
            raise ApiError(f'{res.plural} is forbidden: cannot list resource "{res.plural}" '
                           + (f'in the namespace "{namespace}"' if namespace else "at the cluster scope"),
                           status=403, reason="Forbidden")
        if (res.group_kind, res.version) in self.failing:
            raise self.failing[(res.group_kind, res.version)]
        for held, obj in self.objects:
            meta = obj["metadata"]
            if held.group_kind != res.group_kind:
                continue
            if namespace and res.namespaced and meta.get("namespace") != namespace:
                continue
            if _matches(label_selector, meta.get("labels") or {}):
                yield copy.deepcopy(obj if not metadata_only else {"metadata": meta})

    def get(self, res, name, namespace=None):
        for held, obj in self.objects:
            meta = obj["metadata"]
            if held.group_kind == res.group_kind and meta["name"] == name and meta.get("namespace") == namespace:
                return copy.deepcopy(obj)
        return None

    def apply(self, res, body, **kwargs):
        self.applied.append((res, body, kwargs))
        if self.conflict:
            raise ConflictError("the object has been modified", status=409, reason="Conflict")
        return Response(200, body, [])

    def map(self, func, items):
        results = []
        for item in items:
            try:
                results.append(func(item))
            except Exception as err:  # as KubeClient.map: errors in place of results
                results.append(err)
        return results


def crd_marking(client, res):
    client.add(CRD, f"{res.plural}.{res.group}", labels={spec.LABEL_PARENT_TYPE: "true"})


# ----- inspecting parents ---------------------------------------------------------------------
