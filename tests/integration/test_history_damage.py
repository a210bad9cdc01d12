"""A damaged release history, and a history given up (issue 36, items 3 and 4).

Each kind of damage a revision's Secrets can take (written with the test's own client) makes a
rollback fail before any write with one error that names the revision, the set, each Secret
involved and what is wrong; applyset_verify reports it and ``fix: true`` deletes what cannot be
read; applyset_info lists it as damaged; ``on_failure: rollback`` onto it reports both why the
release failed and why it could not be rolled back. A release with ``history_max: 0`` after one
with a history leaves no pointer to a revision that is not what it deployed.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import sys
from pathlib import Path

import pytest
import yaml
from ansible_cli import ansible_env, run_playbook

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))
from applyset import engine, spec  # noqa: E402
from applyset.run.options import Options
from applyset.history import revisions as history  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402
from applyset.inputs import manifests  # noqa: E402
from applyset.errors import ApplySetError, InputError  # noqa: E402

SUMMARY = history.ANNOTATION_SUMMARY
PARENT = "shop"


def cm(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def run_engine(cluster, namespace, definition=(), **settings):
    """One apply in this process (``settings``: history.Settings keywords; ``dry_run`` apart);
    returns the engine (its ``report``, its ``recorded_revision``)."""
    dry_run = settings.pop("dry_run", False)
    admin = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    opts = Options(dry_run=dry_run, history=history.Settings(**settings))
    run = engine.Engine(admin, PARENT, namespace, opts)
    run.apply(manifests.load_definition(list(definition)))
    return run


def history_secrets(kube, namespace):
    items = kube.get(f"/api/v1/namespaces/{namespace}/secrets")["items"]
    return {s["metadata"]["name"]: s for s in items if history.LABEL_HISTORY_OF in (s["metadata"].get("labels") or {})}


def first_secret(kube, namespace, number):
    (found,) = [s for s in history_secrets(kube, namespace).values()
                if s["metadata"]["labels"][history.LABEL_REVISION] == str(number)]
    return found


def parent_of(kube, namespace):
    return kube.get(f"/api/v1/namespaces/{namespace}/secrets/{PARENT}")


def _with_data(secret, raw: bytes, *, digest=True):
    """``secret`` holding ``raw``; with ``digest``, its summary records raw's digest (so that the
    damage is found past the digest check)."""
    secret["data"] = {history.DATA_KEY: base64.b64encode(raw).decode()}
    if digest:
        summary = json.loads(secret["metadata"]["annotations"][SUMMARY])
        summary["digest"] = "sha256:" + hashlib.sha256(raw).hexdigest()
        secret["metadata"]["annotations"][SUMMARY] = json.dumps(summary)
    return secret


def _content(secret):
    return json.loads(gzip.decompress(base64.b64decode(secret["data"][history.DATA_KEY])))


def _summary_edit(secret, **changes):
    summary = json.loads(secret["metadata"]["annotations"][SUMMARY])
    secret["metadata"]["annotations"][SUMMARY] = json.dumps({**summary, **changes})
    return secret


def _drop_summary(secret):
    del secret["metadata"]["annotations"][SUMMARY]
    return secret


def _garble_summary(secret):
    secret["metadata"]["annotations"][SUMMARY] = '{"time": "2026-'
    return secret


def _without_members(secret):
    content = {k: v for k, v in _content(secret).items() if k != "members"}
    return _with_data(secret, gzip.compress(json.dumps(content).encode()))


def _members_not_a_list(secret):
    return _with_data(secret, gzip.compress(json.dumps({**_content(secret), "members": {"a": 1}}).encode()))


# kind of damage -> (what it does to the revision's first Secret, words the error must say)
DAMAGES = {
    "bad gzip": (lambda s: _with_data(s, b"this is not gzip at all"), "is not gzip"),
    "truncated gzip": (lambda s: _with_data(s, base64.b64decode(s["data"][history.DATA_KEY])[:30]), "truncated"),
    "bad JSON": (lambda s: _with_data(s, gzip.compress(b'{"format": 1, "members": [')), "is not JSON"),
    "missing key": (_without_members, "has no members"),
    "wrong type": (_members_not_a_list, "has no members of type list"),
    "digest mismatch": (lambda s: _with_data(s, gzip.compress(b"{}"), digest=False),
                        "do not match the digest"),
    "garbled summary": (_garble_summary, f"summary annotation {SUMMARY} is not JSON"),
    "missing summary": (_drop_summary, f"summary annotation {SUMMARY} is missing"),
    "missing chunk": (lambda s: _summary_edit(s, chunks=2), "chunk 1 is missing"),
}


def damage(kube, namespace, number, kind):
    """Revision ``number``'s first Secret replaced by its damaged form; returns its name."""
    secret = first_secret(kube, namespace, number)
    broken = DAMAGES[kind][0](secret)
    name = secret["metadata"]["name"]
    status, body, _ = kube.request("PUT", f"/api/v1/namespaces/{namespace}/secrets/{name}", broken)
    assert status == 200, body
    return name


