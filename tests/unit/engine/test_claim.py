"""The claim through the engine (fakeapi.py): one run at a time per set, waiting for another run's
claim, a parent written before the claim (the run starts over), a claim lost during the run, and a
run killed part way."""

import json

import pytest
from applyset import spec
from applyset.errors import ParentError

from fakeapi import (PARENT_PATH, actions, cm, deploy, deployed, first_index, is_parent_write, load, make_engine,
                     member_writes, parent_annotations, run)
from engine_objects import claimed_parent, svc


# ----- the claim: one run at a time ----------------------------------------------------------


def test_another_runs_unexpired_claim_refuses_the_run_after_the_wait(api):
    claimed_parent(api, expires=4102444800)  # 2100
    report, error = run(api, "apply", load(cm("a")), claim_wait=0)
    assert error is not None and "another run (other-host/1/abcd)" in str(error)
    assert api.writes() == []


def test_an_expired_claim_is_taken_over(api):
    claimed_parent(api, expires=1000)  # 1970
    report, error = run(api, "apply", load(cm("a")), claim_wait=0)
    assert error is None
    assert spec.ANNOTATION_CLAIM not in parent_annotations(api)


def test_the_run_waits_until_the_other_claim_is_released(api, monkeypatch):
    from applyset.steps import claim
    claimed_parent(api, expires=4102444800)
    sleeps = []
    monkeypatch.setattr(claim.time, "sleep", sleeps.append)

    def other_run_finishes(_request):
        if len(api.sent("GET", PARENT_PATH)) == 2:
            api.update("v1", "ConfigMap", "shop", "shop",
                       lambda o: o["metadata"]["annotations"].pop(spec.ANNOTATION_CLAIM))

    api.before("GET", PARENT_PATH, other_run_finishes, times=None)
    report, error = run(api, "apply", load(cm("a")), claim_wait=30)
    assert error is None and actions(report) == {"ConfigMap shop/a": "created"}
    assert len(sleeps) == 1

# ----- a parent written before the claim: the run starts over --------------------------------


def test_a_parent_written_by_someone_else_before_the_claim_starts_the_run_over(api):
    """Someone wrote the parent between the run's read and its claim: the claim's write is refused
    (a stale resourceVersion) before any member is written, so the run lost a race, not met a
    conflict. It reads the parent again and goes on from what is there now (issue 36 item 1)."""
    deployed(api, cm("a"))

    def someone_else_writes(_request):
        api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(x="y"))

    api.before("PATCH", PARENT_PATH, someone_else_writes)
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/b": "created"}
    # read by each attempt, and once after the 409 (to tell a lost answer to our own write from it)
    assert len(api.sent("GET", PARENT_PATH)) == 3
    claims = [i for i, r in enumerate(api.requests) if is_parent_write(r)]
    assert first_index(api, lambda r: r.is_write and not is_parent_write(r)) > claims[1]  # after the second claim
    assert parent_annotations(api)["x"] == "y" and spec.ANNOTATION_CLAIM not in parent_annotations(api)


def test_a_parent_written_under_the_run_at_every_claim_stops_it_after_a_bounded_number_of_tries(api):
    """A parent written before each of the run's claims (something that takes no claim): the run
    starts over ``RACES_BEFORE_GIVING_UP`` times at most, then fails with the conflict, no member written."""
    from applyset.steps.claim import RACES_BEFORE_GIVING_UP

    deployed(api, cm("a"))

    def someone_else_writes(_request):
        api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(x="y"))

    api.before("PATCH", PARENT_PATH, someone_else_writes, times=None)
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert isinstance(error, ParentError) and "changed by someone else" in str(error)
    assert member_writes(api) == []
    assert len(api.sent("PATCH", PARENT_PATH)) == RACES_BEFORE_GIVING_UP


def test_an_uninstall_whose_claim_is_refused_for_a_parent_written_meanwhile_starts_over(api):
    """The parent was written between the uninstall's read and its claim (another run's release,
    say): the uninstall reads it again and goes on; nothing was deleted by the first attempt."""
    deployed(api, cm("a"))

    def someone_else_writes(_request):
        api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(x="y"))

    api.before("PATCH", PARENT_PATH, someone_else_writes)
    report, error = run(api, "uninstall")
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "pruned"}
    assert len(api.sent("PATCH", PARENT_PATH)) == 2  # the refused claim, then the claim
    assert api.object("v1", "ConfigMap", "shop", "shop") is None

