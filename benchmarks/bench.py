#!/usr/bin/env python3
"""Side-by-side benchmark: our module (ansible-playbook), our core library, kubectl --applyset,
kpt live apply, kubernetes.core's k8s module, and a minimal ceiling client.

``benchmarks/run`` calls this file; see ``benchmarks/run --help`` and docs/performance.md.

For every (N, namespaces) configuration and every repetition, each tool runs the scenario chain
initial -> noop -> change -> preview -> prune in its own namespaces, in an order that rotates and
reverses between repetitions; then its namespaces are deleted (untimed) and the next tool runs.
Each scenario is one process (the tool's CLI, or a Python process for the library and the ceiling),
timed from start to exit, with:

* peak RSS: of the module process for ansible-playbook (the interpreter is wrapped by
  ``/usr/bin/time``), of the process itself for the others (``wait4`` rusage);
* CPU time of the tool's process tree, and of kube-apiserver + etcd (from ``/proc``);
* API requests by verb and resource: deltas of the API server's ``apiserver_request_total``,
  without the series only the control plane's own components touch (leases, nodes, events, pods,
  replica sets, endpoint slices, and ``/status`` subresources);
* a check of the result: the number of workload objects in the tool's namespaces afterwards.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))

import latency  # noqa: E402
import workload  # noqa: E402
from applyset.kube import client as kube  # noqa: E402
from applyset import errors
from applyset.kube import http_requests as httprequests
from applyset import spec  # noqa: E402
from summary import ALL_TOOLS, SCENARIOS, summarize, tool_order  # noqa: E402

VARIANT_FOR = {"initial": "base", "noop": "base", "change": "changed", "preview": "pruned", "prune": "pruned"}
# What `benchmarks/run` measures by default (N:namespace counts:tools[:repetitions[:scenarios]]),
# most important first, so that a run cut short still has the issue-11 targets. Each block covers
# targets of docs/performance.md; the estimates are from the per-run wall times in
# benchmarks/results (bench-main.json, bench-extra.json: a loaded 2-core machine, before
# `reapply: changed`; a no-op or 10%-changed chain of ours is now cheaper) plus ~25% for the
# untimed cleanup between chains:
DEFAULT_BLOCKS = (
    # ours against the ceiling, every scenario: the no-op, 10%-changed and initial-apply targets,
    # the request expectations, core vs ceiling. ~80 s per repetition: ~5.5 min.
    ("1000:1:ansible,core,ceiling:3", 5.5),
    # the N=5,000 targets (no-op <= 0.3x the ceiling, initial apply <= 1.3x, module memory
    # <= 200 MB with full-object LISTs) and the slope. ~140 s per repetition + 5,000-object
    # cleanups: ~7 min.
    ("5000:1:ansible,ceiling:2:initial,noop,change", 7.0),
    # kinds x namespaces: the no-op's request bound with 3 namespaces (33 LISTs + 4). ~1.5 min.
    ("1000:3:ansible,core,ceiling:1:initial,noop,change", 1.5),
    # every peer, small: ~73 s per repetition (kubectl 28 s, ansible-playbook 14 s, k8s 13 s): ~4.5 min.
    ("100:1:all:3", 4.5),
    # the peers at N=1,000, once: kubectl's chain alone takes ~6 min (client-side validation,
    # 5 prune DELETEs/s), kubectl --validate=false ~0.5 min, kpt ~1.5 min: ~9.5 min.
    ("1000:1:kubectl,kubectl-nv,kpt:1", 9.5),
    # issue 30's latency targets: 1,000 ConfigMaps at a 50 ms round trip (delaying proxy), ours against
    # the minimal client (64 parallel PATCHes), the ceiling tuned there and a one-task ping playbook.
    ("1000:1:ansible,core,ceiling,ceiling@64,ping:2:initial,noop,change:rtt=50,kinds=cm", 4.0),
)
# Scale (issue 30 point 5, `--preset scale`): N = 10,000 and 25,000, one repetition of every
# scenario but the preview, ours through ansible-playbook against the ceiling. Estimated from N=10,000
# on loopback (initial 31 s, ceiling 22 s, a no-op 4 s) scaled linearly, plus the cleanups:
# ~9 min for 10,000, ~20 min for 25,000.
SCALE_BLOCKS = (("10000:1:ansible,ceiling:1:initial,noop,change,prune", 9.0),
                ("25000:1:ansible,ceiling:1:initial,noop,change,prune", 20.0))
PRESETS = {"scale": " ".join(entry for entry, _ in SCALE_BLOCKS)}
# With the ceiling's tuning (~1.5 min) and the idle measurement: ~30 minutes on a quiet 2-core
# machine (the old default took ~55). Left out: kubectl and kpt at N=5,000 (one kubectl chain
# takes over 20 minutes), kubernetes.core at N=1,000 (~1.5 min per chain, it cannot prune), the
# prune at N=5,000 (no issue-11 target; the 10% change is there instead).
DEFAULT_MATRIX = " ".join(entry for entry, _ in DEFAULT_BLOCKS)
DEFAULT_MINUTES = round(sum(minutes for _, minutes in DEFAULT_BLOCKS) + 2)
# The module's reapply option: "changed" (the default since issue 11) sends only members whose
# live state differs; "always" applies every member on every run (the behaviour before).
REAPPLY_MODES = ("changed", "always")
PY = Path(sys.executable)
VENV_BIN = PY.parent
# Series that only the control plane's own components touch in this workload.
BACKGROUND_RESOURCES = frozenset({"leases", "nodes", "events", "pods", "replicasets", "endpointslices", "endpoints",
                                  "controllerrevisions", "serviceaccounts/token"})
BENCH_STATE = ROOT / ".state" / "bench"
TREE = ROOT  # the collection tree under test (--tree); the harness itself always runs from ROOT
COLLECTIONS = BENCH_STATE / "collections"  # ansible_collections/applyset/kubernetes -> TREE
K8S_VENV = BENCH_STATE / "ansible-pkg"  # the `ansible` PyPI package (for kubernetes.core), kept out of .venv
ANSIBLE_PKG_SPEC = "ansible>=12,<13"  # the community package that matches ansible-core 2.19


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ----- cluster access for setup, checks and metrics ----------------------------------------------


class Admin:
    def __init__(self, kubeconfig: str, state_dir: Path | None):
        self.kubeconfig = kubeconfig
        self.client = kube.connect({"kubeconfig": kubeconfig}, parallelism=8)
        self.server_pids = _server_pids(state_dir) if state_dir else {}

    def req(self, method, path, **kw):
        return self.client.request(method, path, **kw)

    def apply(self, obj: dict) -> None:
        api = obj["apiVersion"]
        plural = {"CustomResourceDefinition": "customresourcedefinitions", "Namespace": "namespaces",
                  "ApplySet": "applysets"}[obj["kind"]]
        path = f"/apis/{api}/{plural}/{obj['metadata']['name']}" if "/" in api else f"/api/{api}/{plural}/{obj['metadata']['name']}"
        self.req("PATCH", path, query={"fieldManager": "bench-harness", "force": "true"}, body=obj,
                 content_type=httprequests.APPLY_PATCH)

    def wait_crd(self, name: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            crd = self.req("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}").body
            if any(c.get("type") == "Established" and c.get("status") == "True"
                   for c in (crd.get("status") or {}).get("conditions") or []):
                # the new resource must also be in discovery
                return
            time.sleep(0.2)
        raise RuntimeError(f"CRD {name} not Established")

    def create_namespaces(self, names) -> None:
        for ns in names:
            self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        # the service-account and root-CA controllers write into new namespaces: let them finish
        deadline = time.monotonic() + 30
        for ns in names:
            for path in (f"/api/v1/namespaces/{ns}/serviceaccounts/default",
                         f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"):
                while time.monotonic() < deadline:
                    try:
                        self.req("GET", path)
                        break
                    except errors.ApiError:
                        time.sleep(0.1)
        time.sleep(0.5)

    def delete_namespaces(self, names, timeout: float = 600, wait: bool = True) -> float:
        started = time.monotonic()
        for ns in names:
            try:
                self.req("DELETE", f"/api/v1/namespaces/{ns}")
            except errors.ApiError as err:
                if err.status != 404:
                    raise
        for ns in names if wait else ():
            while time.monotonic() - started < timeout:
                try:
                    self.req("GET", f"/api/v1/namespaces/{ns}")
                except errors.ApiError as err:
                    if err.status == 404:
                        break
                    raise
                time.sleep(0.25)
            else:
                raise RuntimeError(f"namespace {ns} still terminating after {timeout}s")
        return time.monotonic() - started

    def clear_namespaces(self, names) -> float:
        """Delete the workload (and what controllers made of it) but keep the namespaces: much quicker
        than deleting namespaces, and nothing keeps running in the background afterwards."""
        started = time.monotonic()
        kinds = [(workload.API_VERSION[k], workload.PLURAL[k], "app.kubernetes.io/part-of=bench") for k in workload.KINDS]
        kinds += [("apps/v1", "replicasets", None), ("v1", "secrets", None), ("kpt.dev/v1alpha1", "resourcegroups", None)]
        for ns in names:
            for api, plural, selector in kinds:
                base = f"/apis/{api}" if "/" in api else f"/api/{api}"
                query = {"propagationPolicy": "Background"}
                if selector:
                    query["labelSelector"] = selector
                try:
                    self.req("DELETE", f"{base}/namespaces/{ns}/{plural}", query=query)
                except errors.ApiError as err:
                    if err.status != 404:
                        raise
        for ns in names:  # wait until nothing of the workload is left (no finalizers, so it is quick)
            while self.count_objects([ns]) and time.monotonic() - started < 300:
                time.sleep(0.25)
        return time.monotonic() - started

    def delete_path(self, path: str) -> None:
        try:
            self.req("DELETE", path)
        except errors.ApiError as err:
            if err.status != 404:
                raise

    def count_objects(self, namespaces) -> int:
        total = 0
        for kind in workload.KINDS:
            api, plural = workload.API_VERSION[kind], workload.PLURAL[kind]
            base = f"/apis/{api}" if "/" in api else f"/api/{api}"
            for ns in namespaces:
                items = self.client.list(_Res(f"{base}/namespaces/{ns}/{plural}"), None,
                                         label_selector="app.kubernetes.io/part-of=bench")
                total += sum(1 for _ in items)
        return total

    def metrics(self) -> dict:
        try:
            text = self.req("GET", "/metrics", accept="text/plain").body
        except errors.ApiError as err:  # e.g. a cluster where we may not read /metrics: no request counts
            if not getattr(self, "_metrics_warned", False):
                log(f"cannot read /metrics ({err.message}); request counts will be empty")
                self._metrics_warned = True
            return {}
        if isinstance(text, bytes):
            text = text.decode()
        out = {}
        for line in text.splitlines():
            if not line.startswith("apiserver_request_total{"):
                continue
            labels_text, _, value = line[len("apiserver_request_total{"):].rpartition("} ")
            labels = dict(re.findall(r'(\w+)="([^"]*)"', labels_text))
            key = (labels.get("verb", ""), labels.get("group", ""), labels.get("resource", ""),
                   labels.get("subresource", ""), labels.get("dry_run", ""), labels.get("code", ""))
            out[key] = out.get(key, 0.0) + float(value)
        return out

    def server_cpu(self) -> float:
        return sum(_proc_cpu(pid) for pid in self.server_pids.values())


@dataclass(frozen=True)
class _Res:
    """Just enough of discovery.Resource for KubeClient.list with a ready path."""

    base: str

    def path(self, namespace=None, name=None):
        return self.base


def _server_pids(state_dir: Path) -> dict:
    try:
        out = subprocess.run([str(ROOT / "hack" / "local-cluster"), "--state-dir", str(state_dir), "status"],
                             capture_output=True, text=True, timeout=30)
        comps = json.loads(out.stdout)["components"]
        return {name: comps[name]["pid"] for name in ("kube-apiserver", "etcd") if name in comps}
    except Exception:  # noqa: BLE001 - CPU of the server is a bonus, not a requirement
        return {}


def _proc_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def request_delta(before: dict, after: dict) -> dict:
    """Requests by verb (and verb+resource) between two /metrics snapshots, tool series only."""
    by_verb: dict[str, int] = {}
    by_resource: dict[str, int] = {}
    errors = 0
    errors_by_code: dict[str, int] = {}
    for key, value in after.items():
        delta = int(round(value - before.get(key, 0.0)))
        if delta <= 0:
            continue
        verb, group, resource, subresource, dry_run, code = key
        if (resource in BACKGROUND_RESOURCES or f"{resource}/{subresource}" in BACKGROUND_RESOURCES
                or subresource == "status" or verb == "WATCH" and not resource):
            continue
        if not resource:
            if subresource not in ("api", "apis"):
                continue  # /healthz, /readyz (/metrics and /openapi are not counted by the server)
            resource = "discovery"
        name = f"{verb}{' (dry run)' if dry_run else ''}"
        by_verb[name] = by_verb.get(name, 0) + delta
        res_key = f"{name} {resource}{'.' + group if group else ''}"
        by_resource[res_key] = by_resource.get(res_key, 0) + delta
        if code.startswith(("4", "5")) and code != "404":
            errors += delta
            errors_by_code[f"{code} {res_key}"] = errors_by_code.get(f"{code} {res_key}", 0) + delta
    # Watches are long-running and the controllers' informers restart theirs all the time, so they
    # are shown but left out of the total.
    by_verb["total"] = sum(v for k, v in by_verb.items() if k != "WATCH")
    return {"by_verb": dict(sorted(by_verb.items())), "by_resource": dict(sorted(by_resource.items())),
            "errors": errors, "errors_by_code": errors_by_code}


# ----- tools --------------------------------------------------------------------------------------


@dataclass
class Config:
    n: int
    nsc: int
    workdir: Path
    kubeconfig: str
    parallelism: int
    ceiling_parallelism: int
    reapply: str = "changed"
    # The block's round trip (through latency.Link) and workload ("all": 11 kinds; "cm": ConfigMaps only).
    rtt_ms: int = 0
    kinds: str = "all"
    # Names of the namespaces ("PREFIX-TOOL-K") and of the cluster-scoped parents: unique per run on
    # a cluster given with --kubeconfig, which other runs (a test suite's smoke run) may share.
    prefix: str = "b"

    def set_name(self, tool: str) -> str:
        """Name of a tool's cluster-scoped parent (sets over several namespaces)."""
        return f"bench-{tool}" if self.prefix == "b" else f"bench-{self.prefix}-{tool}"


