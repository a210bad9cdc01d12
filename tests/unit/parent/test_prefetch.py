"""prefetch.py: a Secret or ConfigMap parent is read together with discovery, and only once.

The fake API stands in for the server (tests/unit/fakeapi.py); the client sends several requests
at once, as a run does by default.
"""

import time

from applyset.parent import prefetch
from fakeapi import PARENT_PATH, cm, deployed, load, run, slow_shop


def test_the_parent_path_is_known_before_discovery_for_secrets_and_configmaps_only():
    assert prefetch.parent_path("bench", "shop") == "/api/v1/namespaces/shop/secrets/bench"
    assert prefetch.parent_path("configmaps/web", "shop") == "/api/v1/namespaces/shop/configmaps/web"
    assert prefetch.parent_path({"kind": "ConfigMap", "name": "web", "namespace": "a"}, "shop") == \
        "/api/v1/namespaces/a/configmaps/web"
    assert prefetch.parent_path("applysets.example.com/web", "shop") is None  # needs discovery
    assert prefetch.parent_path({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}, "shop") is None
    assert prefetch.parent_path("bench", None) is None  # refused later, with the resolution's own message


def shop():
    return slow_shop(0.02)


def sent_paths(api):
    return [(r.method, r.path) for r in api.requests]


def test_a_no_op_reads_the_parent_with_discovery_once_and_waits_for_three_round_trips():
    api = shop()
    deployed(api, cm("a"), cm("b"), parallelism=4)
    report, error = run(api, "apply", load(cm("a"), cm("b")), parallelism=4)
    assert error is None and not report.changed
    # read at the start (with discovery) and confirmed at the end: never twice at the start
    assert len(api.sent("GET", PARENT_PATH)) == 2
    # discovery and the parent together, the LIST, the confirmation
    assert report.requests["round_trips"] == 3, sent_paths(api)


def test_a_first_run_finds_no_parent_in_the_prefetch_and_creates_it():
    api = shop()
    report, error = run(api, "apply", load(cm("a")), parallelism=4)
    assert error is None and report.changed
    assert api.object("v1", "ConfigMap", "shop", "shop") is not None
    assert api.object("v1", "ConfigMap", "a", "shop") is not None
