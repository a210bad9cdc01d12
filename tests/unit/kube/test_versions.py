"""Recorded kinds listed at a version that works (versions.py), and what a failed LIST is blamed on
(listerrors.py), through the engine against the fake API server.

The scenario: Widget.example.com served at v2 (preferred) and v1 (the CRD's storage version);
the conversion webhook is down, so every LIST at v2 fails with the 500 a real server sends.
"""

from __future__ import annotations

import pytest
from applyset.kube import list_errors as listerrors, versions
from applyset.errors import ApiError, ApplySetError
from applyset.kube.discovery import Discovery, Resource
from fakeapi import DEFAULT_KINDS, FakeApi, Kind, actions, cm, load, run

CONVERSION_FAILED = ('conversion webhook for example.com/v1, Kind=Widget failed: Post '
                     '"https://widget-convert.infra.svc:443/convert?timeout=30s": service "widget-convert" not found')
V2_LIST = "/apis/example.com/v2/namespaces/shop/widgets"
V1_LIST = "/apis/example.com/v1/namespaces/shop/widgets"
WIDGETS = Resource("example.com", "v2", "Widget", "widgets", True, frozenset({"list"}))
SECRETS = Resource("", "v1", "Secret", "secrets", True, frozenset({"list"}))
NODES = Resource("", "v1", "Node", "nodes", False, frozenset({"list"}))


def crd(*, member=False):
    meta = {"name": "widgets.example.com"}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": meta,
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True},
                                  {"name": "v2", "served": True, "storage": False}]}}


def widget(name, version="v1"):
    return {"apiVersion": f"example.com/{version}", "kind": "Widget", "metadata": {"name": name}, "spec": {}}


@pytest.fixture
def api():
    fake = FakeApi(kinds=list(DEFAULT_KINDS) + [Kind("example.com", "v2", "Widget", "widgets", True),
                                                 Kind("example.com", "v1", "Widget", "widgets", True)])
    fake.add_namespace("shop")
    return fake


def deployed_with_widgets(api, *extra):
    api.add(crd())
    report, error = run(api, "apply", load(cm("a"), widget("w1"), widget("w2"), *extra))
    assert error is None, error
    api.requests.clear()
    return report


def conversion_down(api, path=V2_LIST):
    api.fail("GET", path, 500, CONVERSION_FAILED, times=None)


# ----- listerrors: what a failed LIST is blamed on -------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_only_401_and_403_get_credential_advice(status):
    why = listerrors.explain(status, 'secrets is forbidden: User "u" cannot list resource "secrets"', SECRETS, "shop")
    assert why.credentials and why.cause == listerrors.CREDENTIALS
    assert why.fix == "the credentials need list on secrets in namespace shop"
    across = listerrors.explain(status, "forbidden", SECRETS)
    assert across.fix == "the credentials need list on secrets across all namespaces"
    assert listerrors.explain(status, "forbidden", NODES).fix == "the credentials need list on nodes"
    assert listerrors.explain(status, "forbidden", WIDGETS).fix.endswith("list on widgets.example.com across all "
                                                                         "namespaces")


def test_a_conversion_webhook_failure_names_the_webhook_and_its_service():
    why = listerrors.explain(500, CONVERSION_FAILED, WIDGETS, "shop")
    assert why.cause == listerrors.CONVERSION_WEBHOOK and not why.credentials
    assert why.service == "infra/widget-convert"
    assert why.what == ("the conversion webhook of CustomResourceDefinition widgets.example.com failed "
                        "(service infra/widget-convert)")
    assert "credentials are not the problem" in why.fix and "conversion strategy back to None" in why.fix


@pytest.mark.parametrize("message, service", [
    ('Internal error occurred: failed calling webhook "w.example.com": Post "https://10.0.0.7:9443/x": EOF',
     "10.0.0.7:9443"),
    ('calling webhook: service "hooks" not found', "hooks"),
    ("webhook said no", None),
])
def test_another_webhook_is_named_with_what_the_message_says_it_tried(message, service):
    why = listerrors.explain(500, message, SECRETS)
    assert why.cause == listerrors.WEBHOOK and why.service == service
    assert why.what == "a webhook failed" + (f" (service {service})" if service else "")


@pytest.mark.parametrize("status, message, cause, words", [
    (429, "storage is (re)initializing", listerrors.STORAGE, "still (re)initializing"),
    (503, "the server is currently unable to handle the request", listerrors.UNAVAILABLE,
     "the API service that serves example.com/v2 is unavailable"),
    (404, "the server could not find the requested resource", listerrors.NOT_SERVED, "does not serve it"),
    (500, "etcdserver: request timed out", listerrors.SERVER, "the API server failed (HTTP 500)"),
    (None, "", listerrors.SERVER, "the API server failed"),
])
def test_other_failures_are_named_as_what_they_are(status, message, cause, words):
    why = listerrors.explain(status, message, WIDGETS)
    assert why.cause == cause and not why.credentials
    assert words in why.what
    assert "credentials" not in why.fix