class Tool:
    name = ""
    label = ""
    scenarios = SCENARIOS
    rss_from_wrapper = False  # module process measured through the interpreter wrapper

    def __init__(self, cfg: Config, name: str | None = None):
        self.cfg = cfg
        if name:  # a variant such as ceiling@8 (the ceiling with parallelism 8)
            self.name = name
        slug = self.name.replace("@", "-p")
        self.dir = cfg.workdir / f"{slug}-{cfg.n}-{cfg.nsc}ns{'-cm' if cfg.kinds == 'cm' else ''}"
        self.namespaces = [f"{cfg.prefix}-{slug}-{k}" for k in range(cfg.nsc)]

    # -- hooks
    @classmethod
    def unavailable(cls) -> str | None:
        return None

    def variant_dir(self, variant: str) -> Path:
        return self.dir / variant

    def prepare(self) -> None:
        """Write the manifests of every variant for this tool's namespaces."""
        for variant in workload.VARIANTS:
            workload.write_variant(self.variant_dir(variant), workload.objects(self.cfg.n, self.namespaces, variant),
                                   **self.write_args())

    def write_args(self) -> dict:
        return {}

    def before_rep(self, admin: Admin) -> None:
        pass

    def after_rep(self, admin: Admin) -> None:
        pass

    def command(self, scenario: str) -> tuple[list[str], dict]:
        raise NotImplementedError

    def expected(self, scenario: str) -> int:
        n = self.cfg.n
        return n - sum(1 for i in range(n) if workload.removed(i)) if scenario == "prune" else n

    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("K8S_AUTH_", "ANSIBLE_"))}
        env["KUBECONFIG"] = self.cfg.kubeconfig
        env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
        env.update(extra)
        return env


