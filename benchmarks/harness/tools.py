"""The tools the benchmark compares, one class each: how a tool's manifests are written, which
command runs a scenario, what must exist afterwards, and what it needs around a repetition.

Ours through ansible-playbook (``ansible``, ``ansible@NAME`` for another tree), our core library
(``core``), a one-task ping playbook (``ping``), kubectl (``kubectl``, ``kubectl-nv``), kpt,
kubernetes.core's k8s module (``k8s``) and the minimal ceiling client (``ceiling``, ``ceiling@P``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import workload
from harness import trees
from harness.cluster import Admin
from harness.paths import ANSIBLE_PKG_SPEC, BENCH, BENCH_STATE, COLLECTIONS, K8S_VENV, PY, ROOT, VENV_BIN, log
from harness.trees import supports_reapply
from applyset import spec
from summary import SCENARIOS

VARIANT_FOR = {"initial": "base", "noop": "base", "change": "changed", "preview": "pruned", "prune": "pruned"}


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
    program = ""  # the peer's binary, which must be on PATH

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
        return None if not cls.program or shutil.which(cls.program) else f"{cls.program} is not on PATH"

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
        return BENCH_STATE / f"tree-{self.other_tree()}" if self.other_tree() else trees.TREE

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
    program = "kubectl"

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
    program = "kpt"

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
