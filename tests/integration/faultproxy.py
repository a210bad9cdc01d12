"""A test-only loopback proxy that injects faults into the k-th mutating request.

The client speaks plain HTTP to the proxy on 127.0.0.1; the proxy forwards every
request to the real API server over TLS with the admin credentials of a
kubeconfig. Faults, counted over POST/PUT/PATCH/DELETE only:

  reset    forward the request, then drop the connection without an answer
           (the server did the work; the client cannot know)
  timeout  forward the request, then answer nothing until the client gives up
  500      answer 500 without forwarding
  409      answer 409 Conflict without forwarding
  kill     forward the request, then SIGKILL the client process (``kill_pid``)

Watches (GET with ``watch=true``) are streamed through as they come, never faulted: waits follow them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import kubernetes
import urllib3

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
FAULTS = ("reset", "timeout", "500", "409", "kill")


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # clients that were killed or timed out on purpose hang up mid-answer


class FaultProxy:
    def __init__(self, kubeconfig: str, hang_seconds: float = 4.0):
        cfg = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        self.upstream = cfg.host.rstrip("/")
        self._pool = urllib3.PoolManager(maxsize=16, cert_reqs="CERT_REQUIRED", ca_certs=cfg.ssl_ca_cert,
                                         cert_file=cfg.cert_file, key_file=cfg.key_file, retries=False)
        self.hang_seconds = hang_seconds
        self._lock = threading.Lock()
        self.reset(None, None)
        self._server = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def reset(self, fault: str | None, fail_at: int | None, kill_pid: int | None = None,
              match: tuple[str, str] | None = None) -> None:
        """The next run's fault: ``fault`` into the ``fail_at``-th mutating request, counting only those
        whose (method, path) is ``match`` when given (a path ending in ``*`` matches its prefix), so a
        retry the load caused elsewhere does not move the fault off the request it is meant for."""
        with self._lock:
            self.fault, self.fail_at, self.kill_pid, self.match = fault, fail_at, kill_pid, match
            self.mutating_seen = 0
            self.injected = False
            self.mutating_log: list[tuple[str, str, str | None]] = []  # (method, path, fault injected)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _matches(self, method: str, path: str) -> bool:
        if self.match is None:
            return True
        want_method, want_path = self.match
        path = path.partition("?")[0]
        if want_path.endswith("*"):
            return method == want_method and path.startswith(want_path[:-1])
        return method == want_method and path == want_path

    def _decide(self, method: str, path: str) -> str | None:
        """Count mutating requests (those that match); the fault to inject into this one, if any."""
        if method not in MUTATING:
            return None
        with self._lock:
            fault = None
            if self._matches(method, path):
                self.mutating_seen += 1
                if self.fault and self.mutating_seen == self.fail_at:
                    self.injected = True
                    fault = self.fault
            self.mutating_log.append((method, path.partition("?")[0], fault))
            return fault

    def log_text(self) -> str:
        """The mutating requests of the last run, numbered, the faulted one marked: what a violation
        prints, so the request the fault met is never a guess."""
        return "\n".join(f"  {n:3d} {method} {path}" + (f"  <- {fault}" if fault else "")
                         for n, (method, path, fault) in enumerate(self.mutating_log, 1))

    def _forward(self, method, path, headers, body):
        keep = {k: v for k, v in headers.items() if k.lower() in ("content-type", "accept", "user-agent")}
        return self._pool.request(method, self.upstream + path, body=body, headers=keep, timeout=60,
                                  preload_content=True)

    def _handler_class(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                fault = proxy._decide(self.command, self.path)
                if fault in ("500", "409"):
                    code = int(fault)
                    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                              "reason": "Conflict" if code == 409 else "InternalError",
                              "message": f"injected fault {code}"}
                    return self._reply(code, json.dumps(status).encode(), "application/json", [])
                if self.command == "GET" and "watch=true" in self.path:
                    return self._stream()
                resp = proxy._forward(self.command, self.path, self.headers, body)
                if fault == "kill" and proxy.kill_pid:
                    os.kill(proxy.kill_pid, signal.SIGKILL)
                    return self._drop()
                if fault == "timeout":
                    time.sleep(proxy.hang_seconds)
                    return self._drop()
                if fault == "reset":
                    return self._drop()
                self._reply(resp.status, resp.data, resp.headers.get("Content-Type", "application/json"),
                            resp.headers.getlist("Warning"))

            def _reply(self, status, data, content_type, warnings):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for warning in warnings:
                    self.send_header("Warning", warning)
                self.end_headers()
                self.wfile.write(data)

            def _stream(self):
                """A watch: forwarded as it comes, event by event (chunked), until either side ends it."""
                keep = {k: v for k, v in self.headers.items() if k.lower() in ("accept", "user-agent")}
                resp = proxy._pool.request("GET", proxy.upstream + self.path, headers=keep, timeout=None,
                                           preload_content=False)
                try:
                    self.send_response(resp.status)
                    self.send_header("Content-Type", resp.headers.get("Content-Type", "application/json"))
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    while True:
                        chunk = resp.read1(65536)
                        if not chunk:
                            break
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:  # the client closed its watch: the wait is over
                    self.close_connection = True
                finally:
                    resp.close()

            def _drop(self):
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        return Handler