class _AnsibleTool(Tool):
    rss_from_wrapper = True

    def interpreter_wrapper(self) -> Path:
        wrapper = self.dir / "python-rss"
        if Path("/usr/bin/time").exists():
            # The module's result as it reaches the controller: its stdout, counted on the way.
            text = ('#!/bin/sh\nout=$(mktemp)\n'
                    f'/usr/bin/time -a -o "$BENCH_MODULE_FILE" -f "rss_kb=%M wall_s=%e cpu_s=%U+%S" "{PY}" "$@" > "$out"\n'
                    'rc=$?\necho "result_bytes=$(wc -c < "$out")" >> "$BENCH_MODULE_FILE"\ncat "$out"\nrm -f "$out"\n'
                    'exit $rc\n')
        else:  # no GNU time: a Python parent that reports its child's peak RSS
            text = (f'#!/bin/sh\nBENCH_RSS_FILE="$BENCH_MODULE_FILE" exec "{PY}" "{BENCH / "rsswrap.py"}" "{PY}" "$@"\n')
        wrapper.write_text(text)
        wrapper.chmod(0o755)
        return wrapper

    def playbook(self, task: dict) -> Path:
        import yaml

        play = [{"name": f"bench {self.name}", "hosts": "localhost", "gather_facts": False, "tasks": [task]}]
        path = self.dir / "playbook.yml"
        path.write_text(yaml.safe_dump(play, sort_keys=False))
        return path

    def ansible_command(self, scenario, playbook: Path, extra_env: dict) -> tuple[list[str], dict]:
        rss_file = self.dir / f"rss-{scenario}.txt"
        rss_file.unlink(missing_ok=True)
        evars = {"src": str(self.variant_dir(VARIANT_FOR[scenario])),
                 "ansible_python_interpreter": str(self.dir / "python-rss")}
        argv = [str(VENV_BIN / "ansible-playbook"), str(playbook), "-e", json.dumps(evars)]
        if scenario == "preview":
            argv.append("--check")
        env = self.env(ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), BENCH_MODULE_FILE=str(rss_file),
                       ANSIBLE_NOCOLOR="1", **extra_env)
        return argv, env

    def module_process(self, scenario) -> dict:
        """Peak RSS, wall and CPU time of the module's interpreter process (from the wrapper)."""
        try:
            text = (self.dir / f"rss-{scenario}.txt").read_text()
        except OSError:
            return {}
        out = {}
        result_bytes = 0
        for line in text.splitlines():  # one line per interpreter run; keep the largest
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            if "result_bytes" in fields:
                result_bytes = max(result_bytes, int(fields["result_bytes"]))
                out["result_bytes"] = result_bytes
            if "rss_kb" not in fields:
                continue
            rss = int(fields["rss_kb"])
            if rss >= out.get("rss_kb", -1):
                cpu = sum(float(x) for x in fields.get("cpu_s", "0").split("+"))
                out = {"rss_kb": rss, "wall_s": float(fields.get("wall_s", 0)), "cpu_s": round(cpu, 2),
                       **({"result_bytes": result_bytes} if result_bytes else {})}
        return out


class AnsibleTool(_AnsibleTool):
    name = "ansible"
    label = "applyset_apply via ansible-playbook"

    def other_tree(self) -> str | None:
        """NAME of ansible@NAME and core@NAME, which run the collection tree .state/bench/tree-NAME
        (e.g. main before a change, ``git archive REV | tar -x -C .state/bench/tree-NAME``) side by
        side with the tree under test; None for the tree under test."""
        return self.name.split("@", 1)[1] if "@" in self.name else None

    def tree(self) -> Path:
        return BENCH_STATE / f"tree-{self.other_tree()}" if self.other_tree() else TREE

    def collections_path(self) -> Path:
        """ANSIBLE_COLLECTIONS_PATH for this tool: the tree under test, or tree-NAME's own."""
        if not self.other_tree():
            return COLLECTIONS
        path = BENCH_STATE / f"collections-{self.other_tree()}"
        link = path / "ansible_collections" / "applyset" / "kubernetes"
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(self.tree())
        return path

    def reapply_mode(self) -> str:
        """What the collection under test does with unchanged members (a tree from before issue 11
        has no reapply option and applies every member on every run)."""
        return self.cfg.reapply if supports_reapply(self.tree()) else "always"

    def parent_option(self):
        if self.cfg.nsc == 1:
            return "bench"
        return {"apiVersion": f"{workload.BENCH_GROUP}/v1", "kind": "ApplySet",
                "metadata": {"name": self.cfg.set_name(self.name)}, "spec": {}}

    def prepare(self) -> None:
        super().prepare()
        self.interpreter_wrapper()
        task = {"name": "apply the set", "applyset.kubernetes.applyset_apply": {
            "parent": self.parent_option(),
            "src": ["{{ src }}"],
            "kubeconfig": self.cfg.kubeconfig,
        }}
        if self.cfg.parallelism is not None:  # not set: the module follows the round trip
            task["applyset.kubernetes.applyset_apply"]["parallelism"] = self.cfg.parallelism
        if supports_reapply(self.tree()):
            task["applyset.kubernetes.applyset_apply"]["reapply"] = self.cfg.reapply
        if self.cfg.nsc == 1:
            task["applyset.kubernetes.applyset_apply"]["namespace"] = self.namespaces[0]
        self.playbook(task)

    def after_rep(self, admin: Admin) -> None:
        if self.cfg.nsc > 1:
            admin.delete_path(f"/apis/{workload.BENCH_GROUP}/v1/applysets/{self.cfg.set_name(self.name)}")

    def command(self, scenario):
        return self.ansible_command(scenario, self.dir / "playbook.yml",
                                    {"ANSIBLE_COLLECTIONS_PATH": str(self.collections_path())})


