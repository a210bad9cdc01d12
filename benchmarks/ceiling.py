#!/usr/bin/env python3
"""The ceiling: the least a client can do to reach the desired state, as fast as this machine allows.

It reads the same manifest files, adds the same ``applyset.kubernetes.io/part-of`` label our module
adds, and sends one server-side apply PATCH per object (the same URL, query and body our module
sends) from a pool of threads over one urllib3 connection pool. For the prune scenario it is told
which objects to delete (``--delete FILE``) and sends one DELETE each: no discovery, no parent, no
LIST, no retries, no result processing. Nothing but threads, urllib3 and a YAML parser.

Usage: ceiling.py KUBECONFIG MANIFEST_DIR --id APPLYSET_ID [--parallelism P] [--dry-run] [--delete FILE]
Prints one JSON line: {"applied": n, "deleted": n, "errors": n, "requests": {...}}.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import urllib3
import yaml

PLURALS = {  # the workload's kinds; a real client would use discovery, which the ceiling skips
    "ConfigMap": "configmaps", "Secret": "secrets", "ServiceAccount": "serviceaccounts", "Service": "services",
    "Role": "roles", "RoleBinding": "rolebindings", "Deployment": "deployments",
    "NetworkPolicy": "networkpolicies", "PodDisruptionBudget": "poddisruptionbudgets", "Ingress": "ingresses",
    "Widget": "widgets",
}
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def pool_from_kubeconfig(path: str, maxsize: int):
    cfg = yaml.load(Path(path).read_text(), Loader=LOADER)
    ctx_name = cfg.get("current-context")
    ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name) if ctx_name else cfg["contexts"][0]["context"]
    cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
    tmp = tempfile.mkdtemp(prefix="ceiling-")

    def material(data_key, file_key, fname):
        if user.get(data_key) or cluster.get(data_key):
            target = os.path.join(tmp, fname)
            Path(target).write_bytes(base64.b64decode(user.get(data_key) or cluster.get(data_key)))
            return target
        return user.get(file_key) or cluster.get(file_key)

    headers = {"User-Agent": "applyset-bench-ceiling"}
    if user.get("token"):
        headers["Authorization"] = f"Bearer {user['token']}"
    pool = urllib3.PoolManager(
        maxsize=maxsize, block=True, retries=False,
        ca_certs=material("certificate-authority-data", "certificate-authority", "ca.crt"),
        cert_file=material("client-certificate-data", "client-certificate", "client.crt"),
        key_file=material("client-key-data", "client-key", "client.key"),
    )
    return pool, cluster["server"].rstrip("/"), headers


def path_for(api_version: str, plural: str, namespace: str | None, name: str) -> str:
    base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    if namespace:
        base += f"/namespaces/{quote(namespace, safe='')}"
    return f"{base}/{plural}/{quote(name, safe='')}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("kubeconfig")
    ap.add_argument("manifests")
    ap.add_argument("--id", required=True, help="the ApplySet ID to label members with")
    ap.add_argument("--parallelism", type=int, default=16)
    ap.add_argument("--field-manager", default="applyset.kubernetes")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--delete", help="JSON file: [{apiVersion, plural, namespace, name}] to delete")
    args = ap.parse_args(argv)

    pool, host, headers = pool_from_kubeconfig(args.kubeconfig, args.parallelism)
    docs = []
    for f in sorted(Path(args.manifests).glob("*.yaml")):
        docs += [d for d in yaml.load_all(f.read_text(), Loader=LOADER) if d]
    query = f"?fieldManager={quote(args.field_manager)}&fieldValidation=Strict" + ("&dryRun=All" if args.dry_run else "")
    apply_headers = {**headers, "Content-Type": "application/apply-patch+yaml", "Accept": "application/json"}
    lock = threading.Lock()
    codes: dict[str, int] = {}

    def count(verb, status):
        with lock:
            key = f"{verb} {status}"
            codes[key] = codes.get(key, 0) + 1

    def apply(doc):
        meta = doc["metadata"]
        meta.setdefault("labels", {})["applyset.kubernetes.io/part-of"] = args.id
        url = host + path_for(doc["apiVersion"], PLURALS[doc["kind"]], meta.get("namespace"), meta["name"]) + query
        resp = pool.request("PATCH", url, body=json.dumps(doc, separators=(",", ":")), headers=apply_headers)
        count("PATCH", resp.status)
        return resp.status

    deletes = json.loads(Path(args.delete).read_text()) if args.delete else []
    delete_body = json.dumps({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
                              **({"dryRun": ["All"]} if args.dry_run else {})})
    delete_headers = {**headers, "Content-Type": "application/json", "Accept": "application/json"}

    def delete(ref):
        url = host + path_for(ref["apiVersion"], ref["plural"], ref.get("namespace"), ref["name"])
        resp = pool.request("DELETE", url, body=delete_body, headers=delete_headers)
        count("DELETE", resp.status)
        return resp.status

    with ThreadPoolExecutor(max_workers=args.parallelism) as ex:
        applied = list(ex.map(apply, docs))
        deleted = list(ex.map(delete, deletes))
    errors = sum(1 for s in applied + deleted if s >= 400)
    print(json.dumps({"applied": len(applied), "deleted": len(deleted), "errors": errors, "requests": codes}))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
