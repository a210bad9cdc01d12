"""Run the same input through kubectl and through this collection, and compare the outcomes.

kubectl: ``kubectl apply --server-side --dry-run=server -o json`` with a kubeconfig whose context
namespace is the test namespace (so, like our ``namespace`` option, it is a default, not a
constraint). With ``-o json`` kubectl prints nothing when any object fails, so its output is
either every object or an error.

Ours: the core library, as ``applyset_apply`` runs it in check mode: ``manifests.load_sources``
and ``validate``, then ``engine.Engine(...).apply`` with ``dry_run`` and ``diff``; the objects the
server would write are the diff's ``after`` sides.

Both sides' objects are compared after dropping what the server sets (uid, resourceVersion,
timestamps, managed fields, status) and our part-of label.
"""

from __future__ import annotations

import glob
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))
from applyset import engine  # noqa: E402
from applyset.run.options import Options
from applyset.inputs import manifests  # noqa: E402
from applyset.inputs import manifest_checks
from applyset.errors import ApplySetError  # noqa: E402



def newest_kubectl() -> str:
    """The newest versioned kubectl installed (kubectl.1.NN), else the one on PATH.

    The reference is the kubectl closest to the API server (1.34): the plain ``kubectl`` may be
    older, and kubectl's reader changed (a JSON document followed by YAML is read since 1.33).
    """
    versioned = glob.glob("/usr/lib/google-cloud-sdk/bin/kubectl.1.*")
    if not versioned:
        return "kubectl"
    return max(versioned, key=lambda path: int(re.sub(r".*kubectl\.1\.", "", path) or 0))


KUBECTL = newest_kubectl()


def kubectl_minor() -> int:
    """The reference kubectl's minor version (33 for 1.33)."""
    proc = subprocess.run([KUBECTL, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=60)
    try:
        return int(re.sub(r"\D", "", json.loads(proc.stdout)["clientVersion"]["minor"]))
    except (ValueError, KeyError):
        return 0


# kubectl reads a JSON document followed by YAML (or a "JSON" document only YAML can read)
# since 1.33; older ones refuse the rest of the stream.
KUBECTL_READS_JSON_THEN_YAML = kubectl_minor() >= 33
PART_OF = "applyset.kubernetes.io/part-of"
APPLIED_DIGEST = "applyset.kubernetes.ansible/applied-digest"
SERVER_METADATA = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink")

# Why kubectl refuses an input, when the reason is something this cluster lacks rather than
# the input itself: a kind nobody serves, a namespace that does not exist, a CRD in the same
# input (kubectl cannot map its custom resources before the CRD exists).
LACKS = (
    ("no matches for kind", "a kind this cluster does not serve"),
    ("ensure CRDs are installed first", "a kind this cluster does not serve (or its CRD is in the same input)"),
    ("could not find the requested resource", "a kind this cluster does not serve"),
    ("namespaces \"", "a namespace that does not exist"),
    ("not found", "an object or namespace that does not exist"),
)


@dataclass
class Outcome:
    accepted: bool
    objects: dict = field(default_factory=dict)  # (kind, namespace, name) -> normalised object
    error: str = ""
    uncompared: set = field(default_factory=set)  # ours: not dry-run by the server, or unchanged
    warnings: list = field(default_factory=list)

    @property
    def lacks(self) -> str | None:
        """What the cluster lacks, according to the error; None for other refusals."""
        for text, reason in LACKS:
            if text in self.error:
                return reason
        return None


def context_kubeconfig(cluster, namespace: str, directory: Path) -> str:
    """A copy of the cluster's kubeconfig whose current context defaults to ``namespace``."""
    path = directory / f"kubeconfig-{namespace}"
    path.write_text(Path(cluster.kubeconfig).read_text())
    subprocess.run([KUBECTL, "config", "set-context", "--current", f"--namespace={namespace}",
                    f"--kubeconfig={path}"], check=True, capture_output=True)
    return str(path)


# What the server makes up anew for every request: the names of Pods' token volumes and Jobs'
# controller uids.
_RANDOM = (re.compile(r"kube-api-access-[a-z0-9]{5}"),
           re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"))
SECRET_FIELDS = ("data", "stringData")


def normalise(obj: dict) -> dict:
    """The object without server bookkeeping, status, made-up names, our part-of label and our
    applied-digest annotation (every apply of ours records it; kubectl's does not).

    Secret values are left out (ours are masked in the diff): their keys are compared.
    """
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_METADATA}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != PART_OF}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != APPLIED_DIGEST}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    if obj.get("kind") == "Secret":
        for name in SECRET_FIELDS:
            if isinstance(out.get(name), dict):
                out[name] = sorted(out[name])
    text = json.dumps(out)
    for pattern in _RANDOM:
        text = pattern.sub("<generated>", text)
    return json.loads(text)