class CoreTool(AnsibleTool):
    name = "core"
    label = "core library (Python, no Ansible)"
    rss_from_wrapper = False

    def prepare(self) -> None:
        Tool.prepare(self)

    def command(self, scenario):
        argv = [str(PY), str(BENCH / "core_run.py"), self.cfg.kubeconfig, str(self.variant_dir(VARIANT_FOR[scenario])),
                "--parent", json.dumps(self.parent_option())]
        if self.cfg.parallelism is not None:
            argv += ["--parallelism", str(self.cfg.parallelism)]
        if self.cfg.nsc == 1:
            argv += ["--namespace", self.namespaces[0]]
        if scenario == "preview":
            argv.append("--dry-run")
        if supports_reapply(self.tree()):
            argv += ["--reapply", self.cfg.reapply]
        return argv, self.env(BENCH_TREE=str(self.tree()))

    def reapply_mode(self) -> str:
        return self.cfg.reapply if supports_reapply(self.tree()) else "always"


class PingTool(_AnsibleTool):
    """A one-task ``ping`` playbook: Ansible's own fixed cost, the floor of a no-op through
    ansible-playbook (issue 30's no-op target is measured against it)."""

    name = "ping"
    label = "a one-task ping playbook (Ansible's fixed cost)"
    scenarios = ("noop",)

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.interpreter_wrapper()
        self.playbook({"name": "ping", "ansible.builtin.ping": {}})

    def expected(self, scenario: str) -> int:
        return 0

    def command(self, scenario):
        return self.ansible_command(scenario, self.dir / "playbook.yml", {})


class KubectlTool(Tool):
    name = "kubectl"
    label = "kubectl apply --server-side --prune --applyset"

    @classmethod
    def unavailable(cls):
        return None if shutil.which("kubectl") else "kubectl is not on PATH"

    def parent_name(self) -> str:
        return self.cfg.set_name(self.name)

    def before_rep(self, admin: Admin) -> None:
        if self.cfg.nsc > 1:
            # kubectl needs a custom-resource parent to exist already, with its own metadata on it.
            name = self.parent_name()
            admin.apply({
                "apiVersion": f"{workload.BENCH_GROUP}/v1", "kind": "ApplySet",
                "metadata": {"name": name,
                             "labels": {spec.LABEL_ID: spec.compute_id(name, "", "ApplySet", workload.BENCH_GROUP)},
                             "annotations": {spec.ANNOTATION_TOOLING: "kubectl/v0.0.0",
                                             spec.ANNOTATION_GROUP_KINDS: ""}},
            })

    def after_rep(self, admin: Admin) -> None:
        if self.cfg.nsc > 1:
            admin.delete_path(f"/apis/{workload.BENCH_GROUP}/v1/applysets/{self.parent_name()}")

    def command(self, scenario):
        argv = ["kubectl", "apply", "--server-side", "--prune", "-f", str(self.variant_dir(VARIANT_FOR[scenario])),
                f"--cache-dir={self.cfg.workdir / 'kubectl-cache'}"]
        if self.cfg.nsc == 1:
            argv += ["--applyset=bench", "-n", self.namespaces[0]]
        else:
            argv += [f"--applyset=applysets.{workload.BENCH_GROUP}/{self.parent_name()}"]
        if scenario == "preview":
            argv.append("--dry-run=server")
        return argv, self.env(KUBECTL_APPLYSET="true")


class KubectlNoValidateTool(KubectlTool):
    """kubectl without its client-side schema validation: how fast kubectl can apply at best.

    kubectl's default ``--validate=strict`` spends most of its time checking each object against the
    OpenAPI v3 schemas on the client; ``--validate=false`` skips that and the server's field
    validation too (``fieldValidation=Ignore``), so it validates less than our module does. Its
    prune is the same as kubectl's (client-side rate limit of 5 requests/s for DELETEs), so only the
    apply scenarios are run."""

    name = "kubectl-nv"
    label = "kubectl --applyset with --validate=false (apply scenarios only)"
    scenarios = ("initial", "noop", "change")

    def parent_name(self) -> str:
        return self.cfg.set_name("kubectl-nv")

    def command(self, scenario):
        argv, env = super().command(scenario)
        return argv + ["--validate=false"], env


class KptTool(Tool):
    name = "kpt"
    label = "kpt live apply --server-side"

    @classmethod
    def unavailable(cls):
        return None if shutil.which("kpt") else "kpt is not on PATH"

    def write_args(self):
        inventory = {"apiVersion": "kpt.dev/v1alpha1", "kind": "ResourceGroup",
                     "metadata": {"name": "bench-inventory", "namespace": self.namespaces[0],
                                  "labels": {"cli-utils.sigs.k8s.io/inventory-id": f"{self.cfg.set_name('kpt')}-{self.cfg.n}-{self.cfg.nsc}"}}}
        return {"extra": {"resourcegroup.yaml": inventory}}

    def command(self, scenario):
        # Timeouts only as a safety net: kpt waits for every object to reconcile (and every pruned
        # object to be gone) by default, and so it does here.
        argv = ["kpt", "live", "apply", "--server-side", "--reconcile-timeout=5m", "--prune-timeout=5m",
                str(self.variant_dir(VARIANT_FOR[scenario]))]
        if scenario == "preview":
            argv.append("--dry-run")
        return argv, self.env()


