# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run the collection's modules so that no secret is ever a visible module parameter.

Every module of the collection goes through ``ApplySetAction``:

* ``definition`` (which may hold Secret data) and an inline ``kubeconfig`` (a dict, which holds
  credentials) are moved into one hidden ``no_log`` parameter as a JSON text
  (``redact.pack_protected_input``). Ansible shows that parameter as
  ``VALUE_SPECIFIED_IN_NO_LOG_PARAMETER`` in the invocation (-vvv, AWX job events) and
  leaves it out of the syslog/journal line, and masks only that whole text, which no output
  contains. Marking ``definition`` itself ``no_log`` would instead mask every string inside
  it (names, ``apps/v1``) everywhere in the output. See docs/secrets.md.
* ``async``/``poll`` work as for any module (the module is wrapped the usual way).
* Ansible Vault input is decrypted here, on the controller, in memory, with the play's vault
  secrets (``plugin_utils/vault_input.py``): a ``kubeconfig`` path to a vaulted file becomes the
  inline kubeconfig; for ``applyset_apply``, the plain bytes of vaulted ``src`` files (encrypted
  whole, or holding ``!vault`` values) travel in the same hidden parameter, and the module reads
  them in place of those files. A vaulted input that cannot be decrypted fails the task here,
  naming the file, before the module runs.
* The module's AnsiballZ payload is kept between ``ansible-playbook`` runs
  (``plugin_utils/ansiballz_cache.py``; ``APPLYSET_ANSIBALLZ_CACHE=false`` turns that off).

For ``applyset_apply`` a relative ``src`` is also resolved the way users expect: a module
runs in a temporary directory, so a relative ``src`` would mean nothing there. Like
``template`` or ``copy``, we resolve it on the controller: against the role's ``files/``
directory and the role itself when the task is in a role, then against the playbook's
directory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

from ansible.plugins.action import ActionBase


class ApplySetAction(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = True

    DEFAULT_MODULE: str | None = None  # set by each plugin

    def module_args(self, args):
        """The task's arguments as the module gets them (before the secrets are packed)."""
        return args

    def vault_input(self):
        """What decrypts vaulted input with the play's vault secrets (``VaultInput``)."""
        from ansible_collections.applyset.kubernetes.plugins.plugin_utils.vault_input import VaultInput

        return VaultInput(self._loader._vault)  # pylint: disable=protected-access

    def decrypt(self, args):
        """``(args, src_contents)``: a vaulted ``kubeconfig`` file made the inline mapping; the
        decrypted ``src`` files (none here, see ``ActionModule``)."""
        config = self.vault_input().kubeconfig(args.get("kubeconfig"), self._loader.get_basedir())
        if config is not None:
            args["kubeconfig"] = config
            self.decrypted = True
        return args, None

    decrypted = False  # whether vaulted input was decrypted for this task

    def keep_arguments_off_disk(self):
        """Have the module get its arguments on standard input (pipelining) where the connection can.

        Without pipelining Ansible writes the module with all its arguments, the hidden one included,
        to a temporary file on the controller and to the remote temporary directory, for the length
        of the run. Decrypted vault input should never be on disk, so a task that carries some asks
        for pipelining. Ansible still does not pipeline with async, ANSIBLE_KEEP_REMOTE_FILES or a
        become method that cannot (docs/user-guide.md says so).
        """
        try:
            self._connection.set_option("pipelining", True)
        except (AttributeError, KeyError):
            pass  # a connection without the option: Ansible's default applies

    def with_play_context(self, args, task_vars):
        """``args`` with what the module takes from the play (nothing here, see ``ActionModule``)."""
        del task_vars
        return args

    def run(self, tmp=None, task_vars=None):
        # Imported here so that the path resolution below can be tested without a collection tree.
        from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import redact
        from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.errors import InputError
        from ansible_collections.applyset.kubernetes.plugins.plugin_utils.ansiballz_cache import TaskCache

        result = super().run(tmp, task_vars)
        del tmp  # no effect since Ansible 2.x; the connection's tmpdir is used
        try:
            args, src_contents = self.decrypt(self.module_args(dict(self._task.args)))
        except InputError as err:
            # A vaulted file without its password: the module does not run, nothing is sent.
            result.update(failed=True, changed=False, msg=str(err), error=err.to_dict())
            return result
        if self.decrypted or src_contents:
            self.keep_arguments_off_disk()
        args = self.with_play_context(args, task_vars)
        args = redact.pack_protected_input(args, src_contents=src_contents)
        wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
        module_name = self._task.resolved_action or self.DEFAULT_MODULE
        payload_cache = TaskCache.prepare(self, module_name, task_vars)
        try:
            result.update(self._execute_module(module_name=module_name, module_args=args, task_vars=task_vars,
                                               wrap_async=wrap_async))
        finally:
            if payload_cache is not None:
                payload_cache.save()
        if not wrap_async:
            # An async job removes its own directory when it ends.
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result


class ActionModule(ApplySetAction):
    DEFAULT_MODULE = "applyset.kubernetes.applyset_apply"

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

    def module_args(self, args):
        src = args.get("src")
        if isinstance(src, str):
            src = [src]
        if isinstance(src, list):
            args["src"] = [self._resolve(str(entry)) for entry in src]
        return args

    def with_play_context(self, args, task_vars):
        """``args`` with ``provenance`` (unless the task sets it), for the set's history: the task's
        file and line, the playbook's directory and, in an AWX (or Tower) job, its id, template and user."""
        if args.get("provenance") is not None:
            return args
        play_vars = task_vars or {}
        keys = ("playbook_dir", "awx_job_id", "awx_job_template_name", "awx_user_name", "tower_job_id",
                "tower_job_template_name", "tower_user_name")
        found = {key: str(play_vars[key]) for key in keys if play_vars.get(key) is not None}
        found["task"] = self._task.get_path() or self._task.get_name()
        return dict(args, provenance=found)

    def decrypt(self, args):
        args, _none = super().decrypt(args)
        src = args.get("src")
        if isinstance(src, list) and args.get("state", "present") == "present":
            return args, self.vault_input().src_contents([str(entry) for entry in src])
        return args, None
