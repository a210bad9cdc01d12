"""A small in-memory stand-in for the API server, at the HTTP boundary of ``KubeClient``.

``KubeClient`` sends every request through ``self._pool.request(...)`` (a urllib3 PoolManager);
``FakeApi`` takes that pool's place and answers what the engine sends: aggregated discovery,
GET, LIST (label selectors, metadata-only, ``limit``/``continue``), server-side apply, merge
patch, POST and DELETE with a UID precondition. It is not a server: no admission, no defaults,
no garbage collection, and server-side apply is reduced to "merge the body, drop what this
manager applied before and left out". What it does is what the pure-logic tests need, and
tests/integration proves the same behaviours against a real API server.

Every request is recorded (``FakeApi.requests``) so that a test can say "no write was sent";
``FakeApi.fail`` makes a matching request fail, once or always; ``FakeApi.before`` runs a
callback just before a matching request is answered (another run writing the parent, say).

``outcome`` is the one place tests read how a run ended (see its docstring).
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass
from types import SimpleNamespace

import urllib3
from applyset import engine as engines
from applyset.run.options import Options, RunOptions
from applyset.run import report
from applyset.kube import client as kube
from applyset.kube import http_requests as httprequests
from applyset import spec
from applyset.errors import ApplySetError
from applyset.inputs.manifests import load_definition

HOST = "https://fake.k8s.test:6443"
WRITE_METHODS = frozenset({"PATCH", "POST", "PUT", "DELETE"})
ALL_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Kind:
    """One resource the fake serves."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple = ALL_VERBS
    stored_as: tuple | None = None  # (group, kind) of another resource whose objects these are

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage(self) -> tuple:
        """Which objects a request of this resource reaches: one object may be served under two
        groups (an Event as v1 and as events.k8s.io/v1)."""
        return self.stored_as or (self.group, self.kind)


DEFAULT_KINDS = (
    Kind("", "v1", "Namespace", "namespaces", False),
    Kind("", "v1", "ConfigMap", "configmaps", True),
    Kind("", "v1", "Secret", "secrets", True),
    Kind("", "v1", "Service", "services", True),
    Kind("", "v1", "ServiceAccount", "serviceaccounts", True),
    Kind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True),
    Kind("", "v1", "Event", "events", True),
    Kind("events.k8s.io", "v1", "Event", "events", True, stored_as=("", "Event")),
    Kind("apps", "v1", "Deployment", "deployments", True),
    Kind("batch", "v1", "Job", "jobs", True),
    Kind("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    Kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False),
    Kind("apiregistration.k8s.io", "v1", "APIService", "apiservices", False),
)


@dataclass
class Request:
    """One request as the fake received it."""

    method: str
    path: str
    query: dict  # name -> last value
    body: object  # parsed JSON, or None
    content_type: str | None
    accept: str | None
    status: int | None = None  # the fake's answer

    @property
    def dry_run(self) -> bool:
        if self.query.get("dryRun") == "All":
            return True
        return isinstance(self.body, dict) and self.body.get("dryRun") == ["All"]

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


@dataclass
class _Failure:
    method: str
    path: str
    status: int
    body: dict
    times: int | None  # None: always
    when: object = None  # optional predicate on the Request


@dataclass
class _Hook:
    method: str
    path: str
    callback: object
    times: int | None


@dataclass
class _Stored:
    obj: dict


class HttpError(Exception):
    def __init__(self, status: int, reason: str, message: str, **details):
        super().__init__(message)
        self.status, self.reason, self.message, self.details = status, reason, message, details

    def body(self) -> dict:
        return status_body(self.status, self.reason, self.message, **self.details)


def status_body(code: int, reason: str, message: str, **details) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code, "details": details}


