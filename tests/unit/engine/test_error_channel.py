"""The engine's one error channel (issue 12): a run that fails raises, with its partial report."""

from __future__ import annotations

import pytest

from applyset import engine
from applyset.run.options import Options
from applyset.run import report
from applyset.errors import ApiError, ApplySetError, GuardError


class DiscoveryFails:
    """A client whose first request, discovery, gets an HTTP error."""

    def discover(self):
        raise ApiError("the server is on fire", status=500)


def test_an_error_of_the_run_carries_the_report_of_what_it_did():
    run = engine.Engine(DiscoveryFails(), "shop", "shop", Options())
    with pytest.raises(ApiError) as caught:
        run.uninstall()
    assert caught.value.report is run.report
    assert caught.value.report.to_dict()["changed"] is False


def test_a_typed_error_keeps_its_type_and_gets_the_report():
    run = engine.Engine(DiscoveryFails(), "shop", "shop", Options())

    def refuse():
        run.report.warnings.append("seen before the refusal")
        raise GuardError("pruning would delete protected objects: Namespace shop", obj="ApplySet x")

    with pytest.raises(GuardError) as caught:
        run._run(refuse)
    assert caught.value.report.warnings == ["seen before the refusal"]


def test_failed_objects_without_an_error_of_the_run_still_raise():
    run = engine.Engine(DiscoveryFails(), "shop", "shop", Options(dry_run=True))

    def one_object_fails():
        run.report.objects.append(report.ObjectResult("v1", "Namespace", None, "shop", "failed", reason="forbidden"))

    with pytest.raises(ApplySetError) as caught:
        run._run(one_object_fails)
    assert str(caught.value) == "some objects failed; see objects. Fix: fix them and run again"
    assert type(caught.value) is ApplySetError
    assert [o.name for o in caught.value.report.failed_objects] == ["shop"]


def test_a_run_that_succeeded_returns_its_report():
    run = engine.Engine(DiscoveryFails(), "shop", "shop", Options())
    assert run._run(lambda: None) is run.report


def test_errors_outside_a_run_have_no_report():
    with pytest.raises(ApplySetError) as caught:
        engine.Engine(DiscoveryFails(), "shop", "shop", Options.from_settings(max_prune_percent=101))
    assert caught.value.report is None
