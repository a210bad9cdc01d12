"""Test helper: the interpreter the tests' ``ansible`` and ``ansible-playbook`` run modules with.

Copied, with a shebang naming the real Python (``-I -S``: it imports nothing but the standard
library), into the session's warm-Python directory (``warm_python/__init__.py``). A module run
(``python AnsiballZ_x.py``, or ``python`` reading the script on standard input) is handed to the
warm server with this process's arguments, environment, working directory and standard
descriptors; this process then waits for the exit status and leaves with it. Anything else, or
no server, runs the real Python in this process's place: nothing fails for want of the server.
"""

import json
import os
import socket
import sys

REAL_PYTHON = "@REAL_PYTHON@"  # replaced when the file is copied
SOCKET = os.environ.get("APPLYSET_WARM_PYTHON_SOCKET", "")


def _is_module_run(args):
    if not args:
        return True
    return len(args) == 1 and os.path.basename(args[0]).startswith("AnsiballZ_") and args[0].endswith(".py")


def _cold():
    os.execv(REAL_PYTHON, [REAL_PYTHON] + sys.argv[1:])


def main():
    args = sys.argv[1:]
    if not SOCKET or not _is_module_run(args):
        _cold()
    try:
        cwd = os.getcwd()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(SOCKET)
    except OSError:
        _cold()
    request = json.dumps({"argv": args, "env": dict(os.environ), "cwd": cwd, "pid": os.getpid()}).encode()
    # The length first, with the descriptors; then the request itself.
    socket.send_fds(conn, [len(request).to_bytes(8, "big")], [0, 1, 2])
    conn.sendall(request)
    answer = b""
    while True:
        chunk = conn.recv(4096)
        if not chunk:
            break
        answer += chunk
    try:
        code = json.loads(answer)["rc"]
    except (ValueError, KeyError, TypeError):
        sys.stderr.write("warm python: the module process ended without an exit status (killed?)\n")
        code = 1
    sys.exit(code)


main()
