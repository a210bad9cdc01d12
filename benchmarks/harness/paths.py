"""Where the benchmark's harness, its state and its interpreter are, and its log line.

Importing this module also puts the harness's own core library (``plugins/module_utils``) on
``sys.path``: the harness talks to the cluster through it, whatever collection tree is under test.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))

PY = Path(sys.executable)
VENV_BIN = PY.parent
BENCH_STATE = ROOT / ".state" / "bench"
COLLECTIONS = BENCH_STATE / "collections"  # ansible_collections/applyset/kubernetes -> the tree under test
K8S_VENV = BENCH_STATE / "ansible-pkg"  # the `ansible` PyPI package (for kubernetes.core), kept out of .venv
ANSIBLE_PKG_SPEC = "ansible>=12,<13"  # the community package that matches ansible-core 2.19


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
