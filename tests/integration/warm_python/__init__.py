"""A warm Python for the modules of the tests' ``ansible`` and ``ansible-playbook`` commands (issue 44).

Every task of those commands starts a Python for its module, and about 0.45 s of that process's
CPU is imports (``ansible.module_utils`` compiled again from the AnsiballZ zip, the libraries,
the collection). ``start`` runs ``server.py``, which imports them once and forks a child per
module run, and returns the environment that sends the commands' modules there:

* ``PYTHONPATH`` gets a directory whose ``sitecustomize.py`` makes an ``ansible`` or
  ``ansible-playbook`` of this Python say that its Python is ``client.py`` (implicit localhost and
  ``{{ ansible_playbook_python }}`` follow it);
* the client hands each module run to the server, and runs the real Python for anything else.

What still runs cold, as users run it: commands given another interpreter
(``ansible_python_interpreter={{ sys.executable }}``: the AWX-like jobs, the installed-collection
test, the RBAC and secret-output runs), the matrix's other Pythons, the README's demo and
``APPLYSET_WARM_PYTHON=false``. What the module does is the same either way: the child runs the
AnsiballZ script as ``python`` would, from the zip, with the collection imported again from the
zip whenever it is not byte for byte what the server imported (``server.py``).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SWITCH = "APPLYSET_WARM_PYTHON_ENABLED"


def enabled(environ=os.environ) -> bool:
    return environ.get(SWITCH, "").strip().lower() not in ("0", "false", "no", "off")


def available() -> bool:
    """ansible-core 2.19 or newer (its AnsiballZ wrapper runs modules through ``_loader``)."""
    try:
        from ansible.module_utils._internal._ansiballz import _loader  # noqa: F401
    except ImportError:
        return False
    return True


class WarmPython:
    """The server of one test process (a pytest worker) and the environment that uses it."""

    def __init__(self, directory: Path):
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.socket = directory / "server.sock"
        self.client = directory / "python"
        text = (HERE / "client.py").read_text().replace("@REAL_PYTHON@", sys.executable)
        self.client.write_text(f"#!{sys.executable} -IS\n{text}")
        self.client.chmod(0o755)
        site = directory / "site"
        site.mkdir(exist_ok=True)
        shutil.copy(HERE / "sitecustomize.py", site / "sitecustomize.py")
        self.site = site
        self.log = open(directory / "server.log", "wb")  # noqa: SIM115  (closed in stop)
        self.proc = subprocess.Popen([sys.executable, str(HERE / "server.py"), str(self.socket)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log,
                                     start_new_session=True, env=self.environ(os.environ, server=True))
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        line = self.proc.stdout.readline() if ready else b""
        if json.loads(line or b"{}") != {"ready": True}:
            self.stop()
            raise RuntimeError(f"the warm Python server did not start: {(directory / 'server.log').read_text()[-2000:]}")

    def environ(self, base, server=False) -> dict:
        env = dict(base)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.site), base.get("PYTHONPATH")]))
        if not server:
            env.update(APPLYSET_WARM_PYTHON=str(self.client), APPLYSET_WARM_PYTHON_REAL=sys.executable,
                       APPLYSET_WARM_PYTHON_SOCKET=str(self.socket))
        return env

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)  # the server and any child it forked
            self.proc.wait()
        self.log.close()
