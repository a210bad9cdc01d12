"""Fallback for machines without GNU time: run a command and append its peak RSS, wall and CPU time
to $BENCH_RSS_FILE in the same format as ``/usr/bin/time -f "rss_kb=%M wall_s=%e cpu_s=%U+%S"``.

Usage: python rsswrap.py PROGRAM ARGS...   (stdin, stdout and stderr are passed through)
"""

import os
import subprocess
import sys
import time

started = time.monotonic()
proc = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(proc.pid, 0)
elapsed = time.monotonic() - started
target = os.environ.get("BENCH_RSS_FILE")
if target:
    with open(target, "a") as out:
        out.write(f"rss_kb={usage.ru_maxrss} wall_s={elapsed:.2f} cpu_s={usage.ru_utime:.2f}+{usage.ru_stime:.2f}\n")
sys.exit(os.waitstatus_to_exitcode(status))
