"""The benchmark's latency profile: the delaying proxy adds the round trip it is asked for, block
options parse, a ConfigMap-only workload, and every latency table names its round trip."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))
import latency  # noqa: E402
import latency_report  # noqa: E402
import workload  # noqa: E402


def echo_server():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve():
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    return server


def test_the_proxy_delays_each_round_trip_by_the_rtt_and_passes_bytes_through():
    server = echo_server()
    proxy = subprocess.Popen([sys.executable, str(BENCH / "delayproxy.py"),
                              f"127.0.0.1:{server.getsockname()[1]}", "--rtt-ms", "100"],
                             stdout=subprocess.PIPE, text=True)
    try:
        port = int(proxy.stdout.readline().split()[1].rpartition(":")[2])
        with socket.create_connection(("127.0.0.1", port)) as conn:
            for payload in (b"hello", b"x" * 200000):
                started = time.monotonic()
                conn.sendall(payload)
                got = b""
                while len(got) < len(payload):
                    got += conn.recv(65536)
                took = time.monotonic() - started
                assert got == payload
                assert 0.1 <= took < 1.0, took  # one round trip of 100 ms, bandwidth kept
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
        server.close()


def test_block_options():
    assert latency.parse_options("") == {"rtt": 0, "kinds": "all"}
    assert latency.parse_options("rtt=50,kinds=cm") == {"rtt": 50, "kinds": "cm"}
    with pytest.raises(SystemExit, match="unknown block option"):
        latency.parse_options("latency=50")


def test_a_configmap_only_workload_within_its_block_and_all_kinds_after():
    with workload.kinds("cm"):
        assert {o["kind"] for o in workload.objects(30, ["ns"], "base")} == {"ConfigMap"}
    assert len({o["kind"] for o in workload.objects(30, ["ns"], "base")}) == 11


def row(tool, scenario, median, rtt, **extra):
    return {"tool": tool, "n": 1000, "namespaces": 1, "scenario": scenario, "rtt_ms": rtt, "kinds": "cm",
            "runs": 2, "ok": True, "median_s": median, "min_s": median, "max_s": median, **extra}


def test_every_latency_table_names_its_round_trip_and_the_ratios_of_the_targets():
    summary = [row("ansible", "initial", 4.0, 50), row("ceiling@64", "initial", 2.0, 50),
               row("ansible", "noop", 1.5, 50), row("ping", "noop", 1.0, 50),
               row("core", "noop", 0.5, 50, round_trips=3, peak_in_flight=8),
               dict(row("ansible", "initial", 2.0, 0), kinds="all")]  # loopback, 11 kinds: the older tables
    text = "\n".join(latency_report.latency_tables({"summary": summary}))
    assert "round trip 50 ms (delaying proxy), ConfigMaps only" in text
    assert "at a **50 ms round trip**" in text
    assert "| *ansible-playbook ÷ minimal client (64 parallel PATCHes)* | 2.00× | – |" in text
    assert "| *ansible-playbook − ping playbook* | – | +0.50 s |" in text
    assert "| – | 3 (8) |" in text
    assert "round trip 0 ms" not in text
