"""Options are checked before the first request, whoever builds them (issue 12, defect 1)."""

from __future__ import annotations

import pytest

import fakeapi
from applyset import engine
from applyset.run.options import Options
from applyset.errors import InputError
from applyset.inputs.manifests import load_definition


class NoRequests:
    """A client that fails the test on any use: validation must come first."""

    def __getattr__(self, name):
        raise AssertionError(f"the client was used ({name}) before the options were checked")


@pytest.mark.parametrize("options, message", [
    ({"wait": True, "wait_rules": {"overrides": {"Widget.example.com": "status.[ready"}}},
     "invalid JMESPath expression"),
    ({"wait_rules": {"overrides": "status.ready"}}, "must be a mapping"),
    ({"wait_rules": {"fail_open": True}}, "unknown rule options fail_open"),
    ({"max_prune_percent": 101}, "guard.max_prune_percent must be between 0 and 100"),
    ({"claim_wait": -1}, "claim_wait must be 0 seconds or more"),
    ({"field_validation": "strict"}, "field_validation must be Strict, Warn or Ignore"),
    ({"propagation_policy": "Cascade"}, "propagation_policy must be Background, Foreground or Orphan"),
])
def test_bad_options_fail_before_any_request(options, message):
    with pytest.raises(InputError) as caught:
        engine.Engine(NoRequests(), "shop", "shop", Options.from_settings(**options))
    assert message in str(caught.value)


def test_good_options_pass_and_the_run_uses_them():
    api = fakeapi.FakeApi()
    api.add_namespace("shop")
    api.add_namespace("shop")
    run = fakeapi.make_engine(api, wait=True, wait_timeout=5,
                              wait_rules={"overrides": {"ConfigMap": "data.ready == 'yes'"}})
    ready = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"ready": "yes"}}
    report, error = fakeapi.outcome(run, "apply", load_definition([ready]))
    assert error is None
    assert [(o.ref, o.action) for o in report.objects] == [("ConfigMap shop/a", "created")]


def test_problems_name_the_option_what_is_wrong_and_the_fix_and_validate_says_the_same():
    assert Options().problems() == []
    bad = Options.from_settings(max_prune_percent=101, crd_timeout=-1)
    assert bad.problems() == [
        ("guard.max_prune_percent", "must be between 0 and 100", "set it to 100 to allow any prune, or lower to guard more"),
        ("crd_timeout", "must be 0 seconds or more", "set crd_timeout to 0 or more"),
    ]
    with pytest.raises(InputError) as caught:
        bad.validate()
    assert caught.value.message == "guard.max_prune_percent must be between 0 and 100; crd_timeout must be 0 seconds or more"


def test_a_teardown_takes_what_every_entry_point_reads_and_an_apply_needs_an_apply_s_options():
    from applyset.run.options import RunOptions

    api = fakeapi.FakeApi()
    api.add_namespace("shop")
    fakeapi.deployed(api, fakeapi.cm("a"))
    teardown = fakeapi.make_engine(api, teardown=True)
    assert isinstance(teardown.opts, RunOptions) and not isinstance(teardown.opts, Options)
    with pytest.raises(TypeError, match="apply needs an apply's Options, not RunOptions"):
        teardown.apply(load_definition([fakeapi.cm("a")]))
    report, error = fakeapi.outcome(teardown, "uninstall")
    assert error is None and fakeapi.actions(report) == {"ConfigMap shop/a": "pruned"}


def test_the_problems_of_an_apply_s_options_keep_the_module_s_order():
    options = Options.from_settings(reapply="sometimes", crd_timeout=-1, claim_ttl=-1, wait_timeout=-1,
                                    recreate_timeout=-1, max_prune_percent=101)
    assert [name for name, _why, _fix in options.problems()] == [
        "reapply", "guard.max_prune_percent", "crd_timeout", "claim_ttl", "wait_timeout", "recreate_timeout"]