class FakeApi:
    """Stands in for urllib3.PoolManager inside ``KubeClient`` (see ``client``)."""

    def __init__(self, kinds=DEFAULT_KINDS, establish_crds=True):
        self.kinds = list(kinds)
        self.establish_crds = establish_crds
        self.page_limit = 0  # >0: LIST pages hold at most this many items, whatever the limit asked
        self.requests: list[Request] = []
        self._store: dict[tuple, _Stored] = {}
        self._failures: list[_Failure] = []
        self._hooks: list[_Hook] = []
        self._warnings: list[tuple] = []
        self._lock = threading.RLock()
        self._version = 100
        self._uids = 0

    # -- what tests call ------------------------------------------------------------------------
    def add(self, obj: dict) -> dict:
        """Store an object as if it had been created earlier; returns the stored copy."""
        kind = self.kind_of(obj["apiVersion"], obj["kind"])
        meta = obj.setdefault("metadata", {})
        key = self._key(kind, meta.get("namespace") if kind.namespaced else None, meta["name"])
        stored = copy.deepcopy(obj)
        if not kind.namespaced:
            stored["metadata"].pop("namespace", None)
        self._stamp(stored, None)
        self._store[key] = _Stored(stored)
        return copy.deepcopy(stored)

    def add_namespace(self, name: str) -> dict:
        return self.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def object(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        """A copy of the stored object, or None."""
        k = self.kind_of(api_version, kind)
        stored = self._store.get(self._key(k, namespace if k.namespaced else None, name))
        return copy.deepcopy(stored.obj) if stored else None

    def objects(self, api_version: str, kind: str) -> list[dict]:
        k = self.kind_of(api_version, kind)
        return [copy.deepcopy(s.obj) for key, s in sorted(self._store.items()) if key[:2] == k.storage]

    def names(self, api_version: str, kind: str) -> list[str]:
        return [o["metadata"]["name"] for o in self.objects(api_version, kind)]

    def remove(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        """Delete a stored object as another client would."""
        k = self.kind_of(api_version, kind)
        del self._store[self._key(k, namespace if k.namespaced else None, name)]

    def update(self, api_version: str, kind: str, name: str, namespace: str | None, change) -> dict:
        """Change a stored object in place as another client would (new resourceVersion)."""
        k = self.kind_of(api_version, kind)
        stored = self._store[self._key(k, namespace if k.namespaced else None, name)]
        change(stored.obj)
        self._stamp(stored.obj, stored.obj)
        return copy.deepcopy(stored.obj)

    def fail(self, method: str, path: str, status: int = 500, message: str = "injected failure",
             reason: str = "InternalError", times: int | None = 1, when=None, **details) -> None:
        """Answer the next ``times`` requests matching method and path (None: all) with an error."""
        self._failures.append(_Failure(method, path, status, status_body(status, reason, message, **details),
                                       times, when))

    def warn(self, method: str, path: str, message: str) -> None:
        """Answer every request matching method and path with a ``Warning: 299`` header (as admission
        webhooks and deprecated APIs do)."""
        self._warnings.append((method, path, message))

    def before(self, method: str | None, path: str | None, callback, times: int | None = 1) -> None:
        """Call ``callback(request)`` just before a matching request is answered (None matches any)."""
        self._hooks.append(_Hook(method, path, callback, times))

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.is_write]

    def sent(self, method: str | None = None, path: str | None = None) -> list[Request]:
        return [r for r in self.requests if (method is None or r.method == method)
                and (path is None or r.path == path)]

    def kind_of(self, api_version: str, kind: str) -> Kind:
        group, _, version = api_version.rpartition("/")
        for k in self.kinds + self._kinds_of_crds():
            if k.group == group and k.kind == kind:
                return k
        raise KeyError(f"the fake serves no {kind} in {api_version}")

    # -- the pool interface ---------------------------------------------------------------------
    def request(self, method, url, body=None, headers=None, timeout=None, preload_content=True):
        headers = dict(headers or {})
        parsed = urllib.parse.urlsplit(url)
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        if isinstance(body, bytes):
            body = body.decode()
        req = Request(method, urllib.parse.unquote(parsed.path), query, json.loads(body) if body else None,
                      headers.get("Content-Type"), headers.get("Accept"))
        with self._lock:
            self.requests.append(req)
            hooks = [hook for hook in self._hooks
                     if hook.method in (None, method) and hook.path in (None, req.path)]
            for hook in hooks:
                if hook.times is not None:
                    hook.times -= 1
                    if hook.times <= 0:
                        self._hooks.remove(hook)
        for hook in hooks:  # outside the lock: a hook may wait for another thread's request
            hook.callback(req)
        with self._lock:
            failure = self._failure_for(req)
            warnings = []
            if failure is not None:
                status, payload = failure.status, failure.body
            else:
                try:
                    status, payload = self._answer(req)
                    warnings = [text for m, p, text in self._warnings if m == method and p == req.path]
                except HttpError as err:
                    status, payload = err.status, err.body()
            req.status = status
        return _response(status, payload, warnings)

    def _failure_for(self, req: Request) -> _Failure | None:
        for failure in self._failures:
            if failure.method == req.method and failure.path == req.path and (
                    failure.when is None or failure.when(req)):
                if failure.times is not None:
                    failure.times -= 1
                    if failure.times <= 0:
                        self._failures.remove(failure)
                return failure
        return None

    # -- answers --------------------------------------------------------------------------------
    def _answer(self, req: Request):
        if req.method == "GET" and req.path in ("/api", "/apis"):
            return 200, self._discovery(core=req.path == "/api")
        kind, namespace, name = self._route(req.path)
        if req.method == "GET" and req.query.get("watch") == "true":
            # Not served: waits then poll (wait/watching.py); tests/integration proves watching.
            raise HttpError(405, "MethodNotAllowed", "the fake does not serve watches")
        if req.method == "GET":
            return (200, self._get(kind, namespace, name)) if name else (200, self._list(kind, namespace, req))
        if name is None and req.method != "POST":
            raise HttpError(405, "MethodNotAllowed", f"{req.method} on a collection is not served by the fake")
        if req.method == "PATCH" and req.content_type == httprequests.APPLY_PATCH:
            return self._apply(kind, namespace, name, req)
        if req.method == "PATCH" and req.content_type == "application/merge-patch+json":
            return self._merge_patch(kind, namespace, name, req)
        if req.method == "PATCH" and req.content_type == "application/json-patch+json":
            return self._json_patch(kind, namespace, name, req)
        if req.method == "POST":
            return self._create(kind, namespace, req)
        if req.method == "DELETE":
            return self._delete(kind, namespace, name, req)
        raise HttpError(415, "UnsupportedMediaType", f"the fake does not answer {req.method} {req.content_type}")

    def _discovery(self, core: bool) -> dict:
        groups: dict[str, dict[str, list]] = {}
        for k in self.kinds:
            if (k.group == "") == core:
                groups.setdefault(k.group, {}).setdefault(k.version, []).append({
                    "resource": k.plural, "responseKind": {"group": k.group, "version": k.version, "kind": k.kind},
                    "scope": "Namespaced" if k.namespaced else "Cluster", "verbs": list(k.verbs),
                    "singularResource": k.kind.lower()})
        items = [{"metadata": {"name": group},
                  "versions": [{"version": v, "resources": res} for v, res in versions.items()]}
                 for group, versions in groups.items()]
        return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": items}

    def _route(self, path: str):
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise HttpError(404, "NotFound", f"the fake serves no {path}")
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 2:
            raise HttpError(404, "NotFound", f"the fake serves no {path}")
        plural, name = rest[0], (rest[1] if len(rest) == 2 else None)
        for k in self.kinds + self._kinds_of_crds():
            if (k.group, k.version, k.plural) == (group, version, plural):
                return k, namespace, name
        raise HttpError(404, "NotFound", f"the server could not find the requested resource ({path})")

    def _kinds_of_crds(self) -> list[Kind]:
        """Kinds that stored CRDs define: served at once, though discovery (read at the start of a
        run) does not show them yet."""
        kinds = []
        for key, stored in self._store.items():
            if key[:2] != ("apiextensions.k8s.io", "CustomResourceDefinition"):
                continue
            crd_spec = stored.obj.get("spec") or {}
            names = crd_spec.get("names") or {}
            for version in crd_spec.get("versions") or []:
                kinds.append(Kind(crd_spec.get("group", ""), version.get("name", ""), names.get("kind", ""),
                                  names.get("plural", ""), crd_spec.get("scope", "Namespaced") == "Namespaced"))
        return kinds

    def _key(self, kind: Kind, namespace, name) -> tuple:
        return (*kind.storage, namespace or "", name)

    def _stored(self, kind: Kind, namespace, name) -> _Stored:
        stored = self._store.get(self._key(kind, namespace, name))
        if stored is None:
            raise HttpError(404, "NotFound", f'{kind.plural} "{name}" not found', name=name, kind=kind.plural,
                            group=kind.group)
        return stored

    def _get(self, kind, namespace, name) -> dict:
        return copy.deepcopy(self._stored(kind, namespace, name).obj)

    def _list(self, kind: Kind, namespace, req: Request) -> dict:
        selector = parse_selector(req.query.get("labelSelector", ""))
        items = [s.obj for key, s in sorted(self._store.items())
                 if key[:2] == kind.storage and (namespace is None or key[2] == namespace)
                 and selector((s.obj.get("metadata") or {}).get("labels") or {})]
        start = int(req.query.get("continue") or 0)
        limit = int(req.query.get("limit") or 0) or len(items) or 1
        limit = min(limit, self.page_limit or limit)
        page, rest = items[start:start + limit], items[start + limit:]
        metadata_only = (req.accept or "").startswith("application/json;as=PartialObjectMetadataList")
        if metadata_only:
            page = [{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                     "metadata": copy.deepcopy(o["metadata"])} for o in page]
        else:
            page = [{k: copy.deepcopy(v) for k, v in o.items() if k not in ("apiVersion", "kind")} for o in page]
        meta = {"resourceVersion": str(self._version)}
        if rest:
            meta["continue"] = str(start + limit)
        return {"kind": "PartialObjectMetadataList" if metadata_only else kind.kind + "List",
                "apiVersion": "meta.k8s.io/v1" if metadata_only else kind.api_version,
                "metadata": meta, "items": page}

    def _check_namespace(self, kind: Kind, namespace) -> None:
        if kind.namespaced and ("", "Namespace", "", namespace) not in self._store:
            raise HttpError(404, "NotFound", f'namespaces "{namespace}" not found', name=namespace,
                            kind="namespaces")

    def _check_precondition(self, sent_meta: dict, stored: _Stored | None, kind: Kind, name: str) -> None:
        wanted = sent_meta.get("resourceVersion")
        if wanted and (stored is None or stored.obj["metadata"].get("resourceVersion") != wanted):
            raise HttpError(409, "Conflict", f'Operation cannot be fulfilled on {kind.plural} "{name}": the '
                            "object has been modified; please apply your changes to the latest version and try "
                            "again", name=name, kind=kind.plural)

    def _check_apply_preconditions(self, sent_meta: dict, stored: _Stored | None, kind: Kind, name: str) -> None:
        """As kube-apiserver v1.34 answers a server-side apply that names a uid or resourceVersion:
        an absent object is created whatever resourceVersion says, but not when a uid is named
        (409); an existing one with another uid is invalid (422), with another resourceVersion a
        conflict (409)."""
        uid = sent_meta.get("uid")
        if stored is None:
            if uid:
                raise HttpError(409, "Conflict", f'Operation cannot be fulfilled on {kind.plural} "{name}": uid '
                                f"mismatch: the provided object specified uid {uid}, and no existing object was "
                                "found", name=name, kind=kind.plural)
            return
        if uid and stored.obj["metadata"].get("uid") != uid:
            raise HttpError(422, "Invalid", f'{kind.kind} "{name}" is invalid: metadata.uid: Invalid value: '
                            f'"{uid}": field is immutable', name=name, kind=kind.plural)
        self._check_precondition(sent_meta, stored, kind, name)

    def _stamp(self, obj: dict, before: dict | None) -> None:
        """Server bookkeeping: uid and creation on create, a new resourceVersion on every change."""
        meta = obj.setdefault("metadata", {})
        if before is None or not (before.get("metadata") or {}).get("uid"):
            self._uids += 1
            meta.setdefault("uid", f"uid-{self._uids:04d}")
            meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        else:
            meta["uid"] = before["metadata"]["uid"]
            meta["creationTimestamp"] = before["metadata"].get("creationTimestamp")
        self._version += 1
        meta["resourceVersion"] = str(self._version)

    def _write(self, kind: Kind, namespace, name, new: dict, before: _Stored | None, req: Request) -> dict:
        """Store ``new`` (unless dry run); the resourceVersion moves only when something changed."""
        unchanged = before is not None and _without_version(new) == _without_version(before.obj)
        if unchanged:
            new["metadata"]["resourceVersion"] = before.obj["metadata"]["resourceVersion"]
        else:
            self._stamp(new, before.obj if before else None)
        if kind.kind == "CustomResourceDefinition" and self.establish_crds:
            # The API server's own controller does this within moments of the write.
            new["status"] = {"conditions": [{"type": "NamesAccepted", "status": "True"},
                                            {"type": "Established", "status": "True"}]}
        if not req.dry_run:
            self._store[self._key(kind, namespace, name)] = _Stored(new)
        return copy.deepcopy(new)

    def _apply(self, kind: Kind, namespace, name, req: Request):
        body = req.body
        if not isinstance(body, dict) or body.get("kind") != kind.kind:
            raise HttpError(400, "BadRequest", "the apply body must be an object of the URL's kind")
        meta = body.get("metadata") or {}
        if meta.get("name") != name:
            raise HttpError(400, "BadRequest", "the name of the object does not match the name on the URL")
        manager = req.query.get("fieldManager")
        if not manager:
            raise HttpError(400, "BadRequest", "fieldManager is required for apply requests")
        self._check_namespace(kind, namespace)
        before = self._store.get(self._key(kind, namespace, name))
        self._check_apply_preconditions(meta, before, kind, name)
        sent = copy.deepcopy(body)
        sent["metadata"].pop("resourceVersion", None)
        sent["metadata"].pop("uid", None)
        paths = _leaf_paths(sent)
        if before is None:
            new = sent
        else:
            new = copy.deepcopy(before.obj)
            # What this manager applied before and leaves out now is removed (no other owner here).
            for path in _applied_paths(before.obj, manager) - paths:
                _remove_path(new, path)
            _merge(new, sent)
        new["apiVersion"], new["kind"] = kind.api_version, kind.kind
        if namespace:
            new["metadata"]["namespace"] = namespace
        _record_apply(new, manager, kind.api_version, paths)
        written = self._write(kind, namespace, name, new, before, req)
        return (201 if before is None else 200), written

    def _merge_patch(self, kind: Kind, namespace, name, req: Request):
        before = self._stored(kind, namespace, name)
        patch = req.body if isinstance(req.body, dict) else {}
        self._check_precondition(patch.get("metadata") or {}, before, kind, name)
        new = copy.deepcopy(before.obj)
        patch = copy.deepcopy(patch)
        (patch.get("metadata") or {}).pop("resourceVersion", None)
        _merge(new, patch)
        return 200, self._write(kind, namespace, name, new, before, req)

    def _json_patch(self, kind: Kind, namespace, name, req: Request):
        """RFC 6902 add, replace, remove; a replace of metadata.resourceVersion is a precondition
        (a stale one fails with 409 as storage does, as client-go relies on)."""
        before = self._stored(kind, namespace, name)
        new = copy.deepcopy(before.obj)
        for op in req.body or []:
            keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].split("/")[1:]]
            if keys == ["metadata", "resourceVersion"]:
                self._check_precondition({"resourceVersion": op.get("value")}, before, kind, name)
                continue
            node = new
            for key in keys[:-1]:
                node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
            if op["op"] in ("add", "replace"):
                node[keys[-1]] = copy.deepcopy(op["value"])
            elif op["op"] == "remove":
                node.pop(keys[-1], None)
            else:
                raise HttpError(422, "Invalid", f"the fake does not answer the JSON patch op {op['op']}")
        return 200, self._write(kind, namespace, name, new, before, req)

    def _create(self, kind: Kind, namespace, req: Request):
        body = copy.deepcopy(req.body)
        name = (body.get("metadata") or {}).get("name")
        self._check_namespace(kind, namespace)
        if self._key(kind, namespace, name) in self._store:
            raise HttpError(409, "AlreadyExists", f'{kind.plural} "{name}" already exists', name=name,
                            kind=kind.plural)
        if namespace:
            body["metadata"]["namespace"] = namespace
        return 201, self._write(kind, namespace, name, body, None, req)

    def _delete(self, kind: Kind, namespace, name, req: Request):
        stored = self._stored(kind, namespace, name)
        uid = ((req.body or {}).get("preconditions") or {}).get("uid")
        if uid and stored.obj["metadata"].get("uid") != uid:
            raise HttpError(409, "Conflict", f"Precondition failed: UID in precondition: {uid}, UID in object "
                            f"meta: {stored.obj['metadata'].get('uid')}", name=name, kind=kind.plural)
        if not req.dry_run:
            del self._store[self._key(kind, namespace, name)]
        return 200, status_body(200, "", "deleted") | {"status": "Success"}


