"""Real stacks, as their projects release them, through the deploy and uninstall roles (issue #16).

Each stack is read at test time from the Go module cache (``go env GOMODCACHE``); a module
missing there is fetched with ``go mod download``, and a stack that cannot be had is skipped
with the reason, never counted as a pass. Nothing of them is copied into the repository.

Each stack is one set, through ``roles/deploy`` and ``roles/uninstall``: install with wait,
run again as a no-op (changed=0), preview the prune of a part in check mode (nothing changes),
prune it, verify the set (``applyset_verify``), uninstall (the role waits until every member is
gone), install again at once, and uninstall at the end. The step times are printed (no timed
assertions). The stacks and versions are listed in docs/stacks.md.

Left out of the stacks, on purpose: APIServices and admission webhook configurations. kwok
only pretends to run Pods, so they would send the shared test cluster's API traffic (every
Ingress, every metrics.k8s.io discovery) to servers that do not exist, and other tests
running at the same time would fail.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from ansible_cli import run_playbook
from test_conformance_corpus import module_cache
from test_roles import write

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "plugins" / "module_utils"))

from applyset.kube import client as core_kube  # noqa: E402
from applyset.spec import GroupKind  # noqa: E402

# Kinds that route live API traffic to the stack's own Pods (see the module docstring).
LEFT_OUT = ("APIService", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")


@dataclass
class Stack:
    name: str  # as listed in docs/stacks.md
    module: str  # Go module path
    version: str
    files: list  # module-relative files, applied as one set
    prunable: list = field(default_factory=list)  # files (or "file#Kind/name" documents) pruned in the test
    templates: dict = field(default_factory=dict)  # module-relative Jinja2 templates -> their variables
    # (Kind, name) that the first re-run reports configured although nothing in them changed.
    noop_quirks: frozenset = frozenset()


STACKS = [
    Stack("gateway-api (standard channel CRDs)", "sigs.k8s.io/gateway-api", "v1.6.3",
          files=[f"config/crd/standard/gateway.networking.k8s.io_{kind}.yaml" for kind in (
              "gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants", "backendtlspolicies",
              "listenersets", "tcproutes", "tlsroutes", "udproutes", "vap_safeupgrades")],
          prunable=["config/crd/standard/gateway.networking.k8s.io_udproutes.yaml",
                    "config/crd/standard/gateway.networking.k8s.io_tcproutes.yaml"],
          # The API server rewrites a ValidatingAdmissionPolicy's managedFields (a new
          # resourceVersion, nothing else) on the first apply after kube-controller-manager's
          # status controller applied its type-checking status; kubectl sees the same. The
          # change is counted by resourceVersion, so that one re-run says "configured".
          noop_quirks=frozenset({("ValidatingAdmissionPolicy", "safe-upgrades.gateway.networking.k8s.io")})),
    Stack("prometheus-operator (bundle.yaml)", "github.com/prometheus-operator/prometheus-operator", "v0.85.0",
          files=["bundle.yaml"], prunable=["bundle.yaml#Service/prometheus-operator"]),
    Stack("ingress-nginx (deploy/static/provider/cloud)", "k8s.io/ingress-nginx",
          "v0.0.0-20240708192948-52c50467d67d",
          files=["deploy/static/provider/cloud/deploy.yaml"],
          prunable=["deploy/static/provider/cloud/deploy.yaml#Job/ingress-nginx-admission-patch",
                    "deploy/static/provider/cloud/deploy.yaml#IngressClass/nginx"]),
    Stack("kube-state-metrics (examples/standard)", "k8s.io/kube-state-metrics/v2", "v2.13.0",
          files=[f"examples/standard/{f}.yaml" for f in (
              "cluster-role", "cluster-role-binding", "service-account", "deployment", "service")],
          prunable=["examples/standard/service.yaml"]),
    Stack("metrics-server (Kubernetes cluster add-on)", "k8s.io/kubernetes", "v1.34.4",
          files=[f"cluster/addons/metrics-server/{f}.yaml" for f in (
              "auth-delegator", "auth-reader", "metrics-server-service", "resource-reader")],
          templates={"cluster/addons/metrics-server/metrics-server-deployment.yaml": {
              "base_metrics_server_cpu": "40m", "base_metrics_server_memory": "40Mi",
              "metrics_server_memory_per_node": 4, "metrics_server_min_cluster_size": 16}},
          prunable=["cluster/addons/metrics-server/auth-reader.yaml"]),
]


def module_dir(stack: Stack) -> tuple[Path | None, str]:
    """The module's directory in the cache, fetched when missing; else None and why."""
    cache = module_cache()
    escaped = re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), stack.module)
    found = cache / f"{escaped}@{stack.version}"
    if found.is_dir():
        return found, ""
    try:
        proc = subprocess.run(["go", "mod", "download", "-json", f"{stack.module}@{stack.version}"],
                              capture_output=True, text=True, timeout=300, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"{stack.module}@{stack.version} is not in {cache} and go mod download failed: {err}"
    try:
        info = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError:
        info = {}
    if info.get("Dir") and Path(info["Dir"]).is_dir():
        return Path(info["Dir"]), ""
    reason = info.get("Error") or proc.stderr.strip() or "no directory"
    return None, f"{stack.module}@{stack.version} is not in {cache} and go mod download failed: {reason}"


DOCUMENT_SEPARATOR = re.compile(r"(?m)^---[ \t]*$")


def documents(text: str) -> list[str]:
    return [doc for doc in DOCUMENT_SEPARATOR.split(text) if re.search(r"(?m)^kind:", doc)]


def kind_and_name(doc: str) -> str:
    kind = re.search(r"(?m)^kind:\s*(\S+)", doc).group(1)
    name = re.search(r"(?m)^metadata:\s*\n(?:[ \t]+.*\n)*?[ \t]+name:\s*(\S+)", doc)
    return f"{kind}/{name.group(1) if name else '?'}"


def materialise(stack: Stack, root: Path, work: Path) -> tuple[list, list, list]:
    """(all files, files after the prune, templates) as paths on disk.

    Files are used in place; only a file that holds a left-out kind, or of which the test
    prunes single documents, is split document by document (its text unchanged) into
    ``work``. Returns the files of the whole stack and of the stack less its prunable part.
    """
    whole, after_prune = [], []
    prune_docs = {}
    for entry in stack.prunable:
        path, _, doc = entry.partition("#")
        if doc:
            prune_docs.setdefault(path, set()).add(doc)
    for rel in stack.files:
        path = root / rel
        text = path.read_text()
        docs = documents(text)
        needs_split = rel in prune_docs or any(kind_and_name(d).split("/")[0] in LEFT_OUT for d in docs)
        if not needs_split:
            whole.append(str(path))
            if rel not in stack.prunable:
                after_prune.append(str(path))
            continue
        kept = [d for d in docs if kind_and_name(d).split("/")[0] not in LEFT_OUT]
        pruned = [d for d in kept if kind_and_name(d) in prune_docs.get(rel, set())]
        missing = prune_docs.get(rel, set()) - {kind_and_name(d) for d in pruned}
        assert not missing, f"{rel} has no {missing} any more: update the stack's prunable list"
        base = work / stack.module.replace("/", "_") / rel.replace("/", "_")
        base.parent.mkdir(parents=True, exist_ok=True)
        rest = base.with_suffix(".rest.yaml")
        rest.write_text("---".join(d for d in kept if d not in pruned))
        whole.append(str(rest))
        after_prune.append(str(rest))
        if pruned:
            part = base.with_suffix(".pruned.yaml")
            part.write_text("---".join(pruned))
            whole.append(str(part))
    return whole, after_prune, [str(root / t) for t in stack.templates]


STEPS = ["install", "no-op", "prune preview", "prune", "verify", "uninstall", "install again", "final uninstall"]


def write_playbooks(tmp_path: Path) -> None:
    """One playbook runs a stack's whole cycle, so that it costs one Ansible start-up, not one a step.

    Steps: ``install``, ``no-op`` and ``install again`` (the deploy role, whole stack), ``prune
    preview`` (the same in check mode) and ``prune`` (the deploy role, stack less its prunable
    part), ``verify`` (applyset_verify), ``uninstall`` and ``final uninstall`` (the uninstall
    role). Each step's result and time is saved for the test.
    """
    write(tmp_path / "cycle.yml", """
        - name: Run steps on a stack
          hosts: localhost
          gather_facts: false
          # The CRDs of these stacks (gateway-api's, prometheus-operator's) are the largest schemas there are,
          # established by an API server that shares 2 cores with three others in a loaded run: this test
          # proves the stacks' cycle, not how fast CRDs become Established (the default stays 60 s elsewhere).
          module_defaults:
            applyset.kubernetes.applyset_apply:
              crd_timeout: 300
          tasks:
            - name: Run the steps, saving what was done even when one fails
              block:
                - name: Run each step
                  ansible.builtin.include_tasks: step.yml
                  loop: "{{ steps }}"
                  loop_control:
                    loop_var: step
              always:
                - name: Save the results for the test
                  ansible.builtin.copy:
                    content: "{{ stack_results | default([]) | to_json }}"
                    dest: "{{ result_file }}"
                    mode: "0600"
        """)
    write(tmp_path / "step.yml", """
        - name: Start the clock
          ansible.builtin.set_fact:
            step_started: "{{ now().timestamp() }}"
        - name: Deploy
          ansible.builtin.include_role:
            name: applyset.kubernetes.deploy
            apply:
              check_mode: "{{ step == 'prune preview' }}"
          vars:
            deploy_app: stack
            deploy_namespace: "{{ app_namespace }}"
            deploy_files: "{{ stack_files_after_prune if step.startswith('prune') else stack_files }}"
            deploy_templates: "{{ stack_templates }}"
            deploy_allow_prune_kinds: [CustomResourceDefinition, Namespace]
            deploy_wait_timeout: 120
          when: step in ['install', 'no-op', 'prune preview', 'prune', 'install again']
        - name: Verify
          applyset.kubernetes.applyset_verify:
            parent: stack
            namespace: "{{ app_namespace }}"
          register: stack_verify
          when: step == 'verify'
        - name: Uninstall
          ansible.builtin.include_role:
            name: applyset.kubernetes.uninstall
          vars:
            uninstall_app: stack
            uninstall_namespace: "{{ app_namespace }}"
            uninstall_allow_prune_kinds: [CustomResourceDefinition, Namespace]
            uninstall_wait_timeout: 120
          when: step.endswith('uninstall')
        - name: Record the step
          ansible.builtin.set_fact:
            stack_results: >-
              {{ stack_results | default([]) + [{
                   'step': step,
                   'seconds': now().timestamp() - (step_started | float),
                   'result': stack_verify if step == 'verify'
                             else uninstall_result if step.endswith('uninstall') else deploy_result}] }}
        """)
    return tmp_path


@dataclass
class Cycle:
    stack: Stack
    namespace: str = ""
    skipped: str = ""
    whole: list = field(default_factory=list)
    after_prune: list = field(default_factory=list)
    templates: list = field(default_factory=list)
    work: Path | None = None
    runs: list = field(default_factory=list)  # (steps, process, seconds)
    steps: dict = field(default_factory=dict)  # step -> {seconds, result}

    @property
    def failed(self):
        return next((run for run in self.runs if run[1].returncode != 0), None)

    def record(self, cluster, steps):
        proc, elapsed, results = self.run(cluster, steps)
        self.runs.append((steps, proc, elapsed))
        self.steps.update(results)

    def run(self, cluster, steps):
        """Run the steps in one ansible-playbook; (process, seconds, {step: {seconds, result}})."""
        result_file = self.work / f"result-{secrets.token_hex(3)}.json"
        extra = {"app_namespace": self.namespace, "result_file": str(result_file), "steps": steps,
                 "stack_files": self.whole, "stack_files_after_prune": self.after_prune,
                 "stack_templates": self.templates}
        for variables in self.stack.templates.values():
            extra.update(variables)
        started = time.monotonic()
        proc = run_playbook(cluster, self.work.parent / "cycle.yml", extra_vars=extra)
        elapsed = time.monotonic() - started
        results = json.loads(result_file.read_text()) if result_file.exists() else []
        return proc, elapsed, {entry["step"]: entry for entry in results}


@pytest.fixture(scope="module")
def cycles(cluster, kube, tmp_path_factory):
    """Every stack's cycle, started at once, in parallel: they share nothing (each set has its own
    namespace for its parent, and the stacks' objects have distinct names), and most of a cycle is
    waiting on the API server and its controllers. Each test then checks one stack's results."""
    base = tmp_path_factory.mktemp("stacks")
    write_playbooks(base)
    runs = {}
    for stack in STACKS:
        cycle = runs[stack.name] = Cycle(stack)
        root, cycle.skipped = module_dir(stack)
        if root is None:
            continue
        cycle.work = base / re.sub(r"\W+", "-", stack.name)
        cycle.work.mkdir()
        cycle.whole, cycle.after_prune, cycle.templates = materialise(stack, root, cycle.work)
        cycle.namespace = f"t-stack-{re.sub(r'[^a-z0-9]+', '-', stack.name.split()[0])}-{secrets.token_hex(3)}"
        kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": cycle.namespace}})
    # The installs and prunes of all stacks in parallel, then each verify alone, then the
    # uninstalls and reinstalls in parallel: applyset_verify scans every served kind, and a CRD
    # that another stack deletes during that scan makes the scan incomplete.
    ready = [cycle for cycle in runs.values() if not cycle.skipped]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, len(ready))) as pool:
        list(pool.map(lambda cycle: cycle.record(cluster, STEPS[:4]), ready))
        ready = [cycle for cycle in ready if not cycle.failed]
        for cycle in ready:
            cycle.record(cluster, STEPS[4:5])
        list(pool.map(lambda cycle: cycle.record(cluster, STEPS[5:]), ready))
    print(f"\nall stacks: {time.monotonic() - started:.1f}s (installs, prunes, uninstalls in parallel)")
    try:
        yield runs
    finally:
        for cycle in runs.values():
            if cycle.namespace:
                kube.delete(f"/api/v1/namespaces/{cycle.namespace}")