# ----- a claim lost during the run -----------------------------------------------------------


def test_a_run_that_loses_its_claim_prunes_nothing(api):
    """The heartbeat renews the claim every ttl/3 seconds; when another run has written the parent
    meanwhile, the renewal fails, and the run stops before it prunes anything."""
    import threading
    deployed(api, cm("a"), cm("b"))
    renewal_failed = threading.Event()

    def another_run_takes_the_set(_request):
        api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(
            {spec.ANNOTATION_CLAIM: json.dumps({"run": "other", "expires": 4102444800})}))
        # Hold this apply until the heartbeat has met the other run's write (its re-read of the
        # parent after the 409); bounded, and the client has a second connection for it.
        api.before("GET", PARENT_PATH, lambda _r: renewal_failed.set())
        assert renewal_failed.wait(timeout=20), "the heartbeat never renewed the claim"

    api.before("PATCH", "/api/v1/namespaces/shop/configmaps/a", another_run_takes_the_set)
    report, error = run(api, "apply", load(cm("a", k="changed")), claim_ttl=3, parallelism=2)
    assert error is not None and "lost its claim" in str(error)
    assert "another run took the set over" in error.fix
    assert not any(r.method == "DELETE" for r in api.requests)
    assert api.object("v1", "ConfigMap", "b", "shop") is not None

# ----- a run killed part way: the next run prunes exactly what it should ---------------------


class Killed(BaseException):
    """The process dies (SIGKILL, a lost controller node): nothing after this point runs."""


def expire_the_dead_runs_claim(api):
    api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(
        {spec.ANNOTATION_CLAIM: json.dumps({"run": "dead/1/0000", "expires": 1000})}))


def kill_at(api, method, path, nth=1):
    """The process dies as the nth matching request goes out: it and every later one (the run's
    cleanup included) never reach the server. Returns ``restart``: requests reach it again."""
    state = {"dead": False, "restarted": False}

    def die(request):
        if state["restarted"]:
            return
        if state["dead"] or (request.method, request.path) == (method, path) and len(
                api.sent(method, path)) == nth:
            state["dead"] = True
            api.requests.remove(request)
            raise Killed()

    api.before(None, None, die, times=None)
    return lambda: state.update(restarted=True)


def test_a_run_killed_before_its_final_parent_write_leaves_what_the_next_run_prunes(api):
    deployed(api, cm("a"), cm("b"))
    restart = kill_at(api, "PATCH", PARENT_PATH, nth=2)  # the claim is written, the final write is not
    with pytest.raises(Killed):  # its heartbeat thread would only wake after 20 minutes
        make_engine(api, claim_ttl=3600).apply(load(cm("a"), svc("new")))
    assert spec.ANNOTATION_CLAIM in parent_annotations(api)
    assert api.object("v1", "Service", "new", "shop") is not None
    assert api.object("v1", "ConfigMap", "b", "shop") is None
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Service"
    restart()
    expire_the_dead_runs_claim(api)
    report, error = run(api, "apply", load(cm("a"), cm("c")))
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/c": "created",
                               "Service shop/new": "pruned"}
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_a_run_killed_between_its_members_leaves_what_the_next_run_prunes(api):
    deployed(api, cm("a"), deploy("web"))
    # ConfigMaps, then Services, then Deployments: killed after the Service, before the Deployment.
    restart = kill_at(api, "PATCH", "/apis/apps/v1/namespaces/shop/deployments/next")
    with pytest.raises(Killed):  # its heartbeat thread would only wake after 20 minutes
        make_engine(api, claim_ttl=3600).apply(load(cm("a"), cm("z"), svc("new"), deploy("next")))
    assert api.object("v1", "Service", "new", "shop") is not None
    assert api.object("apps/v1", "Deployment", "next", "shop") is None
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Deployment.apps,Service"
    assert spec.ANNOTATION_CLAIM in parent_annotations(api)
    assert api.object("apps/v1", "Deployment", "web", "shop") is not None  # never pruned: the run died first
    restart()
    expire_the_dead_runs_claim(api)
    report, error = run(api, "apply", load(cm("a")), max_prune_percent=100)
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/z": "pruned",
                               "Deployment shop/web": "pruned", "Service shop/new": "pruned"}