class K8sTool(_AnsibleTool):
    name = "k8s"
    label = "kubernetes.core.k8s (one task, no prune)"
    scenarios = ("initial", "noop", "change")

    @classmethod
    def collections_dir(cls) -> Path | None:
        for candidate in sorted(K8S_VENV.glob("lib/python*/site-packages")):
            if (candidate / "ansible_collections" / "kubernetes" / "core").is_dir():
                return candidate
        return None

    @classmethod
    def unavailable(cls):
        return None if cls.collections_dir() else (
            f"kubernetes.core not installed (run `benchmarks/run setup` to pip-install {ANSIBLE_PKG_SPEC} into {K8S_VENV})")

    def write_args(self):
        return {"single_file": True}

    def prepare(self) -> None:
        super().prepare()
        self.interpreter_wrapper()
        self.playbook({"name": "apply all documents", "kubernetes.core.k8s": {
            "src": "{{ src }}/all.yaml", "state": "present", "apply": True,
            "server_side_apply": {"field_manager": "bench-k8s"}, "kubeconfig": self.cfg.kubeconfig,
        }})

    def command(self, scenario):
        paths = f"{COLLECTIONS}{os.pathsep}{self.collections_dir()}"
        return self.ansible_command(scenario, self.dir / "playbook.yml", {"ANSIBLE_COLLECTIONS_PATH": paths})


class CeilingTool(Tool):
    name = "ceiling"
    label = "ceiling: minimal SSA client (threads + urllib3)"

    def __init__(self, cfg: Config, name: str | None = None):
        super().__init__(cfg, name)
        if "@" in self.name:
            self.cfg = Config(**{**vars(cfg), "ceiling_parallelism": int(self.name.split("@")[1])})

    def prepare(self) -> None:
        super().prepare()
        (self.dir / "removed.json").write_text(json.dumps(workload.removed_refs(self.cfg.n, self.namespaces)))

    def command(self, scenario):
        argv = [str(PY), str(BENCH / "ceiling.py"), self.cfg.kubeconfig, str(self.variant_dir(VARIANT_FOR[scenario])),
                "--id", spec.compute_id("bench", self.namespaces[0], "Secret", ""),
                "--parallelism", str(self.cfg.ceiling_parallelism)]
        if scenario in ("preview", "prune"):
            argv += ["--delete", str(self.dir / "removed.json")]
        if scenario == "preview":
            argv.append("--dry-run")
        return argv, self.env()


TOOL_CLASSES = {cls.name: cls for cls in (AnsibleTool, CoreTool, KubectlTool, KubectlNoValidateTool, KptTool, K8sTool,
                                           CeilingTool, PingTool)}


# ----- running ---------------------------------------------------------------------------------


def _timed(argv: list[str], report: Path) -> list[str]:
    """Wrap a command so that its peak RSS and CPU are measured by a small parent process.

    ``os.wait4`` from this harness would not do: a child forked from a large Python process starts
    with that process's RSS high-water mark. GNU time (or rsswrap.py) is small.
    """
    if Path("/usr/bin/time").exists():
        return ["/usr/bin/time", "-o", str(report), "-f", "rss_kb=%M wall_s=%e cpu_s=%U+%S", *argv]
    return [str(PY), str(BENCH / "rsswrap.py"), *argv]


def _read_timed(report: Path) -> dict:
    out = {}
    try:
        lines = report.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        if "rss_kb" in fields:
            out = {"rss_kb": int(fields["rss_kb"]),
                   "cpu_s": round(sum(float(x) for x in fields.get("cpu_s", "0").split("+")), 2)}
    return out


def run_process(argv, env, cwd, stdout_path: Path, timeout: float) -> dict:
    """Run one tool process; wall time, exit code, peak RSS of its largest process, CPU of its tree."""
    report = stdout_path.with_suffix(".time")
    report.unlink(missing_ok=True)
    env = dict(env, BENCH_RSS_FILE=str(report)) if not Path("/usr/bin/time").exists() else env
    with open(stdout_path, "wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(_timed(argv, report), env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            timed_out = True
        wall = time.perf_counter() - started
    usage = _read_timed(report)
    return {"wall_s": wall, "rc": proc.returncode, "rss_kb": usage.get("rss_kb"), "cpu_s": usage.get("cpu_s"),
            "timed_out": timed_out}


def supports_reapply(tree: Path) -> bool:
    """Does this collection tree have the reapply option (issue 11)? Its Options say: in engine.py
    until issue 25, in options.py since."""
    core = tree / "plugins" / "module_utils" / "applyset"
    for name in ("options.py", "engine.py"):
        try:
            if "\n    reapply: str" in (core / name).read_text():
                return True
        except OSError:
            continue
    return False


def run_scenario(tool: Tool, scenario: str, admin: Admin, timeout: float) -> dict:
    argv, env = tool.command(scenario)
    before = admin.metrics()
    cpu0 = admin.server_cpu()
    out_file = tool.dir / f"out-{scenario}.log"
    res = run_process(argv, env, str(tool.dir), out_file, timeout)
    cpu1 = admin.server_cpu()
    after = admin.metrics()
    res["server_cpu_s"] = round(cpu1 - cpu0, 3) if admin.server_pids else None
    res["requests"] = request_delta(before, after)
    if tool.rss_from_wrapper:
        res["module"] = tool.module_process(scenario)
        res["module_rss_kb"] = res["module"].get("rss_kb")
    else:
        res["module_rss_kb"] = res["rss_kb"]
    if hasattr(tool, "reapply_mode"):
        res["reapply"] = tool.reapply_mode()
    if tool.name.partition("@")[0] in ("core", "ceiling"):
        try:
            res["client_report"] = json.loads(out_file.read_text().strip().splitlines()[-1])
        except (ValueError, IndexError):
            res["client_report"] = None
    found = admin.count_objects(tool.namespaces)
    res["objects_after"] = found
    res["ok"] = res["rc"] == 0 and found == tool.expected(scenario)
    if not res["ok"]:
        tail = out_file.read_text(errors="replace")[-1500:]
        log(f"  !! {tool.name} {scenario}: rc={res['rc']} objects={found} expected={tool.expected(scenario)}\n{tail}")
    return res


def machine_info() -> dict:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem_kb = 0
    try:
        mem_kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                          if line.startswith("MemTotal")))
    except (OSError, StopIteration):
        pass

    def version(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        except Exception:  # noqa: BLE001
            return None

    k8s_dir = K8sTool.collections_dir()
    k8s_version = None
    if k8s_dir:
        try:
            k8s_version = json.loads((k8s_dir / "ansible_collections/kubernetes/core/MANIFEST.json").read_text())[
                "collection_info"]["version"]
        except (OSError, ValueError, KeyError):
            pass
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_kb / 1048576, 1),
        "kernel": platform.release(), "python": platform.python_version(),
        "loadavg_start": os.getloadavg(),
        "kubectl": version(["kubectl", "version", "--client"]),
        "kpt": version(["kpt", "version"]),
        "ansible_core": version([str(VENV_BIN / "ansible"), "--version"]),
        "kubernetes_core": k8s_version,
    }


def describe_tree(spec_: str, tree: Path) -> dict:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "plugins"], capture_output=True,
                           text=True).stdout.strip()
    digest = hashlib.sha256()
    for path in sorted((tree / "plugins").rglob("*.py")):
        digest.update(path.relative_to(tree).as_posix().encode() + b"\0" + path.read_bytes())
    return {"spec": spec_, "path": str(tree), "repo_head": head,
            "plugins_dirty_at_start": bool(dirty) if spec_ in (".", "snapshot") else None,
            "plugins_sha256": digest.hexdigest()[:16]}