def why_failed(output: str) -> str:
    """The failed task's message, from ansible-playbook's output (its results are long: the message
    would be cut off with the rest)."""
    found = re.findall(r'"msg": "((?:[^"\\]|\\.)*)"', output)
    return "the failed task's message: " + found[-1][:2000] + "\n...\n" if found else ""


@pytest.mark.parametrize("stack", STACKS, ids=[s.name.split()[0] for s in STACKS])
def test_stack_install_noop_prune_verify_uninstall_reinstall(cluster, cycles, stack):
    cycle = cycles[stack.name]
    if cycle.skipped:
        pytest.skip(cycle.skipped)
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    discovery = client.discover()

    def exists(obj) -> bool:
        res = discovery.for_group_kind(GroupKind(obj["apiVersion"].rpartition("/")[0], obj["kind"]))
        return res is not None and client.get(res, obj["name"], obj.get("namespace")) is not None

    steps = cycle.steps
    try:
        print(f"\n{stack.name} {stack.version}: " + ", ".join(
            f"{' + '.join(names)} {seconds:.1f}s" for names, _proc, seconds in cycle.runs) + "; steps: "
            + ", ".join(f"{name} {entry['seconds']:.1f}s" for name, entry in steps.items()))
        failed = cycle.failed
        assert failed is None, f"{' + '.join(failed[0])}: " + why_failed(failed[1].stdout) + failed[1].stdout[-3000:] \
            + failed[1].stderr[-2000:]
        result = {name: entry["result"] for name, entry in steps.items()}

        members = result["install"]["objects"]
        assert {o["action"] for o in members} == {"created"}, members
        changed = {(o["kind"], o["name"]) for o in result["no-op"]["objects"] if o["action"] != "unchanged"}
        assert changed <= stack.noop_quirks, f"the re-run changed {sorted(changed - stack.noop_quirks)}"
        if not stack.noop_quirks:
            assert result["no-op"]["changed"] is False
        elif changed:
            print(f"  known server quirk, reported configured by the re-run: {sorted(changed)}")

        to_prune = {(o["kind"], o["name"]) for o in result["prune preview"]["objects"] if o["action"] == "pruned"}
        assert to_prune, result["prune preview"]["objects"]
        pruned = [o for o in result["prune"]["objects"] if o["action"] == "pruned"]
        assert {(o["kind"], o["name"]) for o in pruned} == to_prune
        # The preview deleted nothing: the real prune still found every object there.
        assert not [o for o in pruned if o.get("reason") == "already gone"], pruned
        assert result["verify"]["ok"] is True, result["verify"]

        assert {o["action"] for o in result["uninstall"]["objects"]} == {"pruned"}
        # Installed right after the uninstall: everything created anew, so nothing of the old
        # set was still there (being deleted) when the install ran.
        assert {o["action"] for o in result["install again"]["objects"]} == {"created"}
        assert result["final uninstall"]["changed"] is True
        discovery = client.discover()
        left = [f"{o['kind']} {o['name']}" for o in members if exists(o)]
        assert left == [], f"still there after the uninstall role returned: {left}"
    finally:
        if "final uninstall" not in steps:  # a step failed: leave nothing behind
            cycle.run(cluster, ["final uninstall"])
