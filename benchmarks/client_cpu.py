"""Client CPU per server-side apply PATCH, by HTTP stack, against the real control plane (issue 48).

    .venv/bin/python benchmarks/client_cpu.py [--n 1000] [--rounds 3] [--threads 1] [--kubeconfig PATH]

Each variant sends the same ``n`` server-side apply PATCHes of ConfigMaps (about 4 KB each, the
answer about as large) in a namespace of its own, one round per variant after the other and
``--rounds`` rounds (the medians are printed): the client's CPU (``time.process_time``, every
thread of this process; the server is another process) divided by the requests. The variants:

* ``KubeClient``: ``KubeClient.apply`` as the module sends it (request built from the object,
  headers with the credential, flow limit, counters, urllib3, the answer decoded as JSON);
* ``urllib3 + json``: one urllib3 pool, headers built once, the body encoded and the answer
  decoded per request; ``urllib3, no decode``: the same, the answer kept as bytes;
* ``urllib3 pool.urlopen + json``: the server's pool taken once, ``urlopen`` on it;
* ``http.client + json``: ``http.client.HTTPSConnection`` used directly, one persistent
  connection per thread, headers built once, bytes bodies; ``http.client, no decode``;
* ``raw TLS socket, own HTTP/1.1 parsing``: the floor of Python's own stack, not a client;
* ``json.dumps + json.loads only``: the encoding and decoding alone, no request (what JSON costs);
* ``aiohttp``, when installed: one session, ``--threads`` requests in flight.

With ``--threads`` above 1 each variant sends from that many threads (the module sends up to 64).
The TLS context is the client's own (``kube.connection.tls_context``: client certificate, sessions
resumed). Not a test: it prints figures. ``make helm``'s control plane: ``hack/local-cluster up``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins" / "module_utils"))

from applyset.kube import client as kube  # noqa: E402
from applyset.kube.connection import load_connection, tls_context  # noqa: E402
from applyset.kube.discovery import Resource  # noqa: E402

CONFIGMAPS = Resource(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
MANAGER = "applyset.kubernetes"


def configmap(i: int, namespace: str, round_: int) -> dict:
    """A ConfigMap of about 4 KB; ``round_`` changes its data, so every PATCH writes."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"cpu-{i:05d}", "namespace": namespace,
                         "labels": {"app.kubernetes.io/part-of": "bench", "applyset.kubernetes.io/part-of": "x"}},
            "data": {f"key{k}": f"value-{i}-{k}-{round_}-" + "x" * 100 for k in range(32)}}


class Target:
    """Where the PATCHes go and with what: the server, the TLS context, the credential's headers."""

    def __init__(self, kubeconfig: str):
        self.cfg, self.source = load_connection({"kubeconfig": kubeconfig})
        self.url = urllib.parse.urlsplit(self.cfg.host)
        self.context = tls_context(self.source, verify=self.cfg.verify_ssl, ca_file=self.cfg.ssl_ca_cert,
                                   cert_file=self.cfg.cert_file, key_file=self.cfg.key_file)
        self.headers = {"User-Agent": kube.USER_AGENT, "Accept": "application/json",
                        "Content-Type": "application/apply-patch+yaml"}
        token = self.cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
        if token:
            self.headers["Authorization"] = token

    def path(self, obj: dict) -> str:
        meta = obj["metadata"]
        query = urllib.parse.urlencode({"fieldManager": MANAGER, "fieldValidation": "Strict"})
        return f"{CONFIGMAPS.path(meta['namespace'], meta['name'])}?{query}"


def via_kubeclient(target: Target, threads: int):
    client = kube.KubeClient(target.cfg, parallelism=max(threads, 1), source=target.source)

    def send(obj: dict):
        return client.apply(CONFIGMAPS, obj, field_manager=MANAGER).body
    return send


def via_urllib3(target: Target, threads: int, decode: bool = True):
    import urllib3

    pool = urllib3.PoolManager(maxsize=threads + 2, block=True, retries=False, ssl_context=target.context)
    base = target.cfg.host.rstrip("/")

    def send(obj: dict):
        resp = pool.request("PATCH", base + target.path(obj), body=json.dumps(obj, separators=(",", ":")).encode(),
                            headers=target.headers, preload_content=True)
        return json.loads(resp.data) if decode else resp.data
    return send


def via_urllib3_pool(target: Target, threads: int):
    """urllib3's connection pool of the server taken once (``connection_from_url``), ``urlopen``
    on it: no URL parsing, no PoolManager, no header dict copied per request."""
    import urllib3

    manager = urllib3.PoolManager(maxsize=threads + 2, block=True, retries=False, ssl_context=target.context)
    pool = manager.connection_from_url(target.cfg.host)

    def send(obj: dict):
        resp = pool.urlopen("PATCH", target.path(obj), body=json.dumps(obj, separators=(",", ":")).encode(),
                            headers=target.headers, retries=False, preload_content=True, assert_same_host=False)
        return json.loads(resp.data)
    return send


def via_http_client(target: Target, threads: int, decode: bool = True):
    local = threading.local()
    host, port = target.url.hostname, target.url.port or 443

    def connection() -> http.client.HTTPSConnection:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPSConnection(host, port, context=target.context, timeout=60)
        return conn

    def send(obj: dict):
        conn = connection()
        conn.request("PATCH", target.path(obj), body=json.dumps(obj, separators=(",", ":")).encode(),
                     headers=target.headers)
        data = conn.getresponse().read()
        return json.loads(data) if decode else data
    return send