def idle_background(admin: Admin, seconds: float) -> dict:
    """What the control plane itself sends in the tool series while nothing runs."""
    if seconds <= 0:
        return {}
    before = admin.metrics()
    time.sleep(seconds)
    delta = request_delta(before, admin.metrics())
    return {"seconds": seconds, **delta}


def tune_ceiling(admin: Admin, cfg_base: Config, candidates, n: int, reps: int) -> dict:
    """Pick the ceiling's parallelism: fastest median initial apply of N objects."""
    timings = {}
    for p in candidates:
        cfg = Config(n=n, nsc=1, workdir=cfg_base.workdir / "tune", kubeconfig=cfg_base.kubeconfig,
                     parallelism=cfg_base.parallelism, ceiling_parallelism=p, prefix=cfg_base.prefix,
                     rtt_ms=cfg_base.rtt_ms, kinds=cfg_base.kinds)
        tool = CeilingTool(cfg)
        tool.prepare()  # the manifests name the run's namespaces
        runs = []
        admin.create_namespaces(tool.namespaces)
        for _ in range(reps):
            argv, env = tool.command("initial")
            r = run_process(argv, env, str(tool.dir), tool.dir / "out-tune.log", 600)
            runs.append(r["wall_s"])
            admin.clear_namespaces(tool.namespaces)
        admin.delete_namespaces(tool.namespaces)
        timings[p] = runs
        log(f"  ceiling parallelism {p:3d}: {', '.join(f'{t:.2f}s' for t in runs)}")
    best = min(timings, key=lambda p: statistics.median(timings[p]))
    return {"n": n, "timings_s": {str(k): v for k, v in timings.items()}, "best": best}


def tuned_config(admin: Admin, cfg: Config, names, args, results) -> Config:
    """``cfg`` with the ceiling's parallelism tuned at the block's round trip and workload (once per
    pair; a loopback block of the default workload keeps the run's tuning)."""
    if "ceiling" not in names or args.ceiling_parallelism != "auto" or (cfg.rtt_ms == 0 and cfg.kinds == "all"):
        return cfg
    key = f"rtt={cfg.rtt_ms},kinds={cfg.kinds}"
    if key not in results["ceiling_tuning_by_block"]:
        log(f"tuning the ceiling's parallelism at N={args.tune_n}, {key}")
        results["ceiling_tuning_by_block"][key] = tune_ceiling(admin, cfg, (16, 32, 64), args.tune_n, 2)
    return Config(**{**vars(cfg), "ceiling_parallelism": results["ceiling_tuning_by_block"][key]["best"]})


def run_block(admin: Admin, cfg: Config, names, reps: int, scenarios, args, results: dict, out: Path) -> None:
    """Every repetition of one matrix block: each tool's chain, in rotating order, then a cleanup."""
    tools = [TOOL_CLASSES[name.split("@")[0]](cfg, name) for name in names]
    for tool in tools:
        tool.prepare()
        admin.create_namespaces(tool.namespaces)
    where = f"round trip {cfg.rtt_ms} ms" + (", ConfigMaps only" if cfg.kinds == "cm" else "")
    for rep in range(reps):
        order = tools[rep % len(tools):] + tools[:rep % len(tools)]
        if rep % 2:
            order.reverse()
        log(f"N={cfg.n} namespaces={cfg.nsc} {where} rep {rep + 1}/{reps}: {' '.join(t.name for t in order)}")
        for position, tool in enumerate(order):
            tool.before_rep(admin)
            line = []
            chain = [s_ for s_ in tool.scenarios if s_ in scenarios]
            for scenario in chain:
                res = run_scenario(tool, scenario, admin, args.timeout)
                # the chain tells the report what a scenario must write (a prune
                # without the 10% change before it also applies the changed tenth)
                res.update(tool=tool.name, n=cfg.n, namespaces=cfg.nsc, rep=rep, scenario=scenario,
                           position=position, loadavg=os.getloadavg()[0], chain=chain, rtt_ms=cfg.rtt_ms,
                           kinds=cfg.kinds)
                results["runs"].append(res)
                line.append(f"{scenario} {res['wall_s']:.2f}s{'' if res['ok'] else ' FAILED'}")
            cleanup = admin.clear_namespaces(tool.namespaces)
            tool.after_rep(admin)
            log(f"  {tool.name:8s} {' | '.join(line)}  (cleanup {cleanup:.1f}s)")
            out.write_text(json.dumps(results, indent=1))  # a checkpoint after every chain


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    run = sub.add_parser("run", help="run the benchmark (default)")
    run.add_argument("--matrix", default=DEFAULT_MATRIX,
                     help="space-separated N:NAMESPACE_COUNTS:TOOLS[:REPS[:SCENARIOS[:OPTIONS]]] entries (TOOLS 'all' or "
                     "comma-separated; SCENARIOS comma-separated, in chain order, empty: all; OPTIONS rtt=MS "
                     "(a round trip through a delaying proxy: 0, 50, 150) and kinds=all|cm (ConfigMaps only)); "
                     f"default: {DEFAULT_MATRIX!r}, about {DEFAULT_MINUTES} minutes on a quiet 2-core machine ("
                     + ", ".join(f"{entry}: ~{minutes:g} min" for entry, minutes in DEFAULT_BLOCKS)
                     + ", plus ~2 min of ceiling tuning and idle measurement; estimated from the per-run wall "
                     "times in benchmarks/results)")
    run.add_argument("--preset", choices=sorted(PRESETS),
                     help="a named matrix instead of --matrix: scale = " + "; ".join(
                         f"{entry} (~{minutes:g} min)" for entry, minutes in SCALE_BLOCKS))
    run.add_argument("--sizes", help="only these N (comma-separated)")
    run.add_argument("--namespaces", help="only these namespace counts (comma-separated)")
    run.add_argument("--tools", help="only these tools (comma-separated): " + ",".join(ALL_TOOLS))
    run.add_argument("--reps", type=int, default=3)
    run.add_argument("--parallelism", type=int, default=None,
                     help="our module's parallelism option (default: not set, it follows the round trip)")
    run.add_argument("--rtt", type=int, default=None,
                     help="round trip in ms for every block (through a delaying proxy), overriding the blocks' rtt=")
    run.add_argument("--reapply", choices=REAPPLY_MODES, default="changed",
                     help="our module's reapply option (recorded with every run; a tree without the option "
                     "always reapplies and is recorded so)")
    run.add_argument("--ceiling-parallelism", default="auto", help="a number, or auto (tune at --tune-n)")
    run.add_argument("--tune-n", type=int, default=1000)
    run.add_argument("--tree", default="snapshot",
                     help="collection tree to benchmark: 'snapshot' (a copy of this work tree's plugins taken at "
                     "the start, the default), '.' (the live work tree), git:REV (a commit), or a directory")
    run.add_argument("--kubeconfig", help="use this cluster (admin rights, /metrics readable) instead of starting one")
    run.add_argument("--state-dir", default=str(BENCH_STATE / "cluster"), help="state dir of the local control plane")
    run.add_argument("--keep-cluster", action="store_true")
    run.add_argument("--workdir", default=str(BENCH_STATE / "work"))
    run.add_argument("--out", help="results JSON (default benchmarks/results/bench-<time>.json)")
    run.add_argument("--timeout", type=float, default=900)
    run.add_argument("--idle", type=float, default=20, help="seconds of idle background measurement")
    run.add_argument("--no-setup", action="store_true",
                     help="do not pip-install kubernetes.core when it is missing (the k8s tool is skipped)")
    run.add_argument("--smoke", action="store_true",
                     help="CI smoke preset: N=50, 1 namespace, 1 rep; ours, the ceiling, and kubectl's apply")
    prof = sub.add_parser("profile", help="pyinstrument profiles of the core library and of ansible-playbook")
    prof.add_argument("--n", type=int, default=1000)
    prof.add_argument("--scenario", default="noop", choices=SCENARIOS)
    prof.add_argument("--tree", default="snapshot")
    prof.add_argument("--kubeconfig")
    prof.add_argument("--state-dir", default=str(BENCH_STATE / "cluster"))
    prof.add_argument("--keep-cluster", action="store_true")
    prof.add_argument("--workdir", default=str(BENCH_STATE / "work"))
    prof.add_argument("--parallelism", type=int, default=None)
    sub.add_parser("setup", help=f"install kubernetes.core ({ANSIBLE_PKG_SPEC} from PyPI) into {K8S_VENV}")
    rep = sub.add_parser("report", help="render the plot and tables from a results file")
    rep.add_argument("results", nargs="*", help="results files (merged); default: the newest")
    rep.add_argument("--update-docs", action="store_true")
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("run", "setup", "report", "profile", "-h", "--help"):
        argv.insert(0, "run")
    args = ap.parse_args(argv)
    if args.cmd == "setup":
        return setup_k8s()
    if args.cmd == "profile":
        return run_profile(args)
    if args.cmd == "report":
        import report

        return report.main(args.results, update_docs=args.update_docs)
    return run_benchmark(args)


