"""Test helper: runs the collection's modules in forks of one warm process (``module_runner.py``).

A module run through the ``ansible`` command costs about 2.5 s of CPU, of which about 1.5 s is
Ansible's own start (its imports, configuration and plugin loading) and another 0.3 s the module's
imports of ``ansible.module_utils``, compiled again from the AnsiballZ zip on every run. This
process imports all of that once; each request forks it, and the child runs the module exactly as
the AnsiballZ wrapper does (``_loader.run_module``: the module file executed as ``__main__`` with
its parameters and Ansible's serialization profile), in a temporary directory, with the
environment the request names, its standard output and error going to the files the request
names. The parent answers with the child's exit status. One request at a time: the client keeps a
pool of servers for runs that overlap.

Protocol, one JSON object per line: ``{"module", "params", "env", "cwd", "stdout", "stderr"}`` in,
``{"rc"}`` out; a first line ``{"ready": true}`` once the imports are done.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / ".state" / "collections"))

from ansible.module_utils import basic  # noqa: E402,F401  (imported once, for every child)
from ansible.module_utils._internal._ansiballz import _loader  # noqa: E402

# The collection's code, imported once: a child only runs the module file itself again.
from ansible_collections.applyset.kubernetes.plugins.modules import (  # noqa: E402,F401
    applyset_apply, applyset_info, applyset_verify)

# Out of sys.modules again, so that running one as __main__ is not warned about; what they imported stays.
for _name in ("applyset_apply", "applyset_info", "applyset_verify"):
    sys.modules.pop(f"ansible_collections.applyset.kubernetes.plugins.modules.{_name}", None)

PROFILE = "legacy"  # what the AnsiballZ wrapper of ansible-core 2.19 passes for these modules


def _child(request: dict) -> None:
    """Run one module in this (forked) process and leave with its exit status."""
    code = 1
    try:
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115  (the module never reads it: its params are given)
        fqn = f"ansible_collections.applyset.kubernetes.plugins.modules.{request['module']}"
        _loader.run_module(json_params=json.dumps(request["params"]).encode(), profile=PROFILE, module_fqn=fqn,
                           modlib_path="", extensions={})
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException as err:  # noqa: BLE001  (reported as the module's own crash would be)
        print(f"module_server: {type(err).__name__}: {err}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> None:
    out = sys.stdout
    print(json.dumps({"ready": True}), file=out, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"rc": os.waitstatus_to_exitcode(status)}), file=out, flush=True)


if __name__ == "__main__":
    main()
