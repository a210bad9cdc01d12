# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test helper: writes each host's last task result as JSON to a file per host.

It stands in for ``ansible --tree``, which ansible-core 2.19 deprecated (with the
``tree`` callback behind it) for removal in 2.23. tests/integration/ansible_cli.py
enables it for ad hoc runs only; it is not part of the collection.
"""

from __future__ import annotations

import os
from pathlib import Path

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: result_file
    type: aggregate
    short_description: Write each host's task result to DIR/HOSTNAME as JSON
    description:
      - Test helper of applyset.kubernetes; the directory is APPLYSET_RESULT_DIR.
    options: {}
"""


def _public(result, name):
    # ansible-core 2.19 added public ``host``/``result`` on callback task results
    # and will deprecate the underscored ones; 2.16-2.18 only have the underscored.
    value = getattr(result, name, None)
    return value if value is not None else getattr(result, "_" + name)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "result_file"
    CALLBACK_NEEDS_ENABLED = True

    def _write(self, result) -> None:
        directory = os.environ.get("APPLYSET_RESULT_DIR")
        if not directory:
            return
        host = _public(result, "host").get_name()
        Path(directory, host).write_text(self._dump_results(_public(result, "result")))

    def v2_runner_on_ok(self, result) -> None:
        self._write(result)

    def v2_runner_on_failed(self, result, ignore_errors=False) -> None:
        self._write(result)

    def v2_runner_on_unreachable(self, result) -> None:
        self._write(result)

    def v2_runner_on_skipped(self, result) -> None:
        self._write(result)