def two_releases(cluster, namespace):
    run_engine(cluster, namespace, [cm("settings", color="blue")])
    return run_engine(cluster, namespace, [cm("settings", color="green"), cm("extra", new="yes")])


@pytest.mark.parametrize("kind", sorted(DAMAGES))
def test_a_damaged_revision_is_one_error_naming_it_and_its_secrets_and_nothing_is_written(cluster, kube, namespace,
                                                                                          kind):
    second = two_releases(cluster, namespace)
    name = damage(kube, namespace, 1, kind)
    kind_of_parent = second.report.applyset["parent"]["kind"]
    before = {n: s["metadata"]["resourceVersion"] for n, s in history_secrets(kube, namespace).items()}
    parent_version = parent_of(kube, namespace)["metadata"]["resourceVersion"]
    for dry_run in (True, False):
        with pytest.raises(ApplySetError) as raised:
            run_engine(cluster, namespace, rollback_to=1, dry_run=dry_run)
        text = str(raised.value)
        assert f"revision 1 of ApplySet {kind_of_parent} {namespace}/{PARENT}" in text, text
        assert f"{namespace}/{name}" in text and DAMAGES[kind][1] in text, text
        assert "applyset_verify" in text and "another revision" in text, text
        if kind == "missing chunk":
            assert f"{namespace}/{name}." in text, text  # the missing chunk's Secret is named too
    after = {n: s["metadata"]["resourceVersion"] for n, s in history_secrets(kube, namespace).items()}
    assert after == before and parent_of(kube, namespace)["metadata"]["resourceVersion"] == parent_version
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/settings")["data"] == {"color": "green"}
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/extra") is not None


def _play(namespace, tasks, out_file):
    registered = [t["register"] for t in tasks]
    results = "{" + ", ".join(f"'{r}': {r}" for r in registered) + "}"
    return [{"hosts": "localhost", "gather_facts": False, "tasks": tasks + [
        {"copy": {"content": "{{ " + results + " | to_nice_json }}", "dest": str(out_file), "mode": "0644"}}]}]


def _run_play(cluster, tmp_path, namespace, tasks):
    book, out = tmp_path / "play.yml", tmp_path / "play.json"
    book.write_text(yaml.safe_dump(_play(namespace, tasks, out), sort_keys=False))
    proc = run_playbook(cluster, book, env=ansible_env(cluster))
    assert out.exists(), proc.stdout + proc.stderr
    return json.loads(out.read_text())


