"""Run one of the collection's modules without the ``ansible`` command, for tests that prove what the
module and the core do, not what Ansible does around them (issue 44).

``run_module_forked`` takes and returns what ``ansible_cli.run_module`` does (``(rc, result,
output)``) and sends the module what the action plugin would: the arguments with ``definition``,
an inline ``kubeconfig`` and ``helm.values`` packed into the hidden parameter
(``redact.pack_protected_input``), ``provenance`` for ``applyset_apply``, and Ansible's internal
parameters (check mode, diff). The module itself runs as the AnsiballZ wrapper runs it, in a fork
of a process that imported Ansible's module_utils and the collection once (``module_server.py``):
about a tenth of the CPU of ``ansible localhost -m``. The result is shaped as the ``result_file``
callback writes it (``_ansible_*`` keys, ``invocation``, ``diff``, ``exception``, ``warnings``,
``deprecations`` and ``failed`` left out, keys sorted, ``changed`` always present); ``rc`` is the
``ansible`` command's, 0 or 2.

What it does not prove, and where that stays proven through the ``ansible`` and
``ansible-playbook`` commands: the action plugin's vault decryption and relative ``src``
(test_vault.py, test_apply.py's src tests), how Ansible prints and censors a result
(test_secret_output.py, test_rbac_secrets.py, test_output_order.py), and the playbooks and roles
(test_roles.py, test_examples.py, test_shell_examples.py).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ansible_cli import REPO_ROOT, ansible_env, run_module

sys.path.insert(0, str(REPO_ROOT / "plugins" / "module_utils"))
from applyset.inputs import redact  # noqa: E402
from ansible.release import __version__ as ANSIBLE_VERSION  # noqa: E402

SERVER = Path(__file__).resolve().parent / "module_server.py"
# What the result_file callback (CallbackBase._dump_results at verbosity 0) leaves out.
DROPPED = ("invocation", "diff", "exception", "warnings", "deprecations", "failed")


class _Server:
    """One warm module server (``module_server.py``), serving one request at a time."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     cwd=REPO_ROOT, start_new_session=True)
        self._pending = b""
        ready = self._answer(120)
        assert ready == {"ready": True}, ready

    def _answer(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                self.kill()
                raise TimeoutError(f"the module server answered nothing in {timeout:.0f}s")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"the module server ended (exit status {self.proc.wait()})")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return json.loads(line)

    def run(self, request: dict, timeout: float) -> int:
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        return self._answer(timeout)["rc"]

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, 9)  # the server and the module it forked
        except ProcessLookupError:
            pass
        self.proc.wait()


_idle: list[_Server] = []
_lock = threading.Lock()


@atexit.register
def _stop_servers() -> None:
    """The warm servers end with the test process (the pytest worker) that started them."""
    with _lock:
        while _idle:
            _idle.pop().kill()


def _take() -> _Server:
    with _lock:
        if _idle:
            return _idle.pop()
    return _Server()  # runs that overlap (threads of one test) each get a server


def _give_back(server: _Server) -> None:
    with _lock:
        _idle.append(server)


def module_params(module: str, args: dict, *, check: bool, diff: bool, tmpdir: str) -> dict:
    """The parameters the action plugin and Ansible's executor send the module, for an ad hoc run."""
    args = dict(args)
    if module == "applyset_apply" and args.get("provenance") is None:
        args["provenance"] = {"playbook_dir": str(REPO_ROOT), "task": "command-line"}
    params = redact.pack_protected_input(args)
    params.update({
        "_ansible_check_mode": check, "_ansible_no_log": False, "_ansible_debug": False, "_ansible_diff": diff,
        "_ansible_verbosity": 0, "_ansible_version": ANSIBLE_VERSION,
        "_ansible_module_name": f"applyset.kubernetes.{module}", "_ansible_syslog_facility": "LOG_USER",
        "_ansible_selinux_special_fs": ["fuse", "nfs", "vboxsf", "ramfs", "9p", "vfat"], "_ansible_socket": None,
        "_ansible_shell_executable": "/bin/sh", "_ansible_keep_remote_files": False, "_ansible_tmpdir": tmpdir,
        "_ansible_remote_tmp": tmpdir, "_ansible_ignore_unknown_opts": False, "_ansible_target_log_info": None,
        "_ansible_tracebacks_for": []})
    return {"ANSIBLE_MODULE_ARGS": params}


def as_callback_writes(result: dict) -> dict:
    """The module's result as the result_file callback writes it for an ad hoc run: keys sorted (its
    JSON is), ``changed`` always there, the failure in the exit status only."""
    shaped = {k: v for k, v in result.items() if not k.startswith("_ansible_") and k not in DROPPED}
    shaped.setdefault("changed", False)
    return json.loads(json.dumps(shaped, sort_keys=True))


def as_registered(result: dict, failed: bool) -> dict:
    """The module's result as a playbook registers it: every key but Ansible's internal ones,
    ``changed`` always there, ``failed`` when it failed."""
    shaped = {k: v for k, v in result.items() if not k.startswith("_ansible_")}
    shaped.setdefault("changed", False)
    if "warnings" in shaped:
        # The module sends each as a summary of an event; a registered result holds its message.
        shaped["warnings"] = [w["event"]["msg"] if isinstance(w, dict) and "event" in w else w
                              for w in shaped["warnings"]]
    if failed:
        shaped["failed"] = True
    return shaped


def run_module_forked(cluster, module: str, args: dict, *, check: bool = False, diff: bool = False,
                      env: dict | None = None, timeout: float = 300, registered: bool = False):
    """``ansible_cli.run_module``'s contract, without the ``ansible`` command: (rc, result, output);
    with ``registered``, the result as a playbook task registers it (``as_registered``)."""
    with tempfile.TemporaryDirectory(prefix="applyset-module-") as tmpdir:
        request = {"module": module, "params": module_params(module, args, check=check, diff=diff, tmpdir=tmpdir),
                   "env": dict(env or ansible_env(cluster)), "cwd": tmpdir,
                   "stdout": os.path.join(tmpdir, "stdout"), "stderr": os.path.join(tmpdir, "stderr")}
        server = _take()
        try:
            code = server.run(request, timeout)
        except BaseException:
            server.kill()
            raise
        _give_back(server)
        out = Path(request["stdout"]).read_text()
        err = Path(request["stderr"]).read_text()
    try:
        result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    except json.JSONDecodeError:
        result = {}
    failed = code != 0 or bool(result.get("failed")) or not result
    if not result:
        result = {"msg": f"MODULE FAILURE (exit status {code})", "module_stderr": err}
    shaped = as_registered(result, failed) if registered else as_callback_writes(result)
    return (2 if failed else 0), shaped, out + err


def module_run(cluster, module: str, args: dict, *, check: bool = False, diff: bool = False, env: dict | None = None,
               timeout: float = 300, cli: bool = False):
    """The way a test that proves the module's behaviour runs it: forked (``run_module_forked``),
    unless the test reads what only Ansible prints (a diff, a displayed warning: ``diff`` or ``cli``),
    then through the ``ansible`` command (``ansible_cli.run_module``)."""
    run = run_module if (cli or diff) else run_module_forked
    return run(cluster, module, args, check=check, diff=diff, env=env, timeout=timeout)