def test_the_503_fix_names_the_apiservice():
    assert "kubectl get apiservice v2.example.com" in listerrors.explain(503, "", WIDGETS).fix
    assert "kubectl get apiservice v1.)" in listerrors.explain(503, "", SECRETS).fix


# ----- the engine's LISTs: credential advice only for 401/403 ---------------------------------------------


@pytest.mark.parametrize("status, message, expected_message, expected_fix", [
    (403, 'widgets.example.com is forbidden: User "u" cannot list resource "widgets"',
     'listing Widget.example.com objects in namespace shop failed: widgets.example.com is forbidden',
     "the credentials need list on every kind the set records; nothing was changed"),
    (500, CONVERSION_FAILED,
     "listing Widget.example.com objects in namespace shop failed: the conversion webhook of "
     "CustomResourceDefinition widgets.example.com failed (service infra/widget-convert): conversion webhook",
     "make the conversion webhook (service infra/widget-convert) answer again"),
    (429, "storage is (re)initializing",
     "listing Widget.example.com objects in namespace shop failed: the API server's storage for it is not ready",
     "run again in a minute, once the API server has finished starting; nothing was changed"),
    (503, "service unavailable",
     "listing Widget.example.com objects in namespace shop failed: the API service that serves example.com/v2 is "
     "unavailable", "check the APIService v2.example.com"),
])
def test_a_failed_list_of_the_recorded_scope_is_blamed_on_what_failed(api, status, message, expected_message,
                                                                      expected_fix):
    deployed_with_widgets(api)
    for path in (V2_LIST, V1_LIST):  # every version fails: the first failure is reported
        api.fail("GET", path, status, message, times=None)
    report, error = run(api, "uninstall")
    assert error is not None
    assert error.message.startswith(expected_message), error.message
    assert error.fix.startswith(expected_fix), error.fix
    assert ("credentials need" in error.fix) == (status == 403)
    assert api.writes() == []


# ----- the engine: a recorded kind listed at another version -----------------------------------------------


def test_uninstall_lists_at_the_storage_version_when_the_preferred_one_fails_and_deletes_there(api):
    deployed_with_widgets(api)
    conversion_down(api)
    report, error = run(api, "uninstall")
    assert error is None, error
    assert actions(report) == {"Widget shop/w1": "pruned", "Widget shop/w2": "pruned", "ConfigMap shop/a": "pruned"}
    assert api.names("example.com/v1", "Widget") == []
    # The CRD is read once for its storage version; the deletes go to the version that listed them.
    assert len(api.sent("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")) == 1
    deletes = [r.path for r in api.writes() if "/widgets/" in r.path]
    assert sorted(deletes) == [f"{V1_LIST}/w1", f"{V1_LIST}/w2"]
    assert report.warnings == [
        "Widget.example.com: listing at example.com/v2 failed (the conversion webhook of CustomResourceDefinition "
        "widgets.example.com failed (service infra/widget-convert)); listed at example.com/v1 (the storage version "
        "of its CustomResourceDefinition) instead"]


def test_apply_prunes_a_kind_that_left_the_set_at_a_version_that_works(api):
    deployed_with_widgets(api)
    conversion_down(api)
    report, error = run(api, "apply", load(cm("a")), max_prune_percent=100)
    assert error is None, error
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "Widget shop/w1": "pruned", "Widget shop/w2": "pruned"}
    assert any("listed at example.com/v1" in w for w in report.warnings)


def test_desired_kinds_keep_the_manifests_version(api):
    deployed_with_widgets(api)
    api.fail("GET", V1_LIST, 500, CONVERSION_FAILED, times=None)
    report, error = run(api, "apply", load(cm("a"), widget("w1"), widget("w2")))
    assert error is not None and "conversion webhook" in error.message
    assert not api.sent("GET", V2_LIST)  # no fallback for what the manifests name


def test_disband_lists_at_another_version_too(api):
    deployed_with_widgets(api)
    conversion_down(api)
    report, error = run(api, "disband")
    assert error is None, error
    assert actions(report)["Widget shop/w1"] == "disbanded"


def test_a_crd_that_cannot_be_read_leaves_discoverys_order():
    class Client:
        def get(self, res, name, namespace=None):
            raise ApiError("forbidden", status=403)

    v3 = Resource("example.com", "v3", "Widget", "widgets", True, frozenset({"list"}))
    v1 = Resource("example.com", "v1", "Widget", "widgets", True, frozenset({"get"}))  # not listable
    v2 = Resource("example.com", "v2beta1", "Widget", "widgets", True, frozenset({"list"}))
    fallback = versions.VersionFallback(Client(), Discovery([v3, v1, v2]))
    assert fallback.storage_version(v3) is None
    assert fallback.alternatives(v3) == [v2]
    assert versions.VersionFallback(Client(), Discovery([SECRETS])).storage_version(SECRETS) is None


@pytest.mark.parametrize("status, helps", [(500, True), (503, True), (403, False), (401, False), (404, False),
                                           (429, False)])
