"""A small, independent HTTP client for test assertions.

Tests check the product's behaviour against the real API server through this
client, not through the product's own HTTP layer, so a bug there cannot hide
itself. It reads the kubeconfig with the official ``kubernetes`` package and
speaks plain HTTP through urllib3.
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.parse

import kubernetes
import urllib3
import yaml


class KubeAPI:
    def __init__(self, kubeconfig: str):
        cfg = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        self.host = cfg.host.rstrip("/")
        self._headers = {}
        token = cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
        if token:
            self._headers["Authorization"] = token
        self._pool = urllib3.PoolManager(
            num_pools=4,
            maxsize=8,
            cert_reqs="CERT_REQUIRED" if cfg.verify_ssl else "CERT_NONE",
            ca_certs=cfg.ssl_ca_cert,
            cert_file=cfg.cert_file,
            key_file=cfg.key_file,
        )

    def request(self, method, path, body=None, query=None, content_type="application/json",
                accept="application/json", timeout=30):
        """Return (status, decoded JSON body or text, warning headers)."""
        url = self.host + path
        if query:
            url += "?" + urllib.parse.urlencode(query, doseq=True)
        headers = dict(self._headers, Accept=accept)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            if isinstance(body, (bytes, str)):
                data = body
            elif content_type == "application/apply-patch+yaml":
                data = yaml.safe_dump(body)
            else:
                data = json.dumps(body)
        resp = self._pool.request(method, url, body=data, headers=headers, timeout=timeout)
        try:
            payload = json.loads(resp.data) if resp.data else None
        except ValueError:
            payload = resp.data.decode(errors="replace")
        return resp.status, payload, resp.headers.getlist("Warning")

    # Convenience wrappers that raise on unexpected status codes.
    def get(self, path, **query):
        status, body, _ = self.request("GET", path, query=query or None)
        if status == 404:
            return None
        assert status == 200, f"GET {path}: {status} {body}"
        return body

    def create(self, path, obj):
        status, body, _ = self.request("POST", path, obj)
        assert status in (200, 201), f"POST {path}: {status} {body}"
        return body

    def delete(self, path, **query):
        status, body, _ = self.request("DELETE", path, query=query or None)
        assert status in (200, 202, 404), f"DELETE {path}: {status} {body}"
        return body

    def apply(self, path, obj, field_manager, force=False, dry_run=False):
        query = {"fieldManager": field_manager}
        if force:
            query["force"] = "true"
        if dry_run:
            query["dryRun"] = "All"
        return self.request("PATCH", path, obj, query=query, content_type="application/apply-patch+yaml")

    def establish_crds(self, docs: list, field_manager: str, timeout: float = 60) -> list:
        """Apply the CustomResourceDefinitions ``docs`` (idempotently: another test may have) and wait
        until each is Established; returns ``docs``."""
        paths = [f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{doc['metadata']['name']}" for doc in docs]
        for path, doc in zip(paths, docs):
            status, body, _ = self.apply(path, doc, field_manager=field_manager, force=True)
            assert status in (200, 201), body
        for path in paths:
            wait_for(lambda: any(c["type"] == "Established" and c["status"] == "True"
                                 for c in (self.get(path).get("status") or {}).get("conditions") or []),
                     timeout=timeout, interval=0.2, what=f"{path} Established")
        return docs


def wait_for(predicate, timeout: float = 60, interval: float = 0.25, what: str = "condition"):
    """Poll until predicate() returns a truthy value; fail after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last value: {last!r}")


# What kube-controller-manager writes on a Deployment by itself, at any time after a write: its
# status, and the revision annotation with the fields it manages.
CONTROLLER = "kube-controller-manager"
CONTROLLER_ANNOTATIONS = ("deployment.kubernetes.io/revision",)


def written_by_clients(item: dict) -> str:
    """The resourceVersion of an object no controller writes; for one with a status (a Deployment),
    what clients wrote: the object without its status and without what kube-controller-manager
    manages, so a controller catching up after the snapshot is not a write by the run."""
    if "status" not in item:
        return item["metadata"]["resourceVersion"]
    meta = dict(item["metadata"])
    meta.pop("resourceVersion")
    meta["annotations"] = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in CONTROLLER_ANNOTATIONS}
    meta["managedFields"] = [f for f in meta.get("managedFields") or [] if f.get("manager") != CONTROLLER]
    written = json.dumps({"metadata": meta, "spec": item.get("spec")}, sort_keys=True)
    return f"generation {meta.get('generation')}, sha256 {hashlib.sha256(written.encode()).hexdigest()[:16]}"
