"""Access to the cluster for setup, checks and metrics: the harness's admin client, the API server's
request counts and CPU, and starting (or borrowing) the control plane."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import workload
from harness.paths import ROOT, log
from applyset import errors
from applyset.kube import client as kube
from applyset.kube import http_requests as httprequests

# Series that only the control plane's own components touch in this workload.
BACKGROUND_RESOURCES = frozenset({"leases", "nodes", "events", "pods", "replicasets", "endpointslices", "endpoints",
                                  "controllerrevisions", "serviceaccounts/token"})


class Admin:
    def __init__(self, kubeconfig: str, state_dir: Path | None):
        self.kubeconfig = kubeconfig
        self.client = kube.connect({"kubeconfig": kubeconfig}, parallelism=8)
        self.server_pids = _server_pids(state_dir) if state_dir else {}

    def req(self, method, path, **kw):
        return self.client.request(method, path, **kw)

    def apply(self, obj: dict) -> None:
        api = obj["apiVersion"]
        plural = {"CustomResourceDefinition": "customresourcedefinitions", "Namespace": "namespaces",
                  "ApplySet": "applysets"}[obj["kind"]]
        path = f"/apis/{api}/{plural}/{obj['metadata']['name']}" if "/" in api else f"/api/{api}/{plural}/{obj['metadata']['name']}"
        self.req("PATCH", path, query={"fieldManager": "bench-harness", "force": "true"}, body=obj,
                 content_type=httprequests.APPLY_PATCH)

    def wait_crd(self, name: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            crd = self.req("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}").body
            if any(c.get("type") == "Established" and c.get("status") == "True"
                   for c in (crd.get("status") or {}).get("conditions") or []):
                # the new resource must also be in discovery
                return
            time.sleep(0.2)
        raise RuntimeError(f"CRD {name} not Established")

    def create_namespaces(self, names) -> None:
        for ns in names:
            self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        # the service-account and root-CA controllers write into new namespaces: let them finish
        deadline = time.monotonic() + 30
        for ns in names:
            for path in (f"/api/v1/namespaces/{ns}/serviceaccounts/default",
                         f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"):
                while time.monotonic() < deadline:
                    try:
                        self.req("GET", path)
                        break
                    except errors.ApiError:
                        time.sleep(0.1)
        time.sleep(0.5)

    def delete_namespaces(self, names, timeout: float = 600, wait: bool = True) -> float:
        started = time.monotonic()
        for ns in names:
            try:
                self.req("DELETE", f"/api/v1/namespaces/{ns}")
            except errors.ApiError as err:
                if err.status != 404:
                    raise
        for ns in names if wait else ():
            while time.monotonic() - started < timeout:
                try:
                    self.req("GET", f"/api/v1/namespaces/{ns}")
                except errors.ApiError as err:
                    if err.status == 404:
                        break
                    raise
                time.sleep(0.25)
            else:
                raise RuntimeError(f"namespace {ns} still terminating after {timeout}s")
        return time.monotonic() - started

    def clear_namespaces(self, names) -> float:
        """Delete the workload (and what controllers made of it) but keep the namespaces: much quicker
        than deleting namespaces, and nothing keeps running in the background afterwards."""
        started = time.monotonic()
        kinds = [(workload.API_VERSION[k], workload.PLURAL[k], "app.kubernetes.io/part-of=bench") for k in workload.KINDS]
        kinds += [("apps/v1", "replicasets", None), ("v1", "secrets", None), ("kpt.dev/v1alpha1", "resourcegroups", None)]
        for ns in names:
            for api, plural, selector in kinds:
                base = f"/apis/{api}" if "/" in api else f"/api/{api}"
                query = {"propagationPolicy": "Background"}
                if selector:
                    query["labelSelector"] = selector
                try:
                    self.req("DELETE", f"{base}/namespaces/{ns}/{plural}", query=query)
                except errors.ApiError as err:
                    if err.status != 404:
                        raise
        for ns in names:  # wait until nothing of the workload is left (no finalizers, so it is quick)
            while self.count_objects([ns]) and time.monotonic() - started < 300:
                time.sleep(0.25)
        return time.monotonic() - started

    def delete_path(self, path: str) -> None:
        try:
            self.req("DELETE", path)
        except errors.ApiError as err:
            if err.status != 404:
                raise

    def count_objects(self, namespaces) -> int:
        total = 0
        for kind in workload.KINDS:
            api, plural = workload.API_VERSION[kind], workload.PLURAL[kind]
            base = f"/apis/{api}" if "/" in api else f"/api/{api}"
            for ns in namespaces:
                items = self.client.list(_Res(f"{base}/namespaces/{ns}/{plural}"), None,
                                         label_selector="app.kubernetes.io/part-of=bench")
                total += sum(1 for _ in items)
        return total

    def metrics(self) -> dict:
        try:
            text = self.req("GET", "/metrics", accept="text/plain").body
        except errors.ApiError as err:  # e.g. a cluster where we may not read /metrics: no request counts
            if not getattr(self, "_metrics_warned", False):
                log(f"cannot read /metrics ({err.message}); request counts will be empty")
                self._metrics_warned = True
            return {}
        if isinstance(text, bytes):
            text = text.decode()
        out = {}
        for line in text.splitlines():
            if not line.startswith("apiserver_request_total{"):
                continue
            labels_text, _, value = line[len("apiserver_request_total{"):].rpartition("} ")
            labels = dict(re.findall(r'(\w+)="([^"]*)"', labels_text))
            key = (labels.get("verb", ""), labels.get("group", ""), labels.get("resource", ""),
                   labels.get("subresource", ""), labels.get("dry_run", ""), labels.get("code", ""))
            out[key] = out.get(key, 0.0) + float(value)
        return out

    def server_cpu(self) -> float:
        return sum(_proc_cpu(pid) for pid in self.server_pids.values())


@dataclass(frozen=True)
class _Res:
    """Just enough of discovery.Resource for KubeClient.list with a ready path."""

    base: str

    def path(self, namespace=None, name=None):
        return self.base


def _server_pids(state_dir: Path) -> dict:
    try:
        out = subprocess.run([str(ROOT / "hack" / "local-cluster"), "--state-dir", str(state_dir), "status"],
                             capture_output=True, text=True, timeout=30)
        comps = json.loads(out.stdout)["components"]
        return {name: comps[name]["pid"] for name in ("kube-apiserver", "etcd") if name in comps}
    except Exception:  # noqa: BLE001 - CPU of the server is a bonus, not a requirement
        return {}


def _proc_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def request_delta(before: dict, after: dict) -> dict:
    """Requests by verb (and verb+resource) between two /metrics snapshots, tool series only."""
    by_verb: dict[str, int] = {}
    by_resource: dict[str, int] = {}
    errors = 0
    errors_by_code: dict[str, int] = {}
    for key, value in after.items():
        delta = int(round(value - before.get(key, 0.0)))
        if delta <= 0:
            continue
        verb, group, resource, subresource, dry_run, code = key
        if (resource in BACKGROUND_RESOURCES or f"{resource}/{subresource}" in BACKGROUND_RESOURCES
                or subresource == "status" or verb == "WATCH" and not resource):
            continue
        if not resource:
            if subresource not in ("api", "apis"):
                continue  # /healthz, /readyz (/metrics and /openapi are not counted by the server)
            resource = "discovery"
        name = f"{verb}{' (dry run)' if dry_run else ''}"
        by_verb[name] = by_verb.get(name, 0) + delta
        res_key = f"{name} {resource}{'.' + group if group else ''}"
        by_resource[res_key] = by_resource.get(res_key, 0) + delta
        if code.startswith(("4", "5")) and code != "404":
            errors += delta
            errors_by_code[f"{code} {res_key}"] = errors_by_code.get(f"{code} {res_key}", 0) + delta
    # Watches are long-running and the controllers' informers restart theirs all the time, so they
    # are shown but left out of the total.
    by_verb["total"] = sum(v for k, v in by_verb.items() if k != "WATCH")
    return {"by_verb": dict(sorted(by_verb.items())), "by_resource": dict(sorted(by_resource.items())),
            "errors": errors, "errors_by_code": errors_by_code}


def start_cluster(args) -> tuple[str, Path | None, list | None]:
    """(kubeconfig, state dir, local-cluster command to stop it) for --kubeconfig or our own cluster."""
    if args.kubeconfig:
        return args.kubeconfig, None, None
    state_dir = Path(args.state_dir)
    lc = [str(ROOT / "hack" / "local-cluster"), "--state-dir", str(state_dir)]
    for _ in range(3):
        if subprocess.run(lc + ["up"]).returncode == 0:
            break
        subprocess.run(lc + ["down"])
    else:
        raise SystemExit("could not start the local control plane")
    kubeconfig = subprocess.run(lc + ["kubeconfig"], capture_output=True, text=True, check=True).stdout.strip()
    return kubeconfig, state_dir, lc


def install_crds(admin: Admin) -> None:
    for crd in (workload.WIDGET_CRD, workload.APPLYSET_CRD):
        admin.apply(crd)
        admin.wait_crd(crd["metadata"]["name"])
