# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Resolve relative ``src`` paths the way users expect, then run the module.

A module runs in a temporary directory, so a relative ``src`` would mean
nothing there. Like ``template`` or ``copy``, we resolve it on the controller:
against the role's ``files/`` directory and the role itself when the task is
in a role, then against the playbook's directory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def _search_dirs(self):
        dirs = []
        role = getattr(self._task, "_role", None)
        if role is not None:
            dirs += [os.path.join(role._role_path, "files"), role._role_path]
        dirs.append(self._loader.get_basedir())
        return dirs

    def _resolve(self, entry):
        entry = os.path.expanduser(entry)
        if not entry.strip() or os.path.isabs(entry):
            return entry  # the module refuses an empty entry, with a message
        candidates = [os.path.join(d, entry) for d in self._search_dirs()]
        for candidate in candidates:
            if glob.has_magic(candidate) and glob.glob(candidate, recursive=True) or os.path.exists(candidate):
                return candidate
        # Nothing matches anywhere: pass the playbook-relative path on, so the
        # module's error names a path the user can check.
        return candidates[-1]

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        src = args.get("src")
        if isinstance(src, str):
            src = [src]
        if isinstance(src, list):
            args["src"] = [self._resolve(str(entry)) for entry in src]
        result.update(self._execute_module(module_name=self._task.resolved_action or "applyset.kubernetes.applyset_apply",
                                           module_args=args, task_vars=task_vars))
        return result
