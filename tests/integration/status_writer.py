"""What the readiness tests share: a thread that writes an object's status as its controller would,
and a run of the engine that waits. No controller runs in these tests; the thread waits until the
run has created the object, then writes each status in the order the controller writes them."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.inputs import manifests  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402
from applyset.run.options import Options  # noqa: E402

CREATED_WITHIN = 60  # seconds the thread waits for the run to create the object


def write_statuses(kube, path: str, statuses: list[dict], *, subresource: bool = True, delay: float = 0.0,
                   pause: float = 0.3) -> threading.Thread:
    """Write ``statuses`` one after another on the object at ``path`` once it exists, ``delay`` seconds
    after it appeared and ``pause`` seconds apart: through the status subresource, or through the
    object itself for a kind whose CRD has none (``subresource=False``). The thread is started."""
    def run():
        deadline = time.monotonic() + CREATED_WITHIN
        while kube.get(path) is None:
            assert time.monotonic() < deadline, f"{path} never created"
            time.sleep(0.05)
        time.sleep(delay)
        target = path + "/status" if subresource else path
        for status in statuses:
            code, body, _ = kube.request("PATCH", target, {"status": status}, content_type="application/merge-patch+json")
            assert code == 200, f"{target}: {body.get('message') if isinstance(body, dict) else body}"
            time.sleep(pause)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def apply_waiting(cluster, namespace: str, objects: list[dict], parent: str, wait_timeout: float, **options):
    """Apply ``objects`` as the set ``parent`` through the engine, waiting for them (``wait``) up to
    ``wait_timeout`` seconds unless ``options`` say otherwise; the report, or the engine's error."""
    options.setdefault("wait", True)
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    run = engine.Engine(client, parent, namespace, Options.from_settings(wait_timeout=wait_timeout, **options))
    return run.apply(manifests.load_definition(objects))
