"""One tool process, measured: wall time, exit code, peak RSS of its largest process and CPU of
its tree (through GNU time, or rsswrap.py where there is none)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from harness.paths import BENCH, PY


def _timed(argv: list[str], report: Path) -> list[str]:
    """Wrap a command so that its peak RSS and CPU are measured by a small parent process.

    ``os.wait4`` from this harness would not do: a child forked from a large Python process starts
    with that process's RSS high-water mark. GNU time (or rsswrap.py) is small.
    """
    if Path("/usr/bin/time").exists():
        return ["/usr/bin/time", "-o", str(report), "-f", "rss_kb=%M wall_s=%e cpu_s=%U+%S", *argv]
    return [str(PY), str(BENCH / "rsswrap.py"), *argv]


def _read_timed(report: Path) -> dict:
    out = {}
    try:
        lines = report.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        if "rss_kb" in fields:
            out = {"rss_kb": int(fields["rss_kb"]),
                   "cpu_s": round(sum(float(x) for x in fields.get("cpu_s", "0").split("+")), 2)}
    return out


def run_process(argv, env, cwd, stdout_path: Path, timeout: float) -> dict:
    """Run one tool process; wall time, exit code, peak RSS of its largest process, CPU of its tree."""
    report = stdout_path.with_suffix(".time")
    report.unlink(missing_ok=True)
    env = dict(env, BENCH_RSS_FILE=str(report)) if not Path("/usr/bin/time").exists() else env
    with open(stdout_path, "wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(_timed(argv, report), env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            timed_out = True
        wall = time.perf_counter() - started
    usage = _read_timed(report)
    return {"wall_s": wall, "rc": proc.returncode, "rss_kb": usage.get("rss_kb"), "cpu_s": usage.get("cpu_s"),
            "timed_out": timed_out}
