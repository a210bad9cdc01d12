"""benchmarks/phases.py: helm's --debug lines read as its phases, and our module's record as ours."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import phases  # noqa: E402


@pytest.mark.parametrize("line, phase", [
    ('level=DEBUG msg="getting history for release" release=h1', "history"),
    ('level=DEBUG msg="number of dependencies in the chart" chart=podinfo dependencies=0', "render"),
    ("install.go:242: 2026-11-29 [debug] CHART PATH: /charts/podinfo", "render"),
    ('level=DEBUG msg="creating resource(s)" resources=2', "writes"),
    ('client.go:746: [debug] Patch Deployment "h1-podinfo" in namespace ns', "writes"),
    ('client.go:737: [debug] Looks like there are no changes for Service "h1-podinfo"', "writes"),
    ("hooks.go:55: [debug] executing 2 pre-install hooks", "hooks"),
    ('level=DEBUG msg="updating release" key=sh.helm.release.v1.h1.v1', "history"),
])
def test_helm_debug_lines_open_phases(line, phase):
    assert phases.helm_phase(line) == phase


def test_our_record_becomes_the_table_phases():
    record = {"total": 0.6, "laps": [["module start", 0.3, 0.3], ["arguments", 0.01, 0.01], ["connect", 0.05, 0.05],
                                     ["imports and input", 0.1, 0.1], ["run", 0.13, 0.05], ["result", 0.01, 0.01]],
              "steps": [["read-parent", "read", 0.002, 0.002, 0, 0], ["render-chart", "read", 0.1, 0.01, 1, 0],
                        ["list-live", "read", 0.01, 0.01, 1, 0], ["apply", "write", 0.02, 0.01, 6, 6],
                        ["wait", "wait", 0.005, 0.001, 2, 0]],
              "spans": {"hooks": 0.015}}
    out = phases.ours_phases(record, wall=1.6)
    assert out["ansible start and end"] == pytest.approx(1.0)
    assert out["module start and imports"] == 0.3 and out["render"] == 0.1 and out["reads"] == 0.01
    assert out["hooks"] == 0.015 and out["writes"] == pytest.approx(0.005) and out["waits"] == 0.005
    assert set(out) == set(phases.OUR_PHASES)
