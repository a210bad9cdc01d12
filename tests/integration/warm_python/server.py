"""Test helper: the warm Python that runs the modules of the tests' ``ansible`` and ``ansible-playbook``
commands (issue 44; ``warm_python/__init__.py`` says when it is used).

A module process spends most of its CPU starting: about 0.45 s of every run goes to importing
``ansible.module_utils`` (compiled again from the AnsiballZ zip each time) and the libraries the
collection uses, before the module does anything. This server imports all of that once, then
listens on a Unix socket. ``client.py`` (the interpreter the commands are given) sends it its
arguments, environment, working directory and its standard input, output and error (the
descriptors themselves); the server forks, and the child runs the AnsiballZ script exactly as
``python SCRIPT`` (or ``python`` reading the script on standard input, with pipelining) would:
the wrapper unpacks its zip, ``_loader.run_module`` runs the module as ``__main__``. The child
answers with the exit status and ends; it also ends when the client does (a killed task).

The collection's own code is imported once too, from the work tree, but only used for a module
whose zip carries exactly those files (same names, same CRC-32); any other zip (a copy of the
collection that a test edits, another collection) runs with every ``ansible_collections`` module
imported again from the zip, as a cold process would.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import resource
import runpy
import select
import signal
import socket
import sys
import tempfile
import threading
import traceback
import types
import warnings
import zipfile
import zlib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
COLLECTIONS = REPO_ROOT / ".state" / "collections"
OURS = "ansible_collections/applyset/kubernetes/"
MAX_REQUEST = 4 << 20  # an environment of a few hundred KiB at most

# What a cold python would have on sys.path, less the script's directory: this server's own
# directory and the collections path it imports the collection from are not.
BASE_PATH = [p for p in sys.path if p not in (str(Path(__file__).resolve().parent), str(COLLECTIONS))]
sys.path.insert(0, str(COLLECTIONS))

import ansible.module_utils.basic  # noqa: E402,F401  (what every module imports first)
from ansible.module_utils._internal._ansiballz import _loader  # noqa: E402

# The libraries the collection's modules import, and the modules themselves with everything they import.
import urllib3  # noqa: E402,F401
import yaml  # noqa: E402,F401
from ansible_collections.applyset.kubernetes.plugins.modules import (  # noqa: E402,F401
    applyset_apply, applyset_info, applyset_verify)

for _name in ("applyset_apply", "applyset_info", "applyset_verify"):  # run as __main__ again, unwarned
    sys.modules.pop(f"ansible_collections.applyset.kubernetes.plugins.modules.{_name}", None)


def _import_the_core() -> None:
    """Every module of the collection's module_utils: the modules import most of the core only once
    they run (the engine after the first requests are sent), so importing them is not enough."""
    import pkgutil
    import importlib

    package = importlib.import_module("ansible_collections.applyset.kubernetes.plugins.module_utils")
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional library this machine lacks: the module imports it itself
            pass


_import_the_core()
sys.path[:] = BASE_PATH


def _crc_of_our_files() -> dict:
    """{zip name: CRC-32} of the collection files a module zip may carry, as imported here."""
    root = COLLECTIONS / "ansible_collections" / "applyset" / "kubernetes"
    found = {}
    for tree in ("plugins/module_utils", "plugins/modules"):
        for path in (root / tree).rglob("*.py"):
            found[OURS + str(path.relative_to(root))] = zlib.crc32(path.read_bytes())
    return found


OUR_FILES = _crc_of_our_files()


def _zip_matches_what_is_imported(modlib_path: str, module_fqn: str) -> bool:
    """Whether the module and every collection file in its zip are the files imported here."""
    if module_fqn.startswith("ansible_collections.") and not module_fqn.startswith("ansible_collections.applyset.kubernetes."):
        return False
    with zipfile.ZipFile(modlib_path) as payload:
        for info in payload.infolist():
            if not info.filename.startswith("ansible_collections/") or info.filename.endswith("/"):
                continue
            expected = OUR_FILES.get(info.filename)
            if expected is None:
                if info.file_size:  # only the empty package files the builder adds may be new
                    return False
            elif expected != info.CRC:
                return False
    return True


def _forget_the_collections() -> None:
    """Every ``ansible_collections`` module imported again, from the zip (first on sys.path)."""
    for name in [n for n in sys.modules if n == "ansible_collections" or n.startswith("ansible_collections.")]:
        del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if "ansible_collections" not in type(f).__module__]
    sys.path_importer_cache.clear()


_run_module = _loader.run_module


def _checked_run_module(**kwargs):
    if not _zip_matches_what_is_imported(kwargs["modlib_path"], kwargs["module_fqn"]):
        _forget_the_collections()
        _log(f"# {kwargs['module_fqn']}: the collection imported again from the zip")
    return _run_module(**kwargs)


def _watch(client_pid: int) -> None:
    """End this child as soon as the client ends (Ansible killed the task)."""
    try:
        pidfd = os.pidfd_open(client_pid)
    except OSError:  # already gone
        os.kill(os.getpid(), signal.SIGKILL)
        return

    def wait():
        select.select([pidfd], [], [])
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=wait, daemon=True).start()


def _run_script(argv: list) -> int:
    """Run the script as ``python`` would; its exit status."""
    try:
        if argv and argv[0]:
            sys.argv = list(argv)
            sys.path.insert(0, os.path.dirname(os.path.realpath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
        else:  # the script on standard input (pipelining)
            sys.argv = [""]
            sys.path.insert(0, "")
            with open(0, "rb", closefd=False) as stdin:
                source = stdin.read()
            main = types.ModuleType("__main__")
            main.__dict__["__builtins__"] = __builtins__
            sys.modules["__main__"] = main
            exec(compile(source, "<stdin>", "exec"), main.__dict__)  # noqa: S102  (what python - does)
        return 0
    except SystemExit as stop:
        if stop.code is None:
            return 0
        if isinstance(stop.code, int):
            return stop.code
        print(stop.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001  (reported as python reports it)
        traceback.print_exc()
        return 1


def _log(line: str) -> None:
    """One line in the file ``APPLYSET_WARM_PYTHON_CPU_LOG`` names, if it names one."""
    path = os.environ.get("APPLYSET_WARM_PYTHON_CPU_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(line + "\n")


def _account(argv) -> None:
    """This run's CPU seconds to the log (a server's children are not counted in the CPU of the
    command that ran the module)."""
    if os.environ.get("APPLYSET_WARM_PYTHON_CPU_LOG"):
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
        _log(f"{seconds:.3f}\t{os.path.basename(argv[0]) if argv and argv[0] else '<stdin>'}")


def _child(conn: socket.socket) -> None:
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the module waits for its own children
        header, fds, _flags, _addr = socket.recv_fds(conn, 8, 3)
        while len(header) < 8:
            header += conn.recv(8 - len(header))
        length = int.from_bytes(header, "big")
        if len(fds) != 3 or length > MAX_REQUEST:
            raise ValueError(f"a request of {length} bytes with {len(fds)} descriptors")
        message = b""
        while len(message) < length:
            chunk = conn.recv(min(1 << 20, length - len(message)))
            if not chunk:
                raise EOFError("the client went away")
            message += chunk
        request = json.loads(message)
        _watch(request["pid"])
        for number, fd in enumerate(fds):
            os.dup2(fd, number)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        tempfile.tempdir = None  # chosen again from this environment
        getattr(warnings, "_filters_mutated", lambda: None)()  # warnings shown while importing are shown again
        _loader.run_module = _checked_run_module
        code = _run_script(request["argv"])
        atexit._run_exitfuncs()  # noqa: SLF001  (what interpreter shutdown does)
        _account(request["argv"])
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        try:
            conn.sendall(json.dumps({"rc": code}).encode())
        except OSError:
            pass
        os._exit(code & 0xFF)


def main() -> None:
    path = sys.argv[1]
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    gc.freeze()  # what the imports made is never collected in a child, so never copied on write by it
    print(json.dumps({"ready": True}), flush=True)
    while True:
        conn, _ = listener.accept()
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            _child(conn)
        conn.close()


if __name__ == "__main__":
    main()