# ----- pieces ------------------------------------------------------------------------------


def _response(status: int, payload, warnings=()) -> SimpleNamespace:
    data = json.dumps(payload).encode() if payload is not None else b""
    headers = urllib3.HTTPHeaderDict()
    for text in warnings:
        headers.add("Warning", f'299 - "{text}"')
    return SimpleNamespace(status=status, data=data, headers=headers, read=lambda **_: data, close=lambda: None)


def _without_version(obj: dict) -> dict:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


def _merge(target: dict, patch: dict) -> None:
    """RFC 7386: maps merge, None removes, anything else replaces."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value) if not isinstance(value, dict) else _pruned(value)


def _pruned(value: dict) -> dict:
    return {k: (_pruned(v) if isinstance(v, dict) else v) for k, v in value.items() if v is not None}


def _leaf_paths(obj: dict, prefix: tuple = ()) -> set:
    paths = set()
    for key, value in obj.items():
        if isinstance(value, dict) and value:
            paths |= _leaf_paths(value, prefix + (key,))
        else:
            paths.add(prefix + (key,))
    return paths


def _record_apply(obj: dict, manager: str, api_version: str, paths: set) -> None:
    """The manager's Apply entry in managedFields, as the server keeps it (fieldsV1 of the paths set)."""
    fields: dict = {}
    for path in paths:
        if path[:1] in (("apiVersion",), ("kind",)) or path[:2] == ("metadata", "name"):
            continue
        node = fields
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    entry = {"manager": manager, "operation": "Apply", "apiVersion": api_version, "fieldsType": "FieldsV1",
             "fieldsV1": fields}
    meta = obj["metadata"]
    others = [e for e in meta.get("managedFields") or []
              if not (e.get("manager") == manager and e.get("operation") == "Apply")]
    meta["managedFields"] = others + [entry]


