"""The same run prints the same thing in the same order: objects, diffs and warnings in plan order,
however the parallel requests finish (parallelism 8, randomised latency)."""

from __future__ import annotations

import random
import time

import pytest
from fakeapi import FakeApi, cm, deployed, load, make_engine, outcome

NAMES = [f"cm-{i:02d}" for i in (7, 3, 29, 0, 15, 22, 1, 9, 18, 4, 26, 11, 5, 20, 13, 2, 28, 8, 17, 24,
                                  6, 19, 10, 27, 12, 23, 14, 21, 16, 25)]  # input order, not sorted


def _changed_set():
    return load(*[cm(name, value=f"v2-{name}") for name in NAMES])


def _jitter(api: FakeApi, seed: int) -> None:
    """Every apply waits 0 to 20 ms before its answer, differently for each seed."""
    rng = random.Random(seed)
    api.before("PATCH", None, lambda _request: time.sleep(rng.uniform(0, 0.02)), times=None)
    for name in NAMES:
        api.warn("PATCH", f"/api/v1/namespaces/shop/configmaps/{name}", f"seen by the webhook: {name}")


def _run(seed: int, **options):
    api = FakeApi()
    api.add_namespace("shop")
    deployed(api, *[cm(name, value=f"v1-{name}") for name in NAMES])
    _jitter(api, seed)
    report, error = outcome(make_engine(api, parallelism=8, diff=True, **options), "apply", _changed_set())
    assert error is None, error
    return report


def _diff_names(report):
    return [d["before_header"].rpartition("/")[2] for d in report.diff]


@pytest.mark.parametrize("options", [{"dry_run": True}, {}, {"reapply": "always"}],
                         ids=["preview", "update-only", "claim"])
def test_diffs_and_warnings_come_in_plan_order_whatever_order_the_answers_came_in(options):
    reports = [_run(seed, **options) for seed in (1, 2, 3)]
    for report in reports:
        assert [o.name for o in report.objects] == NAMES
        assert _diff_names(report) == NAMES
        assert report.warnings == [f"ConfigMap shop/{name}: seen by the webhook: {name}" for name in NAMES]
    first = reports[0]
    assert all(r.diff == first.diff and r.warnings == first.warnings for r in reports[1:])
