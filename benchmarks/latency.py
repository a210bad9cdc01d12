"""The benchmark's latency profile: a matrix block measured through a delaying proxy of its own.

``Link(kubeconfig, rtt_ms)`` starts ``delayproxy.py`` in front of the kubeconfig's API server and
writes a kubeconfig whose clusters point at it (same CA, same credentials: the server's
certificate names 127.0.0.1, whatever the port). Every tool of the block gets that kubeconfig;
the harness itself (metrics, counts, cleanups) keeps the direct one, so its work does not pay
the round trip. A round trip of 0 is the loopback itself: no proxy.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.parse
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent


class Link:
    """A proxied kubeconfig for a round trip of ``rtt_ms`` (context manager; 0: the kubeconfig itself)."""

    def __init__(self, kubeconfig: str, rtt_ms: int, workdir: Path):
        self.direct = kubeconfig
        self.rtt_ms = rtt_ms
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self._proc = None

    def __enter__(self) -> "Link":
        if not self.rtt_ms:
            return self
        doc = yaml.safe_load(Path(self.direct).read_text())
        servers = {c["cluster"]["server"] for c in doc.get("clusters") or []}
        if len(servers) != 1:
            raise SystemExit(f"--rtt needs a kubeconfig with one server, not {sorted(servers)}")
        url = urllib.parse.urlparse(servers.pop())
        upstream = f"{url.hostname}:{url.port or 443}"
        self._proc = subprocess.Popen([sys.executable, str(HERE / "delayproxy.py"), upstream,
                                       "--rtt-ms", str(self.rtt_ms)], stdout=subprocess.PIPE, text=True)
        line = self._proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "listening":
            self.close()
            raise SystemExit(f"the delaying proxy did not start: {line}")
        port = line[1].rpartition(":")[2]
        for cluster in doc["clusters"]:
            cluster["cluster"]["server"] = f"{url.scheme}://{url.hostname}:{port}"
        self.workdir.mkdir(parents=True, exist_ok=True)
        path = self.workdir / f"kubeconfig-rtt{self.rtt_ms}"
        path.write_text(yaml.safe_dump(doc))
        path.chmod(0o600)
        self.kubeconfig = str(path)
        return self

    def close(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
            self._proc = None

    def __exit__(self, *exc) -> None:
        self.close()


def parse_options(text: str) -> dict:
    """A matrix block's options field: ``rtt=50,kinds=cm`` -> {"rtt": 50, "kinds": "cm"}."""
    out = {"rtt": 0, "kinds": "all"}
    for part in filter(None, (text or "").split(",")):
        key, _, value = part.partition("=")
        if key == "rtt":
            out["rtt"] = int(value)
        elif key == "kinds" and value in ("all", "cm"):
            out["kinds"] = value
        else:
            raise SystemExit(f"unknown block option {part!r} (rtt=MS, kinds=all|cm)")
    return out