def template_labels_only(theirs: dict, ours: dict) -> bool:
    """kubectl's object got metadata.labels copied from its pod template and ours did not.

    The server does this for ReplicationControllers and Jobs (and other old kinds) only when
    metadata.labels is empty; every ApplySet member carries the part-of label, so ours never is
    (the same happens with kubectl --applyset).
    """
    if ours.get("metadata", {}).get("labels"):
        return False
    labels = theirs.get("metadata", {}).get("labels") or {}
    template = ((theirs.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
    if not labels or not all(template.get(k) == v for k, v in labels.items()):
        return False
    trimmed = dict(theirs, metadata={k: v for k, v in theirs["metadata"].items() if k != "labels"})
    return trimmed == ours


def key_of(obj: dict) -> tuple:
    meta = obj.get("metadata") or {}
    return (obj.get("kind"), meta.get("namespace") or "", meta.get("name"))


def kubectl_dry_run(kubeconfig: str, paths: list, recursive: bool = False) -> Outcome:
    args = [KUBECTL, "apply", "--server-side", "--dry-run=server", "-o", "json", f"--kubeconfig={kubeconfig}"]
    if recursive:
        args.append("-R")
    for path in paths:
        args += ["-f", str(path)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 or not proc.stdout.strip():
        return Outcome(False, error=(proc.stderr or proc.stdout).strip())
    printed = json.loads(proc.stdout)
    items = printed["items"] if printed.get("kind") == "List" and "items" in printed else [printed]
    return Outcome(True, {key_of(item): normalise(item) for item in items})


def our_dry_run(client, namespace: str, paths: list, parent: str) -> Outcome:
    """Check mode of the core library on ``paths``."""
    try:
        loaded = manifests.load_sources([str(p) for p in paths])
        manifest_checks.validate(loaded)
        run = engine.Engine(client, parent, namespace, Options(dry_run=True, diff=True))
        report = run.apply(loaded)
    except ApplySetError as err:
        failed = err.report.failed_objects if err.report is not None else []
        if failed:  # the objects' own errors say more than the run's summary
            return Outcome(False, error="; ".join(f"{o.ref}: {o.reason}" for o in failed),
                           warnings=err.report.warnings)
        return Outcome(False, error=str(err))
    objects = {}
    for entry in report.diff:
        after = yaml.safe_load(entry["after"]) if entry.get("after") else None
        if after:
            objects[key_of(after)] = normalise(after)
    uncompared = {(o.kind, o.namespace or "", o.name) for o in report.objects
                  if o.reason or o.action == "unchanged"}
    return Outcome(True, objects, uncompared=uncompared, warnings=report.warnings)


TEMPLATE_LABELS = "no labels copied from the pod template (the part-of label, as with kubectl --applyset)"


LAST_APPLIED = "kubectl rewrote the last-applied-configuration annotation the input carries"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"


def _without_last_applied(obj: dict) -> dict:
    annotations = {k: v for k, v in (obj["metadata"].get("annotations") or {}).items() if k != LAST_APPLIED_ANNOTATION}
    return dict(obj, metadata={**obj["metadata"], "annotations": annotations})


def compared(theirs: Outcome, ours: Outcome) -> int:
    """How many objects both sides have and the comparison covers."""
    return len((set(theirs.objects) & set(ours.objects)) - ours.uncompared)


def differences(theirs: Outcome, ours: Outcome) -> list[str]:
    """What differs between two accepted outcomes: objects only one side has, or other content."""
    found = []
    for key in sorted(set(theirs.objects) | set(ours.objects), key=str):
        if key in ours.uncompared:
            continue  # the server could not dry-run ours (its CRD or namespace is new), or no change
        mine, other = ours.objects.get(key), theirs.objects.get(key)
        if mine is None or other is None:
            found.append(f"{key}: only {'kubectl' if mine is None else 'ours'} has it")
        elif mine == other:
            continue
        elif template_labels_only(other, mine):
            found.append(f"{key}: {TEMPLATE_LABELS}")
        elif _without_last_applied(other) == _without_last_applied(mine):
            found.append(f"{key}: {LAST_APPLIED}")
        else:
            fields = sorted(k for k in set(mine) | set(other) if mine.get(k) != other.get(k))
            found.append(f"{key}: differs in {', '.join(fields)}")
    return found
