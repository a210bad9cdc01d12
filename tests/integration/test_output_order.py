"""The same preview prints the same thing in the same order, against the real control plane.

30 changed ConfigMaps, ``parallelism: 8``, every write answered after a random delay by a
loopback proxy: the preview three times, then the real run, each with --diff. Objects, diffs
and warnings come in plan order every time (on 4ccbc19 the diffs came in completion order).
"""

from __future__ import annotations

import difflib

import random
import re
import threading
import time

from ansible_cli import run_module
from faultproxy import MUTATING, FaultProxy

NAMES = [f"cm-{i:02d}" for i in random.Random(7).sample(range(30), 30)]  # input order, not sorted


class JitterProxy(FaultProxy):
    """Forwards everything; each write waits 0 to 40 ms first, in a different order each run."""

    def __init__(self, kubeconfig, seed: int):
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        super().__init__(kubeconfig)

    def _forward(self, method, path, headers, body):
        if method in MUTATING:
            with self._rng_lock:
                pause = self._rng.uniform(0, 0.04)
            time.sleep(pause)
        return super()._forward(method, path, headers, body)


def configmaps(value: str) -> list[dict]:
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": f"{value}-{name}"}}
            for name in NAMES]


def run(cluster, namespace, members, seed: int, check: bool):
    proxy = JitterProxy(cluster.kubeconfig, seed)
    try:
        rc, result, out = run_module(cluster, "applyset_apply", {
            "parent": "set1", "namespace": namespace, "definition": members, "host": proxy.url, "parallelism": 8},
            check=check, diff=True)
    finally:
        proxy.close()
    assert rc == 0, out
    return result, out


def diff_names(out: str) -> list[str]:
    """The objects whose diff the run printed, in the order printed (``--- before: ConfigMap ns/name``)."""
    return re.findall(r"^--- before: ConfigMap [^/\s]+/(\S+)", out, flags=re.MULTILINE)


def diff_text(out: str) -> str:
    """What the run printed from its first diff on, without the lines that name the run itself and
    without ``requests.round_trips``: a measurement, like a duration (requests in flight follow the
    latencies the run sees, flow.py), where everything else the run prints is decided by its input."""
    return "\n".join(line for line in out[out.index("--- before:"):].splitlines()
                     if not line.startswith(("PLAY", "TASK", "localhost |")) and '"round_trips":' not in line)


def test_previews_and_the_real_run_print_diffs_in_plan_order(cluster, kube, namespace):
    run(cluster, namespace, configmaps("v1"), seed=0, check=False)
    previews = [run(cluster, namespace, configmaps("v2"), seed=seed, check=True) for seed in (1, 2, 3)]
    for result, out in previews:
        assert [o["name"] for o in result["objects"]] == NAMES
        assert diff_names(out) == NAMES, out
    texts = [diff_text(out) for _result, out in previews]
    assert len(set(texts)) == 1, "\n".join(difflib.unified_diff(texts[0].splitlines(), next(
        t for t in texts if t != texts[0]).splitlines(), lineterm=""))
    real, out = run(cluster, namespace, configmaps("v2"), seed=4, check=False)
    assert [o["action"] for o in real["objects"]] == ["configured"] * 30
    assert diff_names(out) == NAMES, out