def test_only_a_server_failure_tries_another_version(status, helps):
    assert versions.may_help(ApiError("x", status=status)) is helps


def test_a_conversion_webhook_behind_a_429_tries_another_version():
    # What kube-apiserver 1.34 answers while the watch cache of the version cannot fill.
    storage = ("storage is (re)initializing: failed to list example.com/v2, Kind=Widget: " + CONVERSION_FAILED)
    assert versions.may_help(ApiError(storage, status=429))
    why = listerrors.explain(429, storage, WIDGETS)
    assert why.cause == listerrors.CONVERSION_WEBHOOK and why.service == "infra/widget-convert"


# ----- custom resources that go with their CRD ---------------------------------------------------------------


def test_uninstall_leaves_unlistable_custom_resources_to_their_crd_when_it_deletes_the_crd(api):
    report, error = run(api, "apply", load(crd(), cm("a"), widget("w1")))
    assert error is None, error
    for path in (V2_LIST, V1_LIST):
        conversion_down(api, path)
    report, error = run(api, "uninstall", allow_prune_kinds=frozenset({"CustomResourceDefinition"}))
    assert error is None, error
    assert actions(report) == {"ConfigMap shop/a": "pruned",
                               "CustomResourceDefinition widgets.example.com": "pruned"}
    assert ("Widget.example.com could not be listed (the conversion webhook of CustomResourceDefinition "
            "widgets.example.com failed (service infra/widget-convert)); its objects go with "
            "CustomResourceDefinition widgets.example.com, which this uninstall deletes") in report.warnings
    assert any("); its objects go with CustomResourceDefinition" in w for w in report.warnings)


def test_uninstall_refuses_when_the_crd_of_unlistable_custom_resources_is_kept(api):
    kept = crd()
    kept["metadata"]["annotations"] = {"kapp.k14s.io/delete-strategy": "orphan"}
    report, error = run(api, "apply", load(kept, cm("a"), widget("w1")))
    assert error is None, error
    for path in (V2_LIST, V1_LIST):
        conversion_down(api, path)
    api.requests.clear()
    report, error = run(api, "uninstall", allow_prune_kinds=frozenset({"CustomResourceDefinition"}))
    assert isinstance(error, ApplySetError) and "the objects of CustomResourceDefinition widgets.example.com could " \
        "not be listed, and this run does not delete the CRD" in error.message
    assert api.writes() == []


def test_disband_never_leaves_members_unlisted(api):
    report, error = run(api, "apply", load(crd(), cm("a"), widget("w1")))
    assert error is None, error
    for path in (V2_LIST, V1_LIST):
        conversion_down(api, path)
    api.requests.clear()
    report, error = run(api, "disband")
    assert error is not None and "conversion webhook" in error.message
    assert api.writes() == []


# ----- check mode with read-only credentials ---------------------------------------------------------------------


def test_a_refused_dry_run_says_check_mode_needs_the_write_verb(api):
    message = ('configmaps "a" is forbidden: User "system:serviceaccount:shop:viewer" cannot patch resource '
               '"configmaps" in API group "" in the namespace "shop"')
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 403, message, reason="Forbidden", times=None)
    report, error = run(api, "apply", load(cm("a")), dry_run=True)
    assert error is not None
    failed = next(o for o in report.objects if o.name == "a")
    assert failed.action == "failed"
    assert failed.reason == ("check mode sends server-side dry runs, which the API server authorizes as the writes "
                             "themselves: the credentials need patch on configmaps in namespace shop even to preview "
                             "(read-only roles such as view have no write verbs): " + message)
    assert failed.reason.startswith("check mode sends server-side dry runs, which the API server authorizes as the writes themselves: the credentials need")  # noqa: E501
    assert "even to preview (read-only roles such as view have no write verbs)" in failed.reason
    # A real run's refusal is the server's message alone.
    report, error = run(api, "apply", load(cm("a")))
    assert next(o for o in report.objects if o.name == "a").reason == message


def test_the_messages_docs_troubleshooting_quotes(api):
    # One literal per fragment of the quotes in docs/troubleshooting.md (test_connection_errors_unit checks).
    deployed_with_widgets(api)
    for path in (V2_LIST, V1_LIST):
        conversion_down(api, path)
    message = run(api, "uninstall")[1].message
    assert "objects in namespace shop failed: the conversion webhook of CustomResourceDefinition" in message
    assert "failed (service infra/widget-convert): " in message
    api._failures.clear()
    conversion_down(api)
    report, error = run(api, "uninstall")
    assert "(the storage version of its CustomResourceDefinition) instead" in report.warnings[0]
    why = listerrors.explain(429, "storage is (re)initializing", WIDGETS)
    assert why.what == "the API server's storage for it is not ready (still (re)initializing)"
    assert "failed: the API server's storage for it is not ready (still (re)initializing)" in (
        "listing Widget.example.com objects in namespace shop failed: " + why.what)
