"""A test-only mutating admission webhook on 127.0.0.1, registered for the test's namespaces only.

The local control plane's API server runs on this machine, so it reaches a webhook served here.
While ``mutating`` is set, the webhook rewrites ``data.v`` of every ConfigMap written in those
namespaces (labelled ``fastpath-webhook: on``) to ``mutated``: a value someone else changes on
every write, as policy engines do. ``failurePolicy: Ignore`` and the selectors keep every other
test on the shared cluster out of its reach; the configuration is deleted on ``close``.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SELECT_LABEL = ("fastpath-webhook", "on")
MUTATED = "mutated"


class MutatingWebhook:
    def __init__(self, kube, namespaces: list[str], workdir: Path):
        self.kube = kube
        self.mutating = False
        self.reviews = 0
        cert, key = workdir / "webhook.crt", workdir / "webhook.key"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.name = f"fastpath-test-{namespaces[0]}"
        port = self._server.server_address[1]
        self.kube.create("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": self.name},
            "webhooks": [{
                "name": "configmaps.fastpath.test.example.com",
                "clientConfig": {"url": f"https://127.0.0.1:{port}/mutate",
                                 "caBundle": base64.b64encode(cert.read_bytes()).decode()},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                           "resources": ["configmaps"], "scope": "Namespaced"}],
                "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                                             "values": list(namespaces)}]},
                "objectSelector": {"matchLabels": dict([SELECT_LABEL])},
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 5,
                "reinvocationPolicy": "Never",
            }],
        })

    def close(self) -> None:
        self.kube.delete(f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{self.name}")
        self._server.shutdown()
        self._server.server_close()

    def _review(self, review: dict) -> dict:
        request = review["request"]
        self.reviews += 1
        response = {"uid": request["uid"], "allowed": True}
        obj = request.get("object") or {}
        if self.mutating and "v" in (obj.get("data") or {}) and obj["data"]["v"] != MUTATED:
            patch = [{"op": "replace", "path": "/data/v", "value": MUTATED}]
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}

    def _handler_class(self):
        webhook = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                data = json.dumps(webhook._review(json.loads(body))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