def _applied_paths(obj: dict, manager: str) -> set:
    """The leaf paths the manager's Apply entry owns (what its next apply removes if left out)."""
    entry = next((e for e in (obj.get("metadata") or {}).get("managedFields") or []
                  if e.get("manager") == manager and e.get("operation") == "Apply"), None)

    def walk(node, prefix):
        paths = set()
        for key, child in (node or {}).items():
            if not key.startswith("f:"):
                continue
            path = prefix + (key[2:],)
            paths |= walk(child, path) if child else {path}
        return paths

    return walk((entry or {}).get("fieldsV1"), ())


def _remove_path(obj: dict, path: tuple) -> None:
    node = obj
    for key in path[:-1]:
        node = node.get(key)
        if not isinstance(node, dict):
            return
    node.pop(path[-1], None)


_SET_TERM = re.compile(r"\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)\s*")
_EQUALITY_TERM = re.compile(r"\s*([^\s!=(),]+)\s*(==|!=|=)\s*([^\s!=(),]*)\s*")
_EXISTS_TERM = re.compile(r"\s*(!?)\s*([^\s!=(),]+)\s*")


def parse_selector(text: str):
    """A label selector as the engine sends it: ``k=v``, ``k!=v``, ``k in (a,b)``, ``k notin (..)``, ``k``, ``!k``."""
    tests = []
    for term in re.split(r",(?![^(]*\))", text or ""):
        if not term.strip():
            continue
        if match := _SET_TERM.fullmatch(term):
            key, op, values = match.groups()
            allowed = {v.strip() for v in values.split(",") if v.strip()}
            tests.append(lambda labels, k=key, a=allowed, neg=op == "notin": (labels.get(k) in a) != neg)
        elif match := _EQUALITY_TERM.fullmatch(term):
            key, op, value = match.groups()
            tests.append(lambda labels, k=key, v=value, neg=op == "!=": (labels.get(k) == v) != neg)
        elif match := _EXISTS_TERM.fullmatch(term):
            bang, key = match.groups()
            tests.append(lambda labels, k=key, neg=bool(bang): (k in labels) != neg)
        else:
            raise HttpError(400, "BadRequest", f"unable to parse requirement: {term!r}")
    return lambda labels: all(test(labels) for test in tests)