def via_raw_socket(target: Target, threads: int):
    """The floor of Python's own stack: one TLS socket per thread, the request's bytes (headers built
    once) sent in one ``sendall``, the answer's head parsed with ``bytes.split``, its body read by
    ``Content-Length`` or chunks; no decode. Not a client (no errors, no redirects): a measure."""
    import socket

    local = threading.local()
    host, port = target.url.hostname, target.url.port or 443
    head = "".join(f"{k}: {v}\r\n" for k, v in {**target.headers, "Host": f"{host}:{port}"}.items())

    def connection():
        sock = getattr(local, "sock", None)
        if sock is None:
            raw = socket.create_connection((host, port))
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock = local.sock = target.context.wrap_socket(raw, server_hostname=host)
            local.buffer = b""
        return sock

    def read_until(sock, marker: bytes) -> bytes:
        while marker not in local.buffer:
            local.buffer += sock.recv(65536)
        found, _, local.buffer = local.buffer.partition(marker)
        return found

    def read_exactly(sock, size: int) -> bytes:
        while len(local.buffer) < size:
            local.buffer += sock.recv(65536)
        found, local.buffer = local.buffer[:size], local.buffer[size:]
        return found

    def send(obj: dict):
        sock = connection()
        body = json.dumps(obj, separators=(",", ":")).encode()
        sock.sendall(f"PATCH {target.path(obj)} HTTP/1.1\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode()
                     + body)
        lines = read_until(sock, b"\r\n\r\n").split(b"\r\n")
        fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in lines[1:])}
        if b"content-length" in fields:
            return read_exactly(sock, int(fields[b"content-length"]))
        chunks = []
        while True:
            size = int(read_until(sock, b"\r\n").split(b";")[0], 16)
            chunks.append(read_exactly(sock, size + 2)[:size])
            if not size:
                return b"".join(chunks)
    return send


def json_only(target: Target, threads: int):
    answer = None

    def send(obj: dict):
        nonlocal answer
        body = json.dumps(obj, separators=(",", ":")).encode()
        answer = answer or body  # an answer of the same size (the server's adds managedFields)
        return json.loads(answer)
    return send


VARIANTS = {"KubeClient": via_kubeclient, "urllib3 + json": via_urllib3,
            "urllib3, no decode": lambda t, n: via_urllib3(t, n, decode=False),
            "urllib3 pool.urlopen + json": via_urllib3_pool,
            "http.client + json": via_http_client,
            "http.client, no decode": lambda t, n: via_http_client(t, n, decode=False),
            "raw TLS socket, own HTTP/1.1 parsing, no decode": via_raw_socket,
            "json.dumps + json.loads only": json_only}


def run_variant(send, objects: list, threads: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of sending every object once."""
    send(objects[0])  # the connection made and the TLS handshake done before the clock starts
    cpu, wall = time.process_time(), time.monotonic()
    if threads == 1:
        for obj in objects[1:]:
            send(obj)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(send, objects[1:]))
    return time.process_time() - cpu, time.monotonic() - wall


def aiohttp_variant(target: Target, objects: list, threads: int) -> tuple[float, float] | None:
    try:
        import aiohttp
        import asyncio
    except ImportError:
        return None

    async def main() -> tuple[float, float]:
        base = target.cfg.host.rstrip("/")
        connector = aiohttp.TCPConnector(ssl=target.context, limit=threads)
        async with aiohttp.ClientSession(connector=connector, headers=target.headers) as session:
            gate = asyncio.Semaphore(threads)

            async def send(obj: dict):
                async with gate, session.patch(base + target.path(obj),
                                               data=json.dumps(obj, separators=(",", ":")).encode()) as resp:
                    return json.loads(await resp.read())

            await send(objects[0])
            cpu, wall = time.process_time(), time.monotonic()
            await asyncio.gather(*(send(obj) for obj in objects[1:]))
            return time.process_time() - cpu, time.monotonic() - wall
    return asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    args = parser.parse_args()
    kubeconfig = args.kubeconfig or subprocess.run([str(REPO / "hack" / "local-cluster"), "kubeconfig"],
                                                   capture_output=True, text=True, check=True).stdout.strip()
    target = Target(kubeconfig)
    namespace = f"bench-cpu-{os.getpid()}"
    subprocess.run(["kubectl", "create", "namespace", namespace], env={**os.environ, "KUBECONFIG": kubeconfig},
                   check=True, capture_output=True)
    figures: dict[str, list] = {}
    try:
        for round_ in range(args.rounds):
            for name, make in [*VARIANTS.items(), ("aiohttp + json", None)]:
                objects = [configmap(i, namespace, round_ * 100 + len(figures.get(name, ())))
                           for i in range(args.n + 1)]
                if make is None:
                    measured = aiohttp_variant(target, objects, args.threads)
                    if measured is None:
                        continue
                else:
                    measured = run_variant(make(target, args.threads), objects, args.threads)
                figures.setdefault(name, []).append(measured)
    finally:
        subprocess.run(["kubectl", "delete", "namespace", namespace, "--wait=false"],
                       env={**os.environ, "KUBECONFIG": kubeconfig}, capture_output=True)
    size = len(json.dumps(configmap(0, namespace, 0)))
    print(f"{args.n} server-side apply PATCHes of a {size / 1024:.1f} KB ConfigMap, {args.threads} thread(s), "
          f"medians of {args.rounds} rounds:\n")
    print("| client | CPU ms per request | wall ms per request | CPU vs KubeClient |")
    print("|---|---|---|---|")
    base = statistics.median(cpu for cpu, _ in figures["KubeClient"])
    for name, runs in figures.items():
        cpu, wall = statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs)
        print(f"| {name} | {cpu / args.n * 1000:.3f} | {wall / args.n * 1000:.3f} | {cpu / base:.2f}× |")


if __name__ == "__main__":
    main()
