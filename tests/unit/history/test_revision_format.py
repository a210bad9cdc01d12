"""The release history's format and rules (history.py, rollback.py, provenance.py), without a server."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from applyset.history import revisions as history, provenance
from applyset.steps import rollback
from applyset import routes
from applyset.errors import InputError
from applyset.run.options import Options
from applyset.run.runner import names

PARENT = SimpleNamespace(id="applyset-abc-v1", name="shop", namespace="shop", uid="u-1",
                         resource=SimpleNamespace(api_version="v1", group="", kind="Secret"))


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
    apply_names = names(list(routes.for_apply(opts).steps))
    assert apply_names[-6:] == ["prune", "post-apply-hooks", "on-failure-hooks", "record-revision", "release",
                                "trim-history"]
    waited = names(list(routes.for_apply(Options.from_settings(wait=True, history=history.Settings())).steps))
    assert waited[-5:] == ["on-failure-hooks", "record-revision", "release", "trim-history", "wait-gone"]
    assert names(list(routes.for_update_only(opts).steps))[-1] == "record-revision"
    assert names(list(routes.for_uninstall(opts).steps))[-1] == "delete-history"
    assert "record-revision" not in names(list(routes.for_preview(Options(dry_run=True, history=history.Settings()))
                                                .steps))
    assert names(list(routes.reading(routes.APPLY, Options(history=history.Settings(rollback_to=2)))))[:2] == [
        "read-parent", "load-revision"]
    assert "record-revision" not in names(list(routes.for_apply(Options(history=history.Settings(max=0))).steps))


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
        rollback.refuse_data_loss(ctx.client, ctx.discovery, ctx.parent, 1, [crd, old])
    assert "Widget w: shop.example/v1alpha1 is no longer served" in raised.value.message
    assert "stored as v2" in raised.value.message
    promotion = {"apiVersion": "shop.example/v1", "kind": "Promotion", "metadata": {"name": "p"}}
    ctx.client = SimpleNamespace(get=lambda res, name: {"status": {"storedVersions": ["v1"]}})
    rollback.refuse_data_loss(ctx.client, ctx.discovery, ctx.parent, 1, [crd, promotion])  # served by the revision's own CRD


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


def test_the_set_s_field_managers_come_from_summaries_and_older_revisions_contents():
    revs = [history.Revision(1, {"result": "deployed"}, "s1"),  # written before summaries named the manager
            history.Revision(2, {"result": "deployed", "field_manager": "team-b"}, "s2"),
            history.Revision(3, {"result": "deployed", "field_manager": "team-b"}, "s3")]
    read = []

    def read_revision(number):
        read.append(number)
        return {"options": {"field_manager": "team-a"}}

    assert history.field_managers(revs, read_revision) == {"team-a", "team-b"}
    assert read == [1]  # only the revision whose summary does not say


def test_a_summary_names_the_runs_field_manager():
    content = {"time": "t", "result": "deployed", "rollback_of": None, "provenance": {}, "members": [],
               "options": {"field_manager": "team-a"}}
    assert history._summary(content, history.encode(content))["field_manager"] == "team-a"


# A summary with every key history.summary_of checks (else the listing marks the revision damaged).
WHOLE_SUMMARY = {"time": "t", "result": "deployed", "members": 1, "chunks": 1, "digest": "sha256:" + "0" * 64}


def test_a_rollback_keeps_the_tasks_options_and_learns_the_sets_field_managers(monkeypatch):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}}
    content = {"set": PARENT.id, "options": {"field_manager": "team-a", "force_conflicts": False,
                                             "field_validation": "Warn", "recreate_on_immutable": ["Job"]},
               "members": [{"source": "settings.yaml", "body": body}]}
    metadata = [{"metadata": {"name": "s1", "labels": {history.LABEL_REVISION: "1"}, "annotations": {
        history.ANNOTATION_SUMMARY: json.dumps({**WHOLE_SUMMARY, "field_manager": "team-a"})}}},
        {"metadata": {"name": "s2", "labels": {history.LABEL_REVISION: "2"}, "annotations": {
            history.ANNOTATION_SUMMARY: json.dumps({**WHOLE_SUMMARY, "field_manager": "team-b"})}}}]
    monkeypatch.setattr(history, "list_secrets", lambda *args: metadata)
    monkeypatch.setattr(history, "read", lambda client, res, parent, namespace, number: content)
    opts = Options(field_manager="rollback", force_conflicts=True, history=history.Settings(rollback_to=1))
    ctx = SimpleNamespace(opts=opts, client=None, record=None, discovery=Discovery({("", "v1", "ConfigMap")}),
                          parent=SimpleNamespace(**vars(PARENT), exists=True, revision=2, ref="secrets/shop"))
    rollback.load_revision(ctx)
    assert ctx.opts is opts  # force_conflicts, field_manager, field_validation: the task's
    assert ctx.set_managers == {"team-a", "team-b"} and ctx.rollback_of == 1
    assert [m.obj["data"] for m in ctx.rendered] == [{"a": "1"}]


def _stored(content: dict, monkeypatch) -> dict:
    """The Secrets ``history.write`` would make of ``content`` (cut in 3 chunks), by name."""
    monkeypatch.setattr(history, "CHUNK_BYTES", 40)
    chunks = history.encode(content)[:3]
    chunks[-1] += b"".join(history.encode(content)[3:])
    summary = history._summary(content, chunks)
    made = {}
    for index, data in enumerate(chunks):
        name = history.secret_name(PARENT, 2, index, summary["digest"][7:])
        made[name] = history._secret(PARENT, "shop", name, 2, index, data, summary if index == 0 else None)
    return made


REVISION = {"format": 1, "set": PARENT.id, "revision": 2, "time": "t", "result": "deployed", "rollback_of": None,
            "provenance": {}, "options": {}, "members": [{"source": "a.yaml", "body": {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v" * 30}}}]}


def _drop_chunk(made, first, chunk):
    del made[chunk]


def _chunk_without_value(made, first, chunk):
    made[chunk]["data"] = {}


def _chunk_not_base64(made, first, chunk):
    made[chunk]["data"] = {history.DATA_KEY: "%%%"}


def _summary_not_an_object(made, first, chunk):
    made[first]["metadata"]["annotations"][history.ANNOTATION_SUMMARY] = "[1]"


def _summary_without_chunks(made, first, chunk):
    summary = json.loads(made[first]["metadata"]["annotations"][history.ANNOTATION_SUMMARY])
    del summary["chunks"]
    made[first]["metadata"]["annotations"][history.ANNOTATION_SUMMARY] = json.dumps(summary)


def _chunks_swapped(made, first, chunk):
    made[first]["data"], made[chunk]["data"] = made[chunk]["data"], made[first]["data"]


# damage -> (what it does to the stored revision: its first Secret's name, its chunk 1's), what the error says
UNIT_DAMAGES = {
    "chunk missing": (_drop_chunk, "its chunk 1 is missing"),
    "chunk without its value": (_chunk_without_value, "its chunk 1 has no data key revision"),
    "chunk not base64": (_chunk_not_base64, "its chunk 1 is not base64"),
    "summary not an object": (_summary_not_an_object, "is not a JSON object"),
    "summary without its chunk count": (_summary_without_chunks, "has no chunks of type int"),
    "chunks out of order": (_chunks_swapped, "do not match the digest"),
}


@pytest.mark.parametrize("kind", sorted(UNIT_DAMAGES))
def test_every_damage_of_a_revision_is_one_error_naming_it_each_secret_and_the_fix(kind, monkeypatch):
    made = _stored(REVISION, monkeypatch)
    first, chunk = sorted(made, key=len)[:2]
    assert history.decode_revision("ApplySet Secret shop/shop", PARENT.id, 2, made[first], made.get) == REVISION
    UNIT_DAMAGES[kind][0](made, first, chunk)
    with pytest.raises(history.DamagedRevision) as raised:
        history.decode_revision("ApplySet Secret shop/shop", PARENT.id, 2, made[first], made.get)
    err = raised.value
    assert err.number == 2 and UNIT_DAMAGES[kind][1] in err.reason
    assert str(err).startswith("revision 2 of ApplySet Secret shop/shop cannot be read: ")  # its subject once
    assert f"shop/{first}" in err.message and "applyset_verify with fix: true" in err.fix
    if "summary" not in kind:  # the summary names the chunks: without it, only the first is known
        assert f"shop/{chunk}" in err.message and err.secrets[0] == f"shop/{first}"


def test_a_revision_of_another_set_or_without_a_members_body_cannot_be_read(monkeypatch):
    for content, says in (({**REVISION, "set": "applyset-other-v1"}, "records another set"),
                          ({**REVISION, "members": [{"source": "a.yaml"}]}, "member 0 without a source and a body"),
                          ({**REVISION, "members": [{"source": "a", "body": {"kind": "X"}}]}, "without apiVersion")):
        made = _stored(content, monkeypatch)
        first = min(made, key=len)
        with pytest.raises(history.DamagedRevision, match=says):
            history.decode_revision("ApplySet Secret shop/shop", PARENT.id, 2, made[first], made.get)


def test_a_revision_whose_summary_or_chunk_cannot_be_read_is_listed_damaged(monkeypatch):
    made = _stored(REVISION, monkeypatch)
    first, chunk = sorted(made, key=len)[:2]
    assert [r.damage for r in history.revisions(list(made.values()))] == [None]
    del made[chunk]
    (found,) = history.revisions(list(made.values()))
    assert found.damage == f"its chunk Secret {chunk} is missing" and found.stored_result == history.DAMAGED
    made[first]["metadata"]["annotations"] = {}
    garbled = history.Revision(1, {}, "s1", damage="its summary annotation is not JSON")
    (found,) = history.revisions([made[first]])
    assert found.number == 2 and "is missing" in found.damage
    assert history.results([garbled, found], 2) == {1: "damaged", 2: "damaged"}
    assert found.to_dict("damaged")["damage"] == found.damage
    # A damaged revision may be the last good one: it is chosen, and reading it tells the damage.
    later = history.Revision(3, {}, "s3", damage="its summary annotation is missing")
    assert history.last_good([*listed((1, "deployed", None)), later], None) is later
    assert history.last_good([*listed((1, "deployed", None)), later], 3).number == 1


def test_a_run_without_history_forgets_the_pointer_only_when_there_is_one():
    with_pointer, without = SimpleNamespace(revision=3), SimpleNamespace(revision=None)
    assert history.forgets(with_pointer, history.Settings(max=0)) and history.forgets(with_pointer, None)
    assert not history.forgets(with_pointer, history.Settings(max=1)) and not history.forgets(without, None)


class _ListingClient:
    """Answers ``list`` with ``items`` (the history Secrets, values included) and records deletes."""

    def __init__(self, items):
        self.items, self.deleted = items, []

    def list(self, res, namespace=None, *, label_selector=None, metadata_only=True, page_size=None):
        assert not metadata_only, "verify reads every revision whole"
        return list(self.items)

    def delete(self, res, name, namespace, *, uid=None, propagation_policy="Background", dry_run=False):
        self.deleted.append(name)


def test_verify_reports_a_damaged_current_revision_and_its_fix_leaves_the_pointer_reported(monkeypatch):
    from applyset.verify import history_check as fsck_history
    made = _stored(REVISION, monkeypatch)
    first = min(made, key=len)
    made[first]["metadata"]["annotations"][history.ANNOTATION_SUMMARY] = "{"
    set_info = SimpleNamespace(is_ours=True, namespace="shop", revision=2, expected_id=PARENT.id, uid="u-1",
                               display="Secret shop/shop", name="shop", resource=PARENT.resource,
                               parent_ref=lambda: {"name": "shop"})
    client = _ListingClient(made.values())
    problems, doomed = fsck_history.check(client, SimpleNamespace(for_group_kind=lambda gk: "secrets"), set_info)
    assert [p.code for p in problems] == [fsck_history.HISTORY_DAMAGED_REVISION]
    assert f"shop/{first}" in problems[0].message and "current revision" in problems[0].fix
    assert sorted(s["metadata"]["name"] for s in doomed) == sorted(made)  # the chunks go too
    fsck_history.repair(client, "secrets", set_info, doomed, problems, dry_run=False)
    assert sorted(client.deleted) == sorted(made) and problems[0].fixed
    assert [p.code for p in problems if not p.fixed] == [fsck_history.HISTORY_POINTER_MISSING]