# ----- building clients, engines and reading outcomes -----------------------------------------


def client(api: FakeApi, parallelism: int = 1, **kwargs) -> kube.KubeClient:
    """A KubeClient whose pool is ``api`` (constructed as tests/unit/kube/test_kube.py does)."""
    cfg = SimpleNamespace(host=HOST + "/", verify_ssl=True, ssl_ca_cert=None, cert_file=None, key_file=None,
                          proxy=None, no_proxy=None, proxy_headers=None, tls_server_name=None,
                          refresh_api_key_hook=None, get_api_key_with_prefix=lambda *a, **k: "Bearer t0k3n")
    c = kube.KubeClient(cfg, parallelism=parallelism, retry_seconds=0, **kwargs)
    c._pool = c._watch_pool = api
    return c


def make_engine(api: FakeApi, parent="configmaps/shop", namespace="shop", parallelism=1, teardown=False,
                **options) -> engines.Engine:
    """An engine over ``api``; with ``teardown``, given only what every entry point reads
    (``RunOptions``): a teardown step that reads an apply's options then fails the test."""
    kind = RunOptions if teardown else Options
    return engines.Engine(client(api, parallelism), parent, namespace, kind.from_settings(**options))


def outcome(engine: engines.Engine, action: str, *args) -> tuple[report.Report, ApplySetError | None]:
    """Run ``engine.<action>(*args)`` and return ``(report, error)``.

    The engine has one error channel: a run that succeeds returns its report, a run that fails
    raises an ``ApplySetError`` carrying the partial report as ``err.report`` (None for errors
    raised before the run started, such as invalid options).
    """
    try:
        return getattr(engine, action)(*args), None
    except ApplySetError as err:
        return (err.report if err.report is not None else engine.report), err


