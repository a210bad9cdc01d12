"""benchmarks/run's command line: no command means ``run``, the default matrix read into its blocks,
the filters, --rtt, --smoke and --preset, and unknown tools or scenarios refused."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from harness import cli, matrix  # noqa: E402
from summary import ALL_TOOLS, SCENARIOS  # noqa: E402

LOOPBACK = {"rtt": 0, "kinds": "all"}


def blocks(*argv):
    args = cli.parse_args(list(argv))
    matrix.apply_presets(args)
    return matrix.parse_matrix(args)


def test_without_a_command_the_benchmark_runs_the_default_matrix():
    args = cli.parse_args([])
    assert args.cmd == "run" and args.matrix == matrix.DEFAULT_MATRIX and args.reps == 3
    assert matrix.is_default_matrix(args)
    assert cli.parse_args(["--sizes", "1000"]).cmd == "run"
    assert not matrix.is_default_matrix(cli.parse_args(["--sizes", "1000"]))
    assert cli.parse_args(["report", "a.json"]).results == ["a.json"]


def test_the_default_matrix_reads_into_its_blocks_in_order():
    assert blocks() == [
        (1000, 1, ["ansible", "core", "ceiling"], 3, SCENARIOS, LOOPBACK),
        (5000, 1, ["ansible", "ceiling"], 2, ("initial", "noop", "change"), LOOPBACK),
        (1000, 3, ["ansible", "core", "ceiling"], 1, ("initial", "noop", "change"), LOOPBACK),
        (100, 1, list(ALL_TOOLS), 3, SCENARIOS, LOOPBACK),
        (1000, 1, ["kubectl", "kubectl-nv", "kpt"], 1, SCENARIOS, LOOPBACK),
        (1000, 1, ["ansible", "core", "ceiling", "ceiling@64", "ping"], 2, ("initial", "noop", "change"),
         {"rtt": 50, "kinds": "cm"}),
    ]
    assert matrix.DEFAULT_MINUTES == round(sum(minutes for _, minutes in matrix.DEFAULT_BLOCKS) + 2)


def test_filters_keep_the_blocks_and_tools_asked_for_and_rtt_overrides_every_block():
    assert blocks("--sizes", "5000") == [(5000, 1, ["ansible", "ceiling"], 2, ("initial", "noop", "change"), LOOPBACK)]
    assert [b[:3] for b in blocks("--namespaces", "3")] == [(1000, 3, ["ansible", "core", "ceiling"])]
    assert [b[:3] for b in blocks("--sizes", "1000", "--tools", "kpt,ping")] == [
        (1000, 1, ["kpt"]), (1000, 1, ["ping"])]
    assert {b[5]["rtt"] for b in blocks("--rtt", "150")} == {150}


def test_an_entry_without_repetitions_or_scenarios_takes_reps_and_every_scenario():
    assert blocks("--matrix", "10:1,2:core", "--reps", "4") == [
        (10, 1, ["core"], 4, SCENARIOS, LOOPBACK), (10, 2, ["core"], 4, SCENARIOS, LOOPBACK)]


def test_smoke_and_preset_replace_the_matrix():
    args = cli.parse_args(["--smoke"])
    matrix.apply_presets(args)
    assert (args.matrix, args.reps, args.ceiling_parallelism, args.idle) == (matrix.SMOKE_MATRIX, 1, "16", 2)
    assert [b[:4] for b in matrix.parse_matrix(args)] == [
        (50, 1, ["ansible", "core", "ceiling"], 1), (50, 1, ["kubectl"], 1)]
    assert [b[0] for b in blocks("--preset", "scale")] == [10000, 25000]


@pytest.mark.parametrize("entry, message", [("10:1:nope", "unknown tools in --matrix: nope"),
                                            ("10:1:core:1:initial,later", "unknown scenarios in --matrix"),
                                            ("10:1:core:1::rtt=5,fast=1", "unknown block option")])
def test_unknown_tools_scenarios_and_options_are_refused(entry, message):
    with pytest.raises(SystemExit, match=message):
        blocks("--matrix", entry)
