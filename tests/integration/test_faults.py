"""Fault injection: no object lost, none leaked, nothing foreign touched.

A set of 56 objects over four kinds and two namespaces (state A) is changed to
state B, which creates, updates and prunes objects, or (scenario update-only) only
updates 20 of them, which a run does without the claim. That run goes through
``faultproxy`` with one fault at its k-th mutating request, for every fault kind
and (in CI) a sample of k, or every k with APPLYSET_FAULT_SWEEP=full. After the
fault, the parent's hints must still cover every object that carries our
label; a normal re-run must then converge to exactly B, and objects outside
the set must keep their uid and resourceVersion.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faultproxy import FAULTS, FaultProxy

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))
from applyset import engine, spec  # noqa: E402
from applyset.run.options import Options
from applyset.history import revisions as history  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402
from applyset.inputs import manifests  # noqa: E402

DRIVER = Path(__file__).resolve().parent / "engine_driver.py"
PLURALS = {"ConfigMap": "configmaps", "Secret": "secrets", "Service": "services", "ServiceAccount": "serviceaccounts"}
PARENT = "faulty"


def obj(kind, name, namespace, version="a"):
    meta = {"name": name, "namespace": namespace}
    if kind == "ConfigMap":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta, "data": {"version": version}}
    if kind == "Secret":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta, "stringData": {"version": version}}
    if kind == "Service":
        return {"apiVersion": "v1", "kind": kind, "metadata": dict(meta, annotations={"version": version}),
                "spec": {"ports": [{"port": 80}], "selector": {"app": name}}}
    return {"apiVersion": "v1", "kind": kind, "metadata": dict(meta, annotations={"version": version})}


def states(ns1, ns2):
    """State A (56 objects) and state B: 14 pruned, 14 updated, 12 created."""
    a, b = [], []
    for i in range(14):
        for kind in PLURALS:
            namespace = ns1 if i % 2 else ns2
            name = f"{kind.lower()}-{i}"
            a.append(obj(kind, name, namespace))
            if i < 5:  # updated
                b.append(obj(kind, name, namespace, version="b"))
            elif i < 10:  # unchanged
                b.append(obj(kind, name, namespace))
            # i >= 10: pruned
    for i in range(3):
        for kind in PLURALS:
            b.append(obj(kind, f"{kind.lower()}-new-{i}", ns1 if i % 2 else ns2, version="b"))
    return a, b


def update_only_states(ns1, ns2):
    """State A, and A with 14 objects updated and nothing created or pruned: a run that takes no
    claim (each update conditional on the listed object; without_claim.py)."""
    a, _b = states(ns1, ns2)
    updated = [obj(o["kind"], o["metadata"]["name"], o["metadata"]["namespace"], version="b")
               if int(o["metadata"]["name"].rsplit("-", 1)[1]) < 5 else o for o in a]
    return a, updated


def gated_states(ns1, ns2):
    """State A and B of create-update-prune with an order: each ConfigMap depends on the Secret of
    its number, and the Services are sync wave 1 (applied once wave 0 is ready). With wait, the
    run is apply (gates between batches), wait-ready, prune (ConfigMaps gone before their
    Secrets), release: a kill lands between gates and just before the wait and the prune."""
    a, b = states(ns1, ns2)
    for o in a + b:
        meta = o["metadata"]
        annotations = meta.setdefault("annotations", {})
        if o["kind"] == "ConfigMap":
            secret = meta["name"].replace("configmap", "secret")
            annotations["config.kubernetes.io/depends-on"] = f"/namespaces/{meta['namespace']}/Secret/{secret}"
        elif o["kind"] == "Service":
            annotations["argocd.argoproj.io/sync-wave"] = "1"
    return a, b


SCENARIOS = {"create-update-prune": states, "update-only": update_only_states, "gated": gated_states}
SCENARIO_OPTIONS = {"gated": {"wait": True, "wait_timeout": 30}}


def key(o):
    return (o["kind"], o["metadata"]["namespace"], o["metadata"]["name"])


@pytest.fixture
def two_namespaces(kube, namespace):
    second = f"{namespace}-2"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": second}})
    yield namespace, second
    kube.delete(f"/api/v1/namespaces/{second}")


def labelled(kube, namespaces, set_id):
    found = set()
    for kind, plural in PLURALS.items():
        for ns in namespaces:
            items = kube.get(f"/api/v1/namespaces/{ns}/{plural}",
                             labelSelector=f"{spec.LABEL_PART_OF}={set_id}")["items"]
            found |= {(kind, ns, i["metadata"]["name"]) for i in items}
    return found


def foreign_snapshot(kube, namespaces, set_id):
    """uid -> resourceVersion of every object in the namespaces that is not ours."""
    state = {}
    for plural in PLURALS.values():
        for ns in namespaces:
            for item in kube.get(f"/api/v1/namespaces/{ns}/{plural}")["items"]:
                meta = item["metadata"]
                if (meta.get("labels") or {}).get(spec.LABEL_PART_OF) == set_id or meta["name"] == PARENT:
                    continue
                if plural == "serviceaccounts" and meta["name"] == "default":
                    continue
                state[meta["uid"]] = meta["resourceVersion"]
    return state


def hints_cover(kube, parent_ns, namespaces, set_id):
    """Every labelled object's kind and namespace is recorded on the parent."""
    parent = kube.get(f"/api/v1/namespaces/{parent_ns}/secrets/{PARENT}")
    found = labelled(kube, namespaces, set_id)
    if parent is None:
        return not found, f"no parent, but {len(found)} labelled objects"
    ann = parent["metadata"].get("annotations") or {}
    kinds = {str(gk) for gk in spec.parse_group_kinds(ann.get(spec.ANNOTATION_GROUP_KINDS))}
    scope = spec.parse_namespaces(ann.get(spec.ANNOTATION_ADDITIONAL_NAMESPACES)) | {parent_ns}
    uncovered = sorted(k for k in found if k[0] not in kinds or k[1] not in scope)
    return not uncovered, f"uncovered: {uncovered[:5]}"