def actions(report: report.Report) -> dict:
    """``{"Kind namespace/name": action}`` of a report."""
    return {o.ref: o.action for o in report.objects}


def parent_id(name="shop", namespace="shop", kind="ConfigMap", group="") -> str:
    return spec.compute_id(name, namespace, kind, group)


# ----- the usual scenario: a set with the ConfigMap parent shop in namespace shop ------------

PARENT_PATH = "/api/v1/namespaces/shop/configmaps/shop"
ID = parent_id()


def cm(name, namespace=None, **extra):
    meta = {"name": name, **({"namespace": namespace} if namespace else {}), **extra.pop("meta", {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": extra or {"k": name}}


def deploy(name, replicas=1):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas}}


def slow_shop(delay: float = 0.02) -> FakeApi:
    """The fake API with namespace shop, answering each request after ``delay`` seconds, as a
    server a round trip away does: requests sent together overlap in time, as on a real link."""
    api = FakeApi()
    api.add_namespace("shop")
    answer = api.request

    def slow(*args, **kwargs):
        time.sleep(delay)
        return answer(*args, **kwargs)

    api.request = slow
    return api


def load(*objects):
    return load_definition(list(objects))


def run(api, action="apply", *args, **options):
    """``action`` of an engine over ``api``: ``outcome``. An uninstall or disband gets ``RunOptions``."""
    return outcome(make_engine(api, teardown=action in ("uninstall", "disband"), **options), action, *args)


def deployed(api, *objects, **options):
    """A set deployed by a first, successful run; the requests of that run are forgotten."""
    report, error = run(api, "apply", load(*objects), **options)
    assert error is None, error
    api.requests.clear()
    return report


def parent_annotations(api):
    return api.object("v1", "ConfigMap", "shop", "shop")["metadata"]["annotations"]


def is_parent_write(request):
    """A write to the parent: its creation (a POST to the collection) or a patch or delete of it."""
    if request.method == "POST":
        return request.path == PARENT_PATH.rpartition("/")[0] and request.body["metadata"]["name"] == "shop"
    return request.is_write and request.path == PARENT_PATH


def parent_writes(api):
    return [r for r in api.writes() if is_parent_write(r)]


def member_writes(api):
    return [r for r in api.writes() if not is_parent_write(r)]


def first_index(api, predicate):
    return next(i for i, r in enumerate(api.requests) if predicate(r))
