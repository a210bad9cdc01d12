"""The warm Python the tests' ``ansible`` and ``ansible-playbook`` commands run modules with
(``warm_python/``, issue 44) changes how fast a module starts, never what it does."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from ansible_cli import ansible_env, run_module
from kubeapi import wait_for

WARM_VARIABLES = ("APPLYSET_WARM_PYTHON", "APPLYSET_WARM_PYTHON_REAL", "APPLYSET_WARM_PYTHON_SOCKET")


@pytest.fixture
def warm(warm_python):
    if warm_python is None:
        pytest.skip("the warm Python is off here (APPLYSET_WARM_PYTHON_ENABLED=false, or ansible-core before 2.19)")
    return warm_python


def cold_env(cluster):
    env = ansible_env(cluster)
    for name in WARM_VARIABLES:
        env.pop(name, None)
    return env


def test_a_module_run_warm_returns_exactly_what_a_cold_run_returns(cluster, namespace, warm, tmp_path):
    members = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{n}"}, "data": {"n": str(n)}}
               for n in range(3)]
    rc, _, out = run_module(cluster, "applyset_apply", {"parent": "warm", "namespace": namespace,
                                                        "definition": members})
    assert rc == 0, out
    counted = tmp_path / "warm-runs.log"
    info = {"parent": "warm", "namespace": namespace}
    warm_env = dict(ansible_env(cluster), APPLYSET_WARM_PYTHON_CPU_LOG=str(counted))
    warm_rc, warm_result, warm_out = run_module(cluster, "applyset_info", info, env=warm_env)
    assert len(counted.read_text().splitlines()) == 1, "the warm run did not go through the server"
    cold_env_counted = dict(cold_env(cluster), APPLYSET_WARM_PYTHON_CPU_LOG=str(counted))
    cold_rc, cold_result, cold_out = run_module(cluster, "applyset_info", info, env=cold_env_counted)
    assert len(counted.read_text().splitlines()) == 1, "the cold run went through the warm server"
    assert (warm_rc, cold_rc) == (0, 0), warm_out + cold_out
    assert warm_result == cold_result


def test_a_killed_module_run_ends_its_warm_process_too(warm, tmp_path):
    """Ansible ends a task by killing its module's process; the forked child must not outlive it."""
    pid_file = tmp_path / "pid"
    script = tmp_path / "AnsiballZ_sleeper.py"  # a name the client hands to the server
    script.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n")
    client = subprocess.Popen([str(warm.client), str(script)], env=dict(os.environ))
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text(), timeout=30, interval=0.05,
                 what="the warm child to start")
        child = int(pid_file.read_text())
        assert child != client.pid, "the script ran in the client, not in the warm server"
        client.send_signal(signal.SIGKILL)
        client.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(child):
            time.sleep(0.05)
        assert not _alive(child), f"the warm child {child} outlived its killed client"
    finally:
        client.kill()


def test_anything_but_a_module_run_is_the_real_python(warm):
    proc = subprocess.run([str(warm.client), "-c", "import sys; print(sys.executable)"], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == os.environ["APPLYSET_WARM_PYTHON_REAL"]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
