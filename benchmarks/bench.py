#!/usr/bin/env python3
"""The benchmark's entry point: ``benchmarks/run`` (``make bench``) runs this file.

The harness is the package ``harness/``: ``cli`` (the command line), ``matrix`` (the default matrix
and presets), ``runner`` (blocks, repetitions, chains of scenarios, cleanups, checkpoints),
``tools`` (one class per tool compared), ``cluster`` (the admin client, request counts, the control
plane), ``process`` (one measured process), ``trees`` (the collection tree under test),
``machine`` and ``profiling``. See ``benchmarks/run --help`` and docs/performance.md.
"""

from __future__ import annotations

import sys

from harness import cli

if __name__ == "__main__":
    sys.exit(cli.main())
