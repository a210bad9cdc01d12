"""Start, check and stop a real Kubernetes control plane on 127.0.0.1.

Components: etcd, kube-apiserver, kube-controller-manager (garbage collection,
namespace deletion, Deployments, ServiceAccounts), kube-scheduler and kwok (one
fake Node whose Pods become Running and Ready). All listen on loopback ports
chosen at start; TLS everywhere but etcd's loopback client port.

Everything the cluster owns lives in one state directory: certificates, etcd
data, logs, the admin kubeconfig and ``state.json`` with the pids it started.
``down`` stops exactly those pids (checked against their command line, so a
recycled pid is never signalled) and nothing else.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from .build import KUBERNETES_VERSION, REPO_ROOT, ensure_binaries
from .pki import PKI

DEFAULT_STATE_DIR = REPO_ROOT / ".state" / "local-cluster"
NODE_NAME = "kwok-node-0"
START_TIMEOUT = float(os.environ.get("APPLYSET_CLUSTER_START_TIMEOUT", "120"))
STOP_TIMEOUT = 20.0
# Identities of the components; the bootstrap RBAC policy binds roles to these
# user names, so no extra RBAC objects are needed.
CLIENTS = {
    "admin": ("admin", "system:masters"),
    "controller-manager": ("system:kube-controller-manager", None),
    "scheduler": ("system:kube-scheduler", None),
    "kwok": ("kwok-controller", "system:masters"),
}


class ClusterError(RuntimeError):
    """The control plane could not be started, checked or stopped."""


class PortTaken(ClusterError):
    """A component could not bind the port chosen for it: something took it after ``free_port``
    (often another component's outgoing connection, whose local port the kernel picks from the
    same range). Starting again with new ports gets past it."""


# How many times ``up`` starts the control plane when a chosen port was taken meanwhile.
PORT_RACE_ATTEMPTS = 3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _port_from_env(name: str) -> int:
    """A fixed port from the environment, or a free one.

    A fixed port that is already taken is refused up front with a clear
    message, instead of letting the component die with a bind error.
    """
    value = os.environ.get(f"APPLYSET_CLUSTER_{name}_PORT")
    if not value:
        return free_port()
    port = int(value)
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as err:
            raise ClusterError(
                f"port {port} (APPLYSET_CLUSTER_{name}_PORT) is already in use on 127.0.0.1: {err}. "
                f"Unset the variable to pick a free port, or stop what listens there."
            ) from None
    return port


def _proc_cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _is_ours(pid: int, binary: str) -> bool:
    cmdline = _proc_cmdline(pid)
    return bool(cmdline) and cmdline[0] == binary


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class Process:
    name: str
    binary: str
    pid: int
    # Only in the process that started it. Right after exec, /proc/PID/cmdline can
    # still read empty, so liveness during start-up comes from the Popen handle.
    popen: subprocess.Popen | None = field(default=None, repr=False, compare=False)

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return _is_ours(self.pid, self.binary)

    def to_state(self) -> dict:
        return {"name": self.name, "binary": self.binary, "pid": self.pid}


@dataclass
class LocalCluster:
    state_dir: Path = DEFAULT_STATE_DIR
    processes: list[Process] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)

    # ----- paths -----------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "admin.kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.state_dir / "state.json"

    @property
    def logs(self) -> Path:
        return self.state_dir / "logs"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    # ----- state ------------------------------------------------------------------
    def _save(self) -> None:
        self.state_file.write_text(
            json.dumps(
                {
                    "kubernetes_version": KUBERNETES_VERSION,
                    "server": self.server,
                    "kubeconfig": str(self.kubeconfig),
                    "ports": self.ports,
                    "processes": [p.to_state() for p in self.processes],
                },
                indent=2,
            )
        )

    def load(self) -> bool:
        """Read state.json; False when there is no recorded cluster."""
        try:
            data = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return False
        self.ports = data.get("ports", {})
        self.processes = [Process(**p) for p in data.get("processes", [])]
        return True

    def running(self) -> dict[str, bool]:
        return {p.name: p.alive() for p in self.processes}

    # ----- HTTP helpers -------------------------------------------------------------
    def _ssl_context(self, client: str | None = "admin") -> ssl.SSLContext:
        pki = PKI(self.state_dir / "pki")
        ctx = ssl.create_default_context(cafile=str(pki.ca_crt))
        if client:
            crt, key = pki.client_files(client)
            ctx.load_cert_chain(str(crt), str(key))
        return ctx

    def request(self, method: str, path: str, body: dict | None = None, timeout: float = 10):
        """Send one admin request; returns (status, parsed JSON or text)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=self._ssl_context(), timeout=timeout) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read(), err.code
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    # ----- start ------------------------------------------------------------------
    def _start(self, name: str, binary: Path, args: list[str]) -> Process:
        self.logs.mkdir(parents=True, exist_ok=True)
        with open(self.logs / f"{name}.log", "ab") as log:
            # A new session: the cluster outlives the `up` command and is not hit
            # by a Ctrl-C meant for the caller; `down` stops it by pid.
            popen = subprocess.Popen(
                [str(binary), *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.state_dir,
            )
        proc = Process(name=name, binary=str(binary), pid=popen.pid, popen=popen)
        self.processes.append(proc)
        self._save()
        return proc

    def _log_tail(self, name: str, lines: int = 15) -> str:
        try:
            text = (self.logs / f"{name}.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def _wait(self, what: str, proc: Process | None, check, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            if proc is not None and not proc.alive():
                tail = self._log_tail(proc.name)
                taken = "address already in use" in tail
                hint = " (a port it needs is already in use on 127.0.0.1)" if taken else ""
                raise (PortTaken if taken else ClusterError)(
                    f"{proc.name} exited while waiting for {what}{hint}. Last lines of "
                    f"{self.logs / (proc.name + '.log')}:\n{tail}"
                )
            try:
                ok = check()
                if ok is True:
                    return
                last = ok
            except (OSError, ssl.SSLError, urllib.error.URLError) as err:
                last = err
            time.sleep(0.2)
        detail = f"; last check said: {last}" if last is not None else ""
        logs = f"; see {self.logs / (proc.name + '.log')}" if proc else ""
        raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}{detail}{logs}")

    def _http_ok(self, url: str, client: str | None = None, insecure: bool = False):
        def check():
            if url.startswith("https"):
                ctx = self._ssl_context(client)
                if insecure:
                    ctx.check_hostname = False
                    ctx.verify_mode = ssl.CERT_NONE
            else:
                ctx = None
            try:
                with urllib.request.urlopen(url, context=ctx, timeout=3) as resp:
                    return resp.status == 200 or f"HTTP {resp.status}"
            except urllib.error.HTTPError as err:
                return f"HTTP {err.code}: {err.read()[:200]!r}"

        return check

    def _admin_get_ok(self, path: str, predicate=lambda body: True):
        def check():
            status, body = self.request("GET", path, timeout=3)
            if status != 200:
                return f"GET {path}: HTTP {status}"
            return predicate(body) or f"GET {path}: not ready yet"

        return check

    def up(self, log=print) -> None:
        """Start the control plane unless it already runs; wait until it is usable."""
        if self.load():
            alive = self.running()
            if alive and all(alive.values()):
                log(f"local cluster already running at {self.server} (kubeconfig {self.kubeconfig})")
                return
            # Leftovers of a crashed or half-stopped run: stop what is ours, start anew.
            self.down(log=lambda *_: None)
        binaries = ensure_binaries(log=log)
        started = time.monotonic()
        for attempt in range(1, PORT_RACE_ATTEMPTS + 1):
            try:
                self._start_fresh(binaries, log)
                break
            except PortTaken as err:
                if attempt == PORT_RACE_ATTEMPTS:
                    raise
                log(f"a port chosen for the control plane was taken meanwhile; starting again with new ports "
                    f"({str(err).splitlines()[0]})")
        log(
            f"local cluster {KUBERNETES_VERSION} ready at {self.server} in "
            f"{time.monotonic() - started:.1f}s; kubeconfig: {self.kubeconfig}"
        )

    def _start_fresh(self, binaries: dict[str, Path], log) -> None:
        """Start every component from an empty state directory; on any failure, stop what started."""
        if self.state_dir.exists():
            shutil.rmtree(self.state_dir)
        self.state_dir.mkdir(parents=True)
        self.processes = []
        try:
            self._start_all(binaries, log)
        except BaseException:
            self.down(log=lambda *_: None)
            raise

    def _start_all(self, binaries: dict[str, Path], log) -> None:
        pki = PKI(self.state_dir / "pki")
        pki.create(CLIENTS)
        self.ports = {
            "etcd": _port_from_env("ETCD"),
            "etcd_peer": free_port(),
            "apiserver": _port_from_env("API"),
            "controller_manager": free_port(),
            "scheduler": free_port(),
            "kwok": free_port(),
        }
        for stem in CLIENTS:
            self._write_kubeconfig(stem, self.state_dir / f"{stem}.kubeconfig")

        etcd_url = f"http://127.0.0.1:{self.ports['etcd']}"
        peer_url = f"http://127.0.0.1:{self.ports['etcd_peer']}"
        etcd = self._start(
            "etcd",
            binaries["etcd"],
            [
                "--name=node0",
                f"--data-dir={self.state_dir / 'etcd-data'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=node0={peer_url}",
                "--unsafe-no-fsync=true",
                "--auto-compaction-retention=1",
                "--quota-backend-bytes=4294967296",
                "--log-level=warn",
            ],
        )
        self._wait("etcd /health", etcd, self._http_ok(f"{etcd_url}/health"))

        api = self._start("kube-apiserver", binaries["kube-apiserver"], self._apiserver_args(pki, etcd_url))
        self._wait("kube-apiserver /readyz", api, self._http_ok(f"{self.server}/readyz", "admin"))
        self._wait("namespace default", api, self._admin_get_ok("/api/v1/namespaces/default"))

        port = self.ports["controller_manager"]
        kcm = self._start(
            "kube-controller-manager",
            binaries["kube-controller-manager"],
            [
                f"--kubeconfig={self.state_dir / 'controller-manager.kubeconfig'}",
                f"--authentication-kubeconfig={self.state_dir / 'controller-manager.kubeconfig'}",
                f"--authorization-kubeconfig={self.state_dir / 'controller-manager.kubeconfig'}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
                f"--service-account-private-key-file={pki.sa_key}",
                f"--root-ca-file={pki.ca_crt}",
                # One identity per controller, as kubeadm does; the bootstrap RBAC
                # policy grants each system:controller:* account what it needs.
                "--use-service-account-credentials=true",
                # The fake node never reports real heartbeats beyond kwok's lease;
                # do not let the lifecycle controller evict its pods in tests.
                "--node-monitor-grace-period=1h",
            ],
        )
        port = self.ports["scheduler"]
        sched = self._start(
            "kube-scheduler",
            binaries["kube-scheduler"],
            [
                f"--kubeconfig={self.state_dir / 'scheduler.kubeconfig'}",
                f"--authentication-kubeconfig={self.state_dir / 'scheduler.kubeconfig'}",
                f"--authorization-kubeconfig={self.state_dir / 'scheduler.kubeconfig'}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            ],
        )
        kwok = self._start(
            "kwok",
            binaries["kwok"],
            [
                f"--kubeconfig={self.state_dir / 'kwok.kubeconfig'}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                "--node-lease-duration-seconds=40",
                "--cidr=10.244.0.1/24",
                "--node-ip=10.244.0.1",
                f"--server-address=127.0.0.1:{self.ports['kwok']}",
            ],
        )
        self._wait(
            "kube-controller-manager /healthz",
            kcm,
            self._http_ok(f"https://127.0.0.1:{self.ports['controller_manager']}/healthz", None, True),
        )
        self._wait(
            "kube-scheduler /healthz",
            sched,
            self._http_ok(f"https://127.0.0.1:{self.ports['scheduler']}/healthz", None, True),
        )
        self._create_node()
        self._wait(
            "ServiceAccount default/default",
            kcm,
            self._admin_get_ok("/api/v1/namespaces/default/serviceaccounts/default"),
        )
        self._wait(f"node {NODE_NAME} Ready", kwok, self._admin_get_ok(f"/api/v1/nodes/{NODE_NAME}", _node_ready))

    def _apiserver_args(self, pki: PKI, etcd_url: str) -> list[str]:
        port = self.ports["apiserver"]
        return [
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            # Loopback cannot be advertised in the `kubernetes` Endpoints, and a
            # machine without a default route has nothing else to advertise.
            "--advertise-address=127.0.0.1",
            "--endpoint-reconciler-type=none",
            f"--cert-dir={pki.dir}",
            f"--tls-cert-file={pki.serving_crt}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_crt}",
            f"--service-account-issuer=https://127.0.0.1:{port}",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            # Room for thousands of Services (benchmarks, load tests).
            "--service-cluster-ip-range=10.96.0.0/16",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            # Tests send bursts of requests from one client; do not throttle them.
            "--max-requests-inflight=1000",
            "--max-mutating-requests-inflight=500",
        ]

    def _write_kubeconfig(self, client: str, path: Path) -> None:
        pki = PKI(self.state_dir / "pki")
        crt, key = pki.client_files(client)

        def b64(p: Path) -> str:
            return base64.b64encode(p.read_bytes()).decode()

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "applyset-local",
                    "cluster": {"server": self.server, "certificate-authority-data": b64(pki.ca_crt)},
                }
            ],
            "users": [
                {
                    "name": client,
                    "user": {"client-certificate-data": b64(crt), "client-key-data": b64(key)},
                }
            ],
            "contexts": [
                {
                    "name": "applyset-local",
                    "context": {"cluster": "applyset-local", "user": client, "namespace": "default"},
                }
            ],
            "current-context": "applyset-local",
        }
        # JSON is valid YAML, so no YAML library is needed here.
        path.write_text(json.dumps(config, indent=2))
        path.chmod(0o600)

    def _create_node(self) -> None:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": NODE_NAME,
                "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
                "labels": {
                    "kubernetes.io/hostname": NODE_NAME,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "type": "kwok",
                },
            },
            "status": {
                "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "500"},
                "capacity": {"cpu": "32", "memory": "256Gi", "pods": "500"},
            },
        }
        status, body = self.request("POST", "/api/v1/nodes", node)
        if status not in (201, 409):
            raise ClusterError(f"creating node {NODE_NAME} failed: HTTP {status}: {body}")

    # ----- stop -------------------------------------------------------------------
    def down(self, log=print) -> None:
        """Stop the processes this state directory started, newest first."""
        if not self.processes and not self.load():
            log("no local cluster recorded; nothing to stop")
            return
        for proc in reversed(self.processes):
            if proc.alive():
                os.kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for proc in reversed(self.processes):
            while proc.alive() and time.monotonic() < deadline:
                _reap(proc.pid)
                time.sleep(0.1)
            if proc.alive():
                os.kill(proc.pid, signal.SIGKILL)
                _reap(proc.pid)
        stopped = [p.name for p in self.processes]
        self.processes = []
        # etcd data is large and useless after a stop; keep logs for debugging.
        shutil.rmtree(self.state_dir / "etcd-data", ignore_errors=True)
        self.state_file.unlink(missing_ok=True)
        log(f"stopped {', '.join(stopped) or 'nothing'}")

    # ----- report -----------------------------------------------------------------
    def status(self) -> dict:
        if not self.load():
            return {"running": False}
        alive = self.running()
        return {
            "running": bool(alive) and all(alive.values()),
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "kubernetes_version": KUBERNETES_VERSION,
            "components": {
                p.name: {"pid": p.pid, "alive": alive[p.name], "rss_mib": round(_rss_kib(p.pid) / 1024, 1)}
                for p in self.processes
            },
        }


def _reap(pid: int) -> None:
    """Collect a child that exited, so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _node_ready(node: dict) -> bool:
    for cond in node.get("status", {}).get("conditions", []) or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False