# The sample's seed: APPLYSET_FAULT_SEED repeats a run's sample, else each session draws one. It is
# printed with every sweep's figures (shown when a sweep fails); `make sweeps` runs every point.
SEED = int(os.environ.get("APPLYSET_FAULT_SEED") or random.SystemRandom().randrange(1_000_000))


def sample_points(total):
    """Every k with APPLYSET_FAULT_SWEEP=full; else the first two and last two mutating requests and
    as many others as one in APPLYSET_FAULT_STEP (13) would give, drawn with ``SEED``, so that
    successive runs cover other points where a fixed step would test the same ones each time."""
    if os.environ.get("APPLYSET_FAULT_SWEEP") == "full":
        return list(range(1, total + 1))
    step = int(os.environ.get("APPLYSET_FAULT_STEP", "13"))
    middle = range(3, total - 1)
    drawn = random.Random(SEED * 1000 + total).sample(middle, min(len(middle), len(range(3, total, step))))
    return sorted({1, 2, total - 1, total} | set(drawn))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_faults_never_lose_leak_or_touch_foreign_objects(cluster, kube, two_namespaces, scenario, record_property):
    record_property("APPLYSET_FAULT_SEED", SEED)  # the run's summary prints it (tests/conftest.py)
    ns1, ns2 = two_namespaces
    admin = core_kube.connect({"kubeconfig": cluster.kubeconfig}, parallelism=8)
    state_a, state_b = SCENARIOS[scenario](ns1, ns2)
    options = {"max_prune_percent": 100, "claim_ttl": 3, "claim_wait": 30, **SCENARIO_OPTIONS.get(scenario, {})}

    def direct(definition):
        run = engine.Engine(admin, PARENT, ns1, Options.from_settings(**options))
        return run.apply(manifests.load_definition(definition))  # raises when the run failed

    set_id = direct(state_a).applyset["id"]
    # Objects outside the set: plain ones, and one that belongs to another set.
    for ns in (ns1, ns2):
        kube.create(f"/api/v1/namespaces/{ns}/configmaps", obj("ConfigMap", "foreign-plain", ns))
        other = obj("ConfigMap", "foreign-other-set", ns)
        other["metadata"]["labels"] = {spec.LABEL_PART_OF: "applyset-someoneelse-v1"}
        kube.create(f"/api/v1/namespaces/{ns}/configmaps", other)
    foreign = foreign_snapshot(kube, (ns1, ns2), set_id)
    assert len(foreign) >= 4  # ours, plus kube-root-ca.crt of each namespace

    proxy = FaultProxy(cluster.kubeconfig, hang_seconds=3)
    job = {"auth": {"host": proxy.url}, "parent": PARENT, "namespace": ns1, "definition": state_b,
           "options": options, "client": {"parallelism": 8, "timeout": 1.5}}

    def faulted_run(fault, k):
        proc = subprocess.Popen([sys.executable, str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        proxy.reset(fault, k, kill_pid=proc.pid)
        out, err = proc.communicate(json.dumps(job), timeout=120)
        return proc.returncode, out, err

    try:
        proxy.reset(None, None)
        rc, out, err = faulted_run(None, None)
        assert rc == 0, out + err
        total = proxy.mutating_seen
        desired_b = {key(o) for o in state_b}
        removed = {key(o) for o in state_a} - desired_b
        points = sample_points(total)
        runs = violations = misreported = 0
        started = time.monotonic()
        for fault in FAULTS:
            for k in points:
                direct(state_a)
                rc, out, err = faulted_run(fault, k)
                runs += 1
                if fault in ("reset", "timeout") and "someone else" in out:
                    # A lost answer is a connection problem, never another run (issue 19 point 6).
                    misreported += 1
                    print(f"MISREPORTED fault={fault} k={k}: {out[-400:]}")
                problems = []
                covered, why = hints_cover(kube, ns1, (ns1, ns2), set_id)
                if not covered:
                    problems.append(f"after the fault: {why}")
                strays = labelled(kube, (ns1, ns2), set_id) - desired_b - {key(o) for o in state_a}
                if strays:
                    problems.append(f"after the fault: objects of neither state {sorted(strays)[:3]}")
                direct(state_b)  # the normal re-run
                now = labelled(kube, (ns1, ns2), set_id)
                if now != desired_b:
                    problems.append(f"re-run: missing {sorted(desired_b - now)[:3]}, extra {sorted(now - desired_b)[:3]}")
                still_there = [r for r in removed
                               if kube.get(f"/api/v1/namespaces/{r[1]}/{PLURALS[r[0]]}/{r[2]}") is not None]
                if still_there:
                    problems.append(f"re-run left removed objects: {sorted(still_there)[:3]}")
                if foreign_snapshot(kube, (ns1, ns2), set_id) != foreign:
                    problems.append("a foreign object was touched")
                if problems:
                    violations += 1
                    print(f"VIOLATION fault={fault} k={k} rc={rc}: {problems}\n{out[-400:]}{err[-400:]}")
        print(f"fault sweep {scenario} (APPLYSET_FAULT_SEED={SEED}, points {points}): {runs} injected runs "
              f"({len(points)} points of {total} mutating requests x "
              f"{len(FAULTS)} fault kinds), {violations} violations, {misreported} lost answers reported as "
              f"another run, {time.monotonic() - started:.0f}s")
        assert violations == 0, f"rerun with APPLYSET_FAULT_SEED={SEED}"
        assert misreported == 0, f"rerun with APPLYSET_FAULT_SEED={SEED}"
    finally:
        proxy.close()


@pytest.mark.parametrize("which", ["claim", "release"])
def test_a_lost_answer_to_a_parent_write_is_recognised_as_this_runs_own(cluster, kube, two_namespaces, which):
    """The parent write lands, its answer is lost, the retry meets a 409: the run re-reads the
    parent, finds its own write and goes on (issue 19 point 6)."""
    ns1, ns2 = two_namespaces
    admin = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    state_a, state_b = states(ns1, ns2)
    options = {"max_prune_percent": 100, "claim_ttl": 30}
    first = engine.Engine(admin, PARENT, ns1, Options.from_settings(**options)).apply(manifests.load_definition(state_a))
    set_id = first.applyset["id"]

    proxy = FaultProxy(cluster.kubeconfig, hang_seconds=3)
    job = {"auth": {"host": proxy.url}, "parent": PARENT, "namespace": ns1, "definition": state_b,
           "options": options, "client": {"timeout": 5}}
    try:
        # Count the mutating requests of this change without a fault, then undo it.
        proxy.reset(None, None)
        rc, out, err = _drive(job)
        assert rc == 0, out + err
        total = proxy.mutating_seen
        undo = engine.Engine(admin, PARENT, ns1, Options.from_settings(**options)).apply(manifests.load_definition(state_a))

        proxy.reset("reset", 1 if which == "claim" else total)
        rc, out, err = _drive(job)
        assert proxy.injected
        assert rc == 0, out + err
        assert "someone else" not in out
        assert labelled(kube, (ns1, ns2), set_id) == {key(o) for o in state_b}
        annotations = kube.get(f"/api/v1/namespaces/{ns1}/secrets/{PARENT}")["metadata"]["annotations"]
        assert spec.ANNOTATION_CLAIM not in annotations  # the claim was released
    finally:
        proxy.close()


def _drive(job):
    proc = subprocess.run([sys.executable, str(DRIVER)], input=json.dumps(job), capture_output=True, text=True,
                          timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def revision_and_release(log, namespace):
    """{what: ((method, path), k)}: the revision's write and the parent write after it in the
    mutating requests ``log`` of a run without a fault, each as the k-th request of its method and
    path (the revision's Secret as a prefix: its name holds its number), so that a retry the machine's
    load adds elsewhere in a faulted run (the client's timeout is 1.5 s) cannot move the fault onto
    another request."""
    secrets = f"/api/v1/namespaces/{namespace}/secrets"
    parent, revision_prefix = f"{secrets}/{PARENT}", f"{secrets}/applyset.{PARENT}."
    # The claim's route applies the revision's Secret by name; the update-only route creates it (POST).
    writes = [n for n, (method, path, _) in enumerate(log)
              if path.startswith(revision_prefix) or (method, path) == ("POST", secrets)]
    assert writes, "no revision was written:\n" + "\n".join(map(str, log))
    revision = writes[0]
    release = next(n for n, (method, path, _) in enumerate(log) if n > revision and path == parent)
    found = {}
    revision_pattern = secrets if log[revision][0] == "POST" else revision_prefix + "*"
    for what, n, pattern in (("the revision write", revision, revision_pattern),
                             ("the parent write after it", release, parent)):
        method = log[n][0]
        match = (method, pattern)
        k = sum(1 for m, p, _ in log[:n + 1] if m == method and
                (p.startswith(pattern[:-1]) if pattern.endswith("*") else p == pattern))
        found[what] = (match, k)
    return found


def revisions_kept(kube, namespace, set_id):
    """{number: summary} of the set's revisions, and the parent's pointer."""
    items = kube.get(f"/api/v1/namespaces/{namespace}/secrets",
                     labelSelector=f"{history.LABEL_HISTORY_OF}={set_id}")["items"]
    found = {}
    for meta in (item["metadata"] for item in items):
        if meta["labels"].get(history.LABEL_CHUNK) == "0":
            number = int(meta["labels"][history.LABEL_REVISION])
            assert number not in found, f"revision {number} twice"
            found[number] = json.loads(meta["annotations"][history.ANNOTATION_SUMMARY])
    parent = kube.get(f"/api/v1/namespaces/{namespace}/secrets/{PARENT}")
    return found, int(parent["metadata"]["annotations"][spec.ANNOTATION_REVISION])


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_faults_around_the_revision_write_lose_or_duplicate_no_revision(cluster, kube, two_namespaces, scenario):
    """Every fault kind at the revision's write and at the release (or, without the claim, the
    pointer's write) that follows it: the hints still cover every member, a normal re-run converges,
    and the revisions kept are numbered without a gap or a duplicate, the newest the parent's."""
    ns1, ns2 = two_namespaces
    admin = core_kube.connect({"kubeconfig": cluster.kubeconfig}, parallelism=8)
    state_a, state_b = SCENARIOS[scenario](ns1, ns2)
    options = {"max_prune_percent": 100, "claim_ttl": 3, "claim_wait": 30}
    settings = {"max": 100}  # nothing trimmed: every number stays visible

    def direct(definition):
        run = engine.Engine(admin, PARENT, ns1, Options.from_settings(**options, history=history.Settings(**settings)))
        return run.apply(manifests.load_definition(definition))

    set_id = direct(state_a).applyset["id"]
    proxy = FaultProxy(cluster.kubeconfig, hang_seconds=3)
    job = {"auth": {"host": proxy.url}, "parent": PARENT, "namespace": ns1, "definition": state_b,
           "options": options, "history": settings, "client": {"parallelism": 8, "timeout": 1.5}}
    try:
        proxy.reset(None, None)
        rc, out, err = _drive(job)
        assert rc == 0, out + err
        print(f"the change without a fault:\n{proxy.log_text()}")
        targets = revision_and_release(proxy.mutating_log, ns1)
        runs = violations = 0
        for fault in FAULTS:
            for what, (match, k) in targets.items():
                direct(state_a)
                before = revisions_kept(kube, ns1, set_id)[1]
                proc = subprocess.Popen([sys.executable, str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
                proxy.reset(fault, k, kill_pid=proc.pid, match=match)
                out, err = proc.communicate(json.dumps(job), timeout=120)
                runs += 1
                problems = []
                covered, why = hints_cover(kube, ns1, (ns1, ns2), set_id)
                if not covered:
                    problems.append(f"after the fault: {why}")
                after_fault = revisions_kept(kube, ns1, set_id)[1]
                if after_fault not in (before, before + 1):
                    problems.append(f"after the fault: pointer {before} -> {after_fault}")
                direct(state_b)
                if labelled(kube, (ns1, ns2), set_id) != {key(o) for o in state_b}:
                    problems.append("the re-run did not converge")
                kept, pointer = revisions_kept(kube, ns1, set_id)
                if pointer != before + 1 or sorted(kept) != list(range(1, pointer + 1)):
                    problems.append(f"revisions {sorted(kept)}, pointer {before} -> {after_fault} -> {pointer}")
                if kept.get(pointer, {}).get("members") != len(state_b):
                    problems.append(f"the current revision holds {kept.get(pointer)}")
                if problems:
                    violations += 1
                    print(f"VIOLATION fault={fault} at {what} rc={proc.returncode}: {problems}\n{out[-400:]}{err[-400:]}"
                          f"\nits mutating requests:\n{proxy.log_text()}")
        print(f"revision fault sweep {scenario}: {runs} injected runs (the revision write and the parent write "
              f"after it, x {len(FAULTS)} fault kinds), {violations} violations")
        assert violations == 0
    finally:
        proxy.close()
