"""The release history's format and rules (history.py, rollback.py, provenance.py), without a server."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from applyset import history, provenance, rollback, steps
from applyset.errors import InputError
from applyset.options import Options
from applyset.runner import names

PARENT = SimpleNamespace(id="applyset-abc-v1", name="shop", namespace="shop", uid="u-1",
                         resource=SimpleNamespace(api_version="v1", kind="Secret"))


def test_a_revision_round_trips_through_gzip_and_is_cut_under_the_secret_limit():
    content = {"members": [{"body": {"data": {"k": "x" * 100}}}], "blob": __import__("os").urandom(900_000).hex()}
    chunks = history.encode(content)
    assert len(chunks) > 1 and all(len(c) <= history.CHUNK_BYTES for c in chunks)
    assert history.decode(chunks) == content
    assert history.encode(content) == chunks  # the same content, the same bytes (no gzip time)


def test_secret_names_and_labels_never_make_a_member():
    body = history._secret(PARENT, "shop", history.secret_name(PARENT, 3), 3, 0, b"x", {"result": "deployed"})
    labels = body["metadata"]["labels"]
    assert not any(key.startswith("applyset.kubernetes.io/") for key in labels)
    assert labels[history.LABEL_HISTORY_OF] == PARENT.id and labels[history.LABEL_REVISION] == "3"
    assert body["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert history.secret_name(PARENT, 3).endswith(".v3")
    assert history.secret_name(PARENT, 3, 1, "abcdef123456") != history.secret_name(PARENT, 3, 1, "fedcba654321")


def listed(*entries):
    return [history.Revision(n, {"result": r, "rollback_of": back}, f"s{n}") for n, r, back in entries]


def test_results_deployed_superseded_failed_rolled_back():
    revs = listed((1, "deployed", None), (2, "deployed", None), (3, "failed", None), (4, "deployed", 2))
    assert history.results(revs, 4) == {1: "superseded", 2: "superseded", 3: "failed", 4: "deployed"}
    revs = listed((1, "deployed", None), (2, "deployed", None), (3, "deployed", 1))
    assert history.results(revs, 3) == {1: "superseded", 2: "rolled back", 3: "deployed"}
    assert history.last_good(listed((1, "deployed", None), (2, "failed", None)), 3).number == 1
    assert history.last_good(listed((1, "deployed", None), (2, "deployed", None)), 2).number == 1
    assert history.last_good(listed((1, "failed", None)), None) is None


def test_the_revisions_beyond_history_max_are_the_older_ones():
    items = [{"metadata": {"labels": {history.LABEL_REVISION: str(n)}}} for n in range(1, 8)]
    assert [i["metadata"]["labels"][history.LABEL_REVISION] for i in history.beyond(items, 7, 3)] == [
        "1", "2", "3", "4"]


@pytest.mark.parametrize("settings, bad", [
    (history.Settings(max=-1), "history_max"), (history.Settings(rollback_to=0), "rollback_to"),
    (history.Settings(on_failure="retry"), "on_failure"), (history.Settings(rollback_timeout=-1), "rollback_timeout"),
])
def test_bad_history_settings_are_refused_before_any_request(settings, bad):
    with pytest.raises(InputError, match=bad):
        Options(history=settings).validate()


def test_the_routes_record_before_the_release_and_trim_after_it():
    opts = Options(history=history.Settings())
    apply_names = names(list(steps.for_apply(opts).steps))
    assert apply_names[-6:] == ["prune", "post-apply-hooks", "on-failure-hooks", "record-revision", "release",
                                "trim-history"]
    waited = names(list(steps.for_apply(Options(wait=True, history=history.Settings())).steps))
    assert waited[-5:] == ["on-failure-hooks", "record-revision", "release", "trim-history", "wait-gone"]
    assert names(list(steps.for_update_only(opts).steps))[-1] == "record-revision"
    assert names(list(steps.for_uninstall(opts).steps))[-1] == "delete-history"
    assert "record-revision" not in names(list(steps.for_preview(Options(dry_run=True, history=history.Settings()))
                                                .steps))
    assert names(list(steps.reading(steps.APPLY, Options(history=history.Settings(rollback_to=2)))))[:2] == [
        "read-parent", "load-revision"]
    assert "record-revision" not in names(list(steps.for_apply(Options(history=history.Settings(max=0))).steps))


class Discovery:
    def __init__(self, served):
        self.served = served

    def for_gvk(self, group, version, kind):
        return object() if (group, version, kind) in self.served else None

    def for_group_kind(self, gk):
        return object()


def test_a_rollback_to_an_api_version_no_longer_served_is_refused():
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "promotions.shop.example"},
           "spec": {"group": "shop.example", "names": {"kind": "Promotion"}, "versions": [{"name": "v1"}]}}
    old = {"apiVersion": "shop.example/v1alpha1", "kind": "Widget", "metadata": {"name": "w"}}
    ctx = SimpleNamespace(discovery=Discovery({("apiextensions.k8s.io", "v1", "CustomResourceDefinition")}),
                          parent=SimpleNamespace(ref="secrets/shop", set_ref="ApplySet Secret shop/shop"),
                          client=SimpleNamespace(get=lambda res, name: {"status": {"storedVersions": ["v1", "v2"]}}))
    with pytest.raises(InputError) as raised:
        rollback.refuse_data_loss(ctx, 1, [crd, old])
    assert "Widget w: shop.example/v1alpha1 is no longer served" in raised.value.message
    assert "stored as v2" in raised.value.message
    promotion = {"apiVersion": "shop.example/v1", "kind": "Promotion", "metadata": {"name": "p"}}
    ctx.client = SimpleNamespace(get=lambda res, name: {"status": {"storedVersions": ["v1"]}})
    rollback.refuse_data_loss(ctx, 1, [crd, promotion])  # served by the revision's own CRD


def test_the_git_commit_is_read_from_files_without_running_git(tmp_path):
    git = tmp_path / "repo" / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text("a" * 40 + "\n")
    src = tmp_path / "repo" / "manifests"
    src.mkdir()
    assert provenance.git_commit(str(src)) == "a" * 40
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text("# pack-refs\n" + "b" * 40 + " refs/heads/main\n")
    assert provenance.git_commit(str(src / "app.yaml")) == "b" * 40
    found = provenance.gather({"awx_job_id": 7, "password": "x"}, [str(src)])
    assert found == {"collection_version": found["collection_version"], "awx_job_id": "7", "git_commit": "b" * 40}
    assert provenance.git_commit(str(tmp_path)) in (None, provenance.git_commit(str(tmp_path)))


def test_a_summary_never_holds_a_secret_value():
    content = {"time": "t", "result": "deployed", "rollback_of": None, "provenance": {}, "members": [
        {"body": {"apiVersion": "v1", "kind": "Secret", "stringData": {"password": "hunter2"}}}]}
    assert "hunter2" not in json.dumps(history._summary(content, history.encode(content)))