def test_verify_reports_damaged_revisions_info_lists_them_and_fix_deletes_them(cluster, kube, namespace, tmp_path):
    for color in ("blue", "green", "red"):
        run_engine(cluster, namespace, [cm("settings", color=color)])
    old = damage(kube, namespace, 1, "bad gzip")
    current = damage(kube, namespace, 3, "garbled summary")
    common = {"parent": PARENT, "namespace": namespace}
    results = _run_play(cluster, tmp_path, namespace, [
        {"applyset.kubernetes.applyset_info": {**common, "revisions": True}, "register": "info"},
        {"applyset.kubernetes.applyset_verify": common, "register": "check", "ignore_errors": True},
        {"applyset.kubernetes.applyset_verify": {**common, "fix": True}, "register": "fix", "ignore_errors": True},
    ])
    listed = {r["revision"]: r for r in results["info"]["applysets"][0]["revisions"]}
    assert sorted(listed) == [1, 2, 3], listed
    assert listed[3]["result"] == "damaged" and "summary annotation" in listed[3]["damage"], listed[3]
    assert listed[2]["result"] == "superseded" and listed[2]["damage"] is None

    damaged = [p for p in results["check"]["problems"] if p["code"] == "history_damaged_revision"]
    assert len(damaged) == 2 and not results["check"]["ok"] and not results["check"]["changed"], results["check"]
    by_revision = {("revision 1 " in p["message"]): p for p in damaged}
    assert f"{namespace}/{old}" in by_revision[True]["message"] and "not gzip" in by_revision[True]["message"]
    assert f"{namespace}/{current}" in by_revision[False]["message"] and "current revision" in by_revision[False]["fix"]
    assert not any(p["fixed"] for p in damaged)

    fixed = results["fix"]
    assert fixed["changed"] and all(p["fixed"] for p in fixed["problems"] if p["code"] == "history_damaged_revision")
    pointer = [p for p in fixed["problems"] if p["code"] == "history_pointer_missing"]
    assert pointer and not pointer[0]["fixed"], fixed["problems"]
    kept = history_secrets(kube, namespace)
    assert old not in kept and current not in kept and len(kept) == 1, sorted(kept)
    # The pointer still names 3: the next release is 4, not a second 3 or a second 1.
    assert parent_of(kube, namespace)["metadata"]["annotations"][spec.ANNOTATION_REVISION] == "3"
    assert run_engine(cluster, namespace, [cm("settings", color="white")]).recorded_revision == 4


def test_a_failed_rollback_onto_a_damaged_revision_tells_both_failures(cluster, kube, namespace):
    run_engine(cluster, namespace, [cm("settings", color="blue")])
    name = damage(kube, namespace, 1, "bad gzip")
    stuck = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                      "template": {"metadata": {"labels": {"app": "web"}},
                                   "spec": {"nodeSelector": {"applyset-test/no-such-node": "true"},
                                            "containers": [{"name": "web", "image": "registry.invalid/web:2"}]}}}}
    admin = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    opts = Options.from_settings(wait=True, wait_timeout=3,
                          history=history.Settings(on_failure="rollback", rollback_timeout=30))
    with pytest.raises(ApplySetError) as raised:
        engine.apply_or_roll_back(lambda o: engine.Engine(admin, PARENT, namespace, o), opts,
                                    manifests.load_definition([cm("settings", color="red"), stuck]))
    text = str(raised.value)
    assert "the release failed (" in text and "Deployment" in text and "web" in text, text
    assert "so did the rollback to revision 1" in text and "not gzip" in text and f"{namespace}/{name}" in text, text
    assert not isinstance(raised.value, engine.RolledBack)


# how the release with history_max: 0 changes the set -> its definition
NO_HISTORY_RELEASES = {
    "an update in place": [cm("settings", color="green")],
    "a member added": [cm("settings", color="blue"), cm("extra", new="yes")],
}


@pytest.mark.parametrize("change", sorted(NO_HISTORY_RELEASES))
def test_a_release_without_history_leaves_no_pointer_to_an_older_revision(cluster, kube, namespace, change):
    assert run_engine(cluster, namespace, [cm("settings", color="blue")]).recorded_revision == 1
    run_engine(cluster, namespace, NO_HISTORY_RELEASES[change], max=0)
    annotations = parent_of(kube, namespace)["metadata"]["annotations"]
    assert spec.ANNOTATION_REVISION not in annotations and spec.ANNOTATION_REVISION_DIGEST not in annotations
    assert history_secrets(kube, namespace) == {}  # so applyset_info lists no revision as deployed
    with pytest.raises(InputError) as raised:
        run_engine(cluster, namespace, rollback_to=1, dry_run=True)
    assert "no history to roll back to" in str(raised.value)
    # History kept again: numbered from 1, nothing left over to collide with.
    assert run_engine(cluster, namespace, [cm("settings", color="white")]).recorded_revision == 1
