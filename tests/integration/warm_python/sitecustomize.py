"""Test helper, on PYTHONPATH in the tests' environment (``warm_python/__init__.py``): an ``ansible`` or
``ansible-playbook`` command of this very Python names the warm client as its Python, so that
implicit localhost (and every inventory that says ``{{ ansible_playbook_python }}``) runs its
modules through the warm server. Any other process, or another Python, is left as it is."""

import os
import sys


def _warm_interpreter():
    client = os.environ.get("APPLYSET_WARM_PYTHON")
    real = os.environ.get("APPLYSET_WARM_PYTHON_REAL")
    if not client or not real or os.path.basename(sys.argv[0] if sys.argv else "") not in ("ansible", "ansible-playbook"):
        return
    if os.path.realpath(sys.executable) == os.path.realpath(real) and os.access(client, os.X_OK):
        sys.executable = client


_warm_interpreter()
