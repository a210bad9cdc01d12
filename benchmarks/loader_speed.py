"""How fast the manifest reader loads the benchmark's workload (no cluster needed).

Writes the benchmark's ``base`` workload (benchmarks/workload.py) for N objects, once as one
file per kind and once as a single multi-document file, then times ``manifests.load_sources``
followed by ``manifests.validate`` several times and prints the best and the median in
seconds, plus objects per second. It prints figures; it asserts nothing (machines are noisy).

    .venv/bin/python benchmarks/loader_speed.py --objects 5000 --repeat 7
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "plugins" / "module_utils"))
sys.path.insert(0, str(HERE))

from applyset import manifests  # noqa: E402

import workload  # noqa: E402


def time_loads(path: Path, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        loaded = manifests.load_sources([str(path)])
        manifests.validate(loaded)
        times.append(time.perf_counter() - started)
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    docs = workload.objects(args.objects, ["bench"], "base")
    with tempfile.TemporaryDirectory() as tmp:
        for layout, single in (("one file per kind", False), ("one multi-document file", True)):
            directory = Path(tmp) / ("single" if single else "many")
            workload.write_variant(directory, docs, single_file=single)
            times = time_loads(directory, args.repeat)
            best, median = min(times), statistics.median(times)
            print(f"{args.objects} objects, {layout}: best {best:.3f} s, median {median:.3f} s "
                  f"({args.objects / median:,.0f} objects/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