def start_cluster(args) -> tuple[str, Path | None, list | None]:
    """(kubeconfig, state dir, local-cluster command to stop it) for --kubeconfig or our own cluster."""
    if args.kubeconfig:
        return args.kubeconfig, None, None
    state_dir = Path(args.state_dir)
    lc = [str(ROOT / "hack" / "local-cluster"), "--state-dir", str(state_dir)]
    for _ in range(3):
        if subprocess.run(lc + ["up"]).returncode == 0:
            break
        subprocess.run(lc + ["down"])
    else:
        raise SystemExit("could not start the local control plane")
    kubeconfig = subprocess.run(lc + ["kubeconfig"], capture_output=True, text=True, check=True).stdout.strip()
    return kubeconfig, state_dir, lc


def install_crds(admin: Admin) -> None:
    for crd in (workload.WIDGET_CRD, workload.APPLYSET_CRD):
        admin.apply(crd)
        admin.wait_crd(crd["metadata"]["name"])


def run_profile(args) -> int:
    """Profile one scenario at N objects: the core library in-process, then ansible-playbook's controller."""
    use_tree(args.tree)
    kubeconfig, state_dir, lc = start_cluster(args)
    try:
        admin = Admin(kubeconfig, state_dir)
        install_crds(admin)
        time.sleep(2)
        cfg = Config(n=args.n, nsc=1, workdir=Path(args.workdir), kubeconfig=kubeconfig,
                     parallelism=args.parallelism, ceiling_parallelism=16,
                     prefix=f"b{secrets.token_hex(2)}" if args.kubeconfig else "b")
        out_dir = BENCH / "results"
        out_dir.mkdir(parents=True, exist_ok=True)
        for tool in (CoreTool(cfg), AnsibleTool(cfg)):
            tool.prepare()
            admin.create_namespaces(tool.namespaces)
            chain = SCENARIOS[:SCENARIOS.index(args.scenario) + 1]
            for scenario in chain:
                argv, env = tool.command(scenario)
                target = out_dir / f"profile-{tool.name}-{args.n}-{scenario}.txt"
                if scenario == args.scenario:
                    if tool.name == "core":
                        argv += ["--profile", str(target)]
                    else:  # the controller process; the module's own time is the core's, plus AnsiballZ
                        argv = [str(PY), "-m", "pyinstrument", "--no-color", "--unicode", "-o", str(target),
                                "-r", "text", *argv]
                res = run_process(argv, env, str(tool.dir), tool.dir / f"out-profile-{scenario}.log", 900)
                log(f"  {tool.name} {scenario}: {res['wall_s']:.2f}s rc={res['rc']}"
                    + (f" -> {target.relative_to(ROOT)}" if scenario == args.scenario else ""))
            admin.clear_namespaces(tool.namespaces)
            tool.after_rep(admin)
            admin.delete_namespaces(tool.namespaces)
        return 0
    finally:
        if lc and not args.keep_cluster:
            subprocess.run(lc + ["down"])


