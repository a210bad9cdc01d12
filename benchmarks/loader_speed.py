"""How fast the manifest reader loads the benchmark's workload (no cluster needed).

Writes the benchmark's ``base`` workload (benchmarks/workload.py) for N objects, once as one
file per kind and once as a single multi-document file, then times ``manifests.load_sources``
followed by ``manifest_checks.validate`` several times and prints the best and the median in
seconds, plus objects per second. It prints figures; it asserts nothing (machines are noisy).

    .venv/bin/python benchmarks/loader_speed.py --objects 5000 --repeat 7

``--module-utils DIR`` measures another copy of the library (e.g. an older commit's, extracted
with ``git archive``), for before/after figures on the same machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workload  # noqa: E402

manifests = manifest_checks = None  # imported in main(), from the library chosen there


def time_loads(path: Path, repeat: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds of each load (CPU time is steadier on a shared machine)."""
    wall, cpu = [], []
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        loaded = manifests.load_sources([str(path)])
        manifest_checks.validate(loaded)
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return wall, cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--module-utils", default=str(HERE.parent / "plugins" / "module_utils"),
                        help="directory holding the applyset package to measure")
    args = parser.parse_args(argv)
    global manifests, manifest_checks
    sys.path.insert(0, args.module_utils)
    try:  # the core in packages (issue 37)
        from applyset.inputs import manifest_checks, manifests
    except ImportError:  # a tree from before
        from applyset import manifests
        manifest_checks = manifests
    docs = workload.objects(args.objects, ["bench"], "base")
    with tempfile.TemporaryDirectory() as tmp:
        for layout, single in (("one file per kind", False), ("one multi-document file", True)):
            directory = Path(tmp) / ("single" if single else "many")
            workload.write_variant(directory, docs, single_file=single)
            wall, cpu = time_loads(directory, args.repeat)
            print(f"{args.objects} objects, {layout}: wall best {min(wall):.3f} s, median "
                  f"{statistics.median(wall):.3f} s; CPU best {min(cpu):.3f} s, median {statistics.median(cpu):.3f} s "
                  f"({args.objects / statistics.median(cpu):,.0f} objects per CPU second)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
