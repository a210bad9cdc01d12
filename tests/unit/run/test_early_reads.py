"""early.py: the reads that need no manifests go out before the run asks for them, are taken
once, and never stand in for a read the run makes later (the parent confirmed at the end).

The fake API stands in for the server (tests/unit/fakeapi.py); the real check of the whole
module through ansible-playbook is tests/integration/test_fast_path.py.
"""

import time

from applyset.run import early
import json

from applyset import spec
from fakeapi import ID, PARENT_PATH, client, cm, deployed, engines, load, outcome, slow_shop

LIST_PATH = "/api/v1/namespaces/shop/configmaps"


def shop():
    """A server a round trip (50 ms) away: longer than a loaded machine takes to start the threads
    that send requests together, so that the round trips counted are the run's, not the scheduler's."""
    return slow_shop(0.05)


def run_early(api, objects, parent="configmaps/shop", **options):
    """An apply of ``objects`` whose client sent its early reads first, as the module does."""
    c = client(api, 4)
    reads = early.start(c, parent, "shop", takeover=options.get("takeover", False))
    # The module imports the engine and reads the manifests meanwhile, which takes longer than these
    # reads 10 ms away; waiting for them (bounded) keeps that true on a loaded machine.
    if reads._thread is not None:
        reads._thread.join(timeout=5)
    report, error = outcome(engines.Engine(c, parent, "shop", engines.Options.from_settings(**options)), "apply", load(*objects))
    return report, error, reads


def test_a_no_op_takes_discovery_the_parent_and_the_list_from_the_early_reads_and_reads_the_parent_again():
    api = shop()
    deployed(api, cm("a"), cm("b"), parallelism=4)
    report, error, reads = run_early(api, [cm("a"), cm("b")])
    assert error is None and not report.changed
    # /api, /apis, the parent and the LIST went out early and were taken; nothing was sent twice
    assert reads.sent == 4 and reads.taken == 4
    assert len(api.sent("GET", LIST_PATH)) == 1
    # read early, and once more at the end by the run itself: the early answer stands in for the first only
    assert len(api.sent("GET", PARENT_PATH)) == 2
    assert report.requests == {"sent": 5, "writes": 0, "round_trips": 3}


def test_a_parent_changed_after_the_early_read_is_seen_by_the_confirmation_at_the_end():
    api = shop()
    deployed(api, cm("a"), parallelism=4)
    c = client(api, 4)
    reads = early.start(c, "configmaps/shop", "shop")
    reads.finish()
    # another tool writes the parent after the early read: the run must not take it as unchanged
    api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(x="y"))
    report, error = outcome(engines.Engine(c, "configmaps/shop", "shop", engines.Options()), "apply",
                            load(cm("a", data_k="changed")))
    assert error is None and report.changed
    # the update-only route saw the parent change and started over on the claim's route
    assert any(r.is_write and r.path == PARENT_PATH for r in api.requests)


def test_a_parent_claimed_by_another_run_gets_no_early_list():
    api = shop()
    deployed(api, cm("a"), parallelism=4)
    claim = json.dumps({"run": "other", "expires": time.time() + 30})
    api.update("v1", "ConfigMap", "shop", "shop",
               lambda o: o["metadata"]["annotations"].update({spec.ANNOTATION_CLAIM: claim}))
    c = client(api, 4)
    reads = early.start(c, "configmaps/shop", "shop")
    reads.finish()
    assert [r.path for r in api.sent("GET") if "limit" in r.query] == []


def test_a_missing_parent_gets_its_namespace_read_early_for_the_namespace_check():
    api = shop()
    report, error, reads = run_early(api, [cm("a")])
    assert error is None and report.changed
    assert len(api.sent("GET", "/api/v1/namespaces/shop")) == 1
    assert reads.taken == 4  # /api, /apis, the parent (404) and the namespace


def test_answers_the_run_did_not_take_are_dropped_after_its_reading_steps():
    api = shop()
    deployed(api, cm("a"), parallelism=4)
    # the set now applies a Secret only: the recorded ConfigMaps are listed through the selector,
    # not whole, so the early whole LIST is not the run's and is dropped
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": "v"}}
    report, error, reads = run_early(api, [secret], max_prune_percent=100)
    assert error is None
    assert reads.sent == 4 and reads.taken == 3
    selected = [r for r in api.sent("GET", LIST_PATH) if r.query.get("labelSelector")]
    assert selected and ID in selected[0].query["labelSelector"]
    assert not reads._answers  # nothing is left to take


def test_an_early_read_that_failed_is_the_runs_failure_only_where_the_run_sends_it():
    api = shop()
    deployed(api, cm("a"), parallelism=4)
    api.fail("GET", LIST_PATH, 403, "forbidden", times=None)
    report, error, _reads = run_early(api, [cm("a")])
    assert error is not None and "listing ConfigMap objects in namespace shop failed" in str(error)


def test_a_stand_in_client_takes_no_early_reads():
    assert early.start(object(), "configmaps/shop", "shop") is None