def setup_k8s() -> int:
    if K8sTool.collections_dir():
        log(f"kubernetes.core already installed under {K8sTool.collections_dir()}")
        return 0
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(K8S_VENV)], check=True)
    site = next(K8S_VENV.glob("lib/python*/site-packages"))
    # No dependencies: ansible-core, kubernetes and PyYAML come from the project venv.
    proc = subprocess.run([str(PY), "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                           ANSIBLE_PKG_SPEC])
    if proc.returncode:
        log("could not install the ansible package from PyPI; the k8s tool will be skipped")
    return proc.returncode


def use_tree(spec_: str) -> Path:
    """Point the ansible and core tools at a collection tree (a directory, or git:REV exported)."""
    global TREE
    if spec_.startswith("git:"):
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", spec_[4:]], capture_output=True, text=True,
                             check=True).stdout.strip()
        tree = BENCH_STATE / f"tree-{rev[:12]}"
        if not tree.exists():
            tmp = tree.with_suffix(".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
            tmp.rename(tree)
    elif spec_ == "snapshot":
        # The work tree as it is now, frozen for the whole run (others may edit it meanwhile).
        tree = BENCH_STATE / "tree-snapshot"
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        for name in ("plugins", "meta", "galaxy.yml"):
            src = ROOT / name
            if src.is_dir():
                shutil.copytree(src, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
            elif src.exists():
                shutil.copy2(src, tree / name)
    else:
        tree = Path(spec_).resolve() if spec_ != "." else ROOT
    TREE = tree
    link = COLLECTIONS / "ansible_collections" / "applyset" / "kubernetes"
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(tree)
    return tree


def run_benchmark(args) -> int:
    run_started = time.monotonic()
    if args.smoke:
        # kubectl only applies here: its prune waits 200 ms per DELETE (client-side rate limit)
        args.matrix = "50:1:ansible,core,ceiling 50:1:kubectl:1:initial,noop"
        args.reps = 1
        if args.ceiling_parallelism == "auto":
            args.ceiling_parallelism = "16"
        args.idle = min(args.idle, 2)
    if args.preset:
        args.matrix = PRESETS[args.preset]
    tree = use_tree(args.tree)
    log(f"benchmarking the collection tree {tree}")
    only_n = {int(x) for x in args.sizes.split(",")} if args.sizes else None
    only_ns = {int(x) for x in args.namespaces.split(",")} if args.namespaces else None
    only_tools = set(args.tools.split(",")) if args.tools else None
    matrix = []  # (n, nsc, [tools])
    for entry in args.matrix.split():
        fields = entry.split(":")
        n_text, ns_text, tools_text = fields[:3]
        reps = int(fields[3]) if len(fields) > 3 and fields[3] else args.reps
        scenarios = tuple(fields[4].split(",")) if len(fields) > 4 and fields[4] else SCENARIOS
        options = latency.parse_options(fields[5] if len(fields) > 5 else "")
        if args.rtt is not None:
            options["rtt"] = args.rtt
        if set(scenarios) - set(SCENARIOS):
            raise SystemExit(f"unknown scenarios in --matrix: {fields[4]}")
        names = list(ALL_TOOLS) if tools_text == "all" else tools_text.split(",")
        unknown = {t.split("@")[0] for t in names} - set(ALL_TOOLS)
        if unknown:
            raise SystemExit(f"unknown tools in --matrix: {', '.join(sorted(unknown))}")
        for nsc in (int(x) for x in ns_text.split(",")):
            n = int(n_text)
            if (only_n and n not in only_n) or (only_ns and nsc not in only_ns):
                continue
            names_here = [t for t in names if not only_tools or t in only_tools]
            if names_here:
                matrix.append((n, nsc, names_here, reps, scenarios, options))
    wanted = sorted({t for _, _, names, _, _, _ in matrix for t in names}, key=tool_order)
    if "k8s" in wanted and K8sTool.unavailable() and not args.no_setup:
        log(f"installing kubernetes.core ({ANSIBLE_PKG_SPEC} from PyPI) for the k8s tool")
        setup_k8s()
    tools_available, skipped = [], {}
    for name in wanted:
        reason = TOOL_CLASSES[name.split("@")[0]].unavailable()
        if reason:
            skipped[name] = reason
            log(f"skipping {name}: {reason}")
        else:
            tools_available.append(name)

    kubeconfig, state_dir, cluster = start_cluster(args)
    # Two runs on one cluster (a smoke test while someone benchmarks) must not share namespaces.
    prefix = f"b{secrets.token_hex(2)}" if args.kubeconfig else "b"
    try:
        admin = Admin(kubeconfig, state_dir)
        install_crds(admin)
        if "kpt" in tools_available:
            subprocess.run(["kpt", "live", "install-resource-group"], env={**os.environ, "KUBECONFIG": kubeconfig},
                           capture_output=True, check=True)
        time.sleep(0.5 if args.smoke else 2)  # let discovery settle after the CRDs
        workdir = Path(args.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        results = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine_info(),
                   "tree": describe_tree(args.tree, tree),
                   "config": {k: v for k, v in vars(args).items() if k not in ("cmd",)},
                   "skipped_tools": skipped, "tools": {n: TOOL_CLASSES[n.split("@")[0]].label for n in tools_available},
                   # what the expectations of the report depend on: with "changed" a run sends only
                   # the members that differ; "always" (and every results file without this field,
                   # from before issue 11) one apply per member on every run
                   "reapply": args.reapply if supports_reapply(tree) else "always",
                   "default_matrix": args.matrix == DEFAULT_MATRIX and not (args.sizes or args.namespaces or args.tools),
                   "blocks": [], "namespace_prefix": prefix}
        log(f"machine: {results['machine']['cores']} cores, {results['machine']['cpu']}, load {os.getloadavg()}")
        results["background"] = idle_background(admin, args.idle)
        if results["background"]:
            log(f"idle background over {args.idle:.0f}s: {results['background']['by_verb']}")
        base_cfg = Config(n=0, nsc=1, workdir=workdir, kubeconfig=kubeconfig, parallelism=args.parallelism,
                          ceiling_parallelism=16, reapply=args.reapply, prefix=prefix)
        loopback_ceiling = any("ceiling" in names and opts["rtt"] == 0 and opts["kinds"] == "all"
                               for _, _, names, _, _, opts in matrix)
        if args.ceiling_parallelism == "auto" and not loopback_ceiling:
            ceiling_p = 16  # every block with the ceiling is tuned at its own round trip (tuned_config)
        elif args.ceiling_parallelism == "auto":
            log(f"tuning the ceiling's parallelism at N={args.tune_n}")
            results["ceiling_tuning"] = tune_ceiling(admin, base_cfg, (8, 16, 32), args.tune_n, 2)
            ceiling_p = results["ceiling_tuning"]["best"]
        else:
            ceiling_p = int(args.ceiling_parallelism)
        results["ceiling_parallelism"] = ceiling_p
        results["ceiling_tuning_by_block"] = {}
        results["runs"] = []
        started = time.monotonic()
        out = Path(args.out) if args.out else BENCH / "results" / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        for n, nsc, names_here, reps, scenarios, options in matrix:
            with latency.Link(kubeconfig, options["rtt"], workdir) as link, workload.kinds(options["kinds"]):
                names = [t for t in names_here if t in tools_available]
                block_started = time.monotonic()
                base = Config(n=n, nsc=nsc, workdir=workdir, kubeconfig=link.kubeconfig, parallelism=args.parallelism,
                              ceiling_parallelism=ceiling_p, reapply=args.reapply, prefix=prefix,
                              rtt_ms=options["rtt"], kinds=options["kinds"])
                cfg = tuned_config(admin, base, names, args, results)
                run_block(admin, cfg, names, reps, scenarios, args, results, out)
                admin.delete_namespaces([ns for name in names for ns in TOOL_CLASSES[name.split("@")[0]](cfg, name).namespaces],
                                        wait=not args.smoke)
                # for the estimates of the next default matrix: cleanups included
                results["blocks"].append({"n": n, "namespaces": nsc, "tools": names, "reps": reps,
                                          "scenarios": list(scenarios), "rtt_ms": options["rtt"],
                                          "kinds": options["kinds"], "ceiling_parallelism": cfg.ceiling_parallelism,
                                          "wall_s": round(time.monotonic() - block_started, 1)})
        results["elapsed_s"] = round(time.monotonic() - started, 1)
        # the whole invocation as `make bench` takes it (cluster start, tuning, idle and cleanups)
        results["total_wall_s"] = round(time.monotonic() - run_started, 1)
        results["summary"] = summarize(results["runs"])
        out.write_text(json.dumps(results, indent=1))
        log(f"results: {out} ({results['elapsed_s']}s of runs, {results['total_wall_s']}s in all)")
        failed = [r for r in results["runs"] if not r["ok"]]
        if failed:
            log(f"{len(failed)} runs failed their check")
        return 1 if failed else 0
    finally:
        if cluster and not args.keep_cluster:
            subprocess.run(cluster + ["down"])


if __name__ == "__main__":
    sys.exit(main())
