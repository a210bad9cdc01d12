# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Keep the collection's AnsiballZ payloads between ``ansible-playbook`` runs (controller side).

Before a module runs, ansible-core builds its payload: it parses the module and every
module_utils file it imports (``module_common._find_module_utils``), about 0.3 s for our
modules. It keeps the result only for the life of one ``ansible-playbook`` process, in
``<DEFAULT_LOCAL_TMP>/ansiballz_cache/<module fqn>-<compression>[-<extensions>]``. The action
plugin keeps a copy of those files under the local tmp base
(``<parent of DEFAULT_LOCAL_TMP>/applyset-ansiballz/<key>/``) and puts it back into the next
process's cache before the module is built, so ansible-core finds "using cached module".

* The key (``payload_key``) is a sha256 over everything the payload is built from: the bytes of
  the collection's ``plugins/module_utils`` and ``plugins/modules`` and its ``meta/runtime.yml``,
  the module's path and bytes, ansible-core's version, package path and the stat of its own
  module_utils and builder files, the module_utils search path, the Python version, the
  compression and ansible-core's AnsiballZ extension settings (2.19+: debugger, coverage).
* Files are copied as bytes and never read otherwise: the format stays what the running
  ansible-core wrote. ansible-core 2.19+ loads its cache files with ``pickle``, so a file that
  someone else could have written would be code run as the user: every directory and file used
  must belong to the user and be writable by nobody else, or the cache is not used.
* Every operation is best effort: a problem skips the cache (with a ``-vvv`` line) and the run
  goes on as without it. ``APPLYSET_ANSIBALLZ_CACHE=false`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import sys
import tempfile
import time

ENV_SWITCH = "APPLYSET_ANSIBALLZ_CACHE"
CACHE_DIR_NAME = "applyset-ansiballz"
MAX_ENTRIES = 8
FORMAT = b"applyset-ansiballz-cache-v1"
# What ansible-core 2.19+ reads to add its AnsiballZ extensions (debuggers, coverage).
EXTENSION_SETTINGS = ("_ANSIBALLZ_PYDEVD_CONFIG", "_ANSIBALLZ_DEBUGPY_CONFIG", "_ANSIBALLZ_COVERAGE_CONFIG")
# The collection's files a payload is built from, relative to the collection root.
COLLECTION_TREES = ("plugins/module_utils", "plugins/modules")
COLLECTION_FILES = ("meta/runtime.yml",)
_KEY_NAME = re.compile(r"^[0-9a-f]{64}$")
_SKIPPED_DIRS = ("__pycache__",)
_SKIPPED_SUFFIXES = (".pyc", ".pyo")


class CacheUnsafe(OSError):
    """A cache directory or file that someone other than the user could have written."""


def enabled(environ=None) -> bool:
    """Whether the cache is on: ``APPLYSET_ANSIBALLZ_CACHE`` unset or not a false word."""
    value = (os.environ if environ is None else environ).get(ENV_SWITCH, "")
    return value.strip().lower() not in ("0", "false", "no", "off", "n", "f")


def _walk(root, relative="", seen=()):
    """``(relative path, DirEntry)`` of every file under ``root``, sorted, without bytecode; symlinked
    directories are followed, except back into one of their own parents."""
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.is_dir():
            info = entry.stat()
            inode = (info.st_dev, info.st_ino)
            if entry.name not in _SKIPPED_DIRS and inode not in seen:
                yield from _walk(entry.path, f"{relative}{entry.name}/", seen + (inode,))
        elif not entry.name.endswith(_SKIPPED_SUFFIXES):
            yield relative + entry.name, entry


def _feed(digest, *parts):
    """Append each part (bytes, or anything as its text) to ``digest``, a list hashed at the end;
    each part is prefixed by its length, so that no two sequences of parts read the same."""
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode("utf-8", "surrogateescape")
        digest.append(b"%d:" % len(data))
        digest.append(data)


def _feed_contents(digest, root):
    """Feed the names and bytes of every file under ``root`` (nothing if it does not exist)."""
    _feed(digest, "tree", root)
    for relative, entry in _walk(root):
        with open(entry.path, "rb") as handle:
            _feed(digest, relative, handle.read())


def _feed_stats(digest, root, suffix=".py"):
    """Feed the name, size and mtime of every ``suffix`` file under ``root`` (a cheap edit check)."""
    _feed(digest, "stat", root)
    for relative, entry in _walk(root):
        if relative.endswith(suffix):
            info = entry.stat()
            _feed(digest, relative, info.st_size, info.st_mtime_ns)


def _feed_file_stat(digest, path):
    try:
        info = os.stat(path)
    except OSError:
        _feed(digest, "missing", path)
        return
    _feed(digest, "file", path, info.st_size, info.st_mtime_ns)


def payload_key(inputs) -> str:
    """The cache key (hex sha256) of the payload built from ``inputs`` (``PayloadInputs``).

    Reads the bytes of the collection trees and of the module, and stats ansible-core's own
    module_utils and the configured module_utils directories. Raises ``OSError`` if a file
    cannot be read.
    """
    digest: list = []
    _feed(digest, FORMAT, inputs.ansible_version, inputs.ansible_dir, sys.version, sys.implementation.cache_tag,
          inputs.module_fqn, inputs.module_path, inputs.compression, repr(inputs.settings))
    with open(inputs.module_path, "rb") as handle:
        _feed(digest, "module", handle.read())
    for root in inputs.collection_roots:
        for tree in COLLECTION_TREES:
            _feed_contents(digest, os.path.join(root, tree))
        for name in COLLECTION_FILES:
            path = os.path.join(root, name)
            if os.path.isfile(path):
                with open(path, "rb") as handle:
                    _feed(digest, name, handle.read())
    _feed_stats(digest, os.path.join(inputs.ansible_dir, "module_utils"))
    for path in inputs.ansible_files:
        _feed_file_stat(digest, os.path.join(inputs.ansible_dir, path))
    _feed(digest, "module_utils paths", *inputs.module_utils_paths)
    for path in inputs.module_utils_paths:
        _feed_stats(digest, path)
    return hashlib.sha256(b"".join(digest)).hexdigest()


class PayloadInputs:
    """What a payload is built from, as ``payload_key`` hashes it (``inputs_for`` fills it in)."""

    # The files of ansible-core that build the payload or route module_utils imports.
    ansible_files = ("executor/module_common.py", "config/ansible_builtin_runtime.yml",
                     "_internal/_ansiballz/_builder.py", "release.py")

    def __init__(self, *, module_fqn, module_path, collection_roots, ansible_version, ansible_dir,
                 module_utils_paths=(), compression="", settings=()):
        self.module_fqn = module_fqn
        self.module_path = module_path
        self.collection_roots = tuple(collection_roots)
        self.ansible_version = ansible_version
        self.ansible_dir = ansible_dir
        self.module_utils_paths = tuple(module_utils_paths)
        self.compression = compression
        self.settings = tuple(settings)


def collection_root(module_path):
    """The collection root of ``module_path`` (``<root>/plugins/modules/<name>.py``), or None."""
    modules_dir = os.path.dirname(module_path)
    plugins_dir = os.path.dirname(modules_dir)
    if os.path.basename(modules_dir) == "modules" and os.path.basename(plugins_dir) == "plugins":
        return os.path.dirname(plugins_dir)
    return None


# --- where the entries live, and who may have written them ---------------------------------


def _check_owned(info, what):
    """Raise ``CacheUnsafe`` unless ``info`` (an ``os.stat_result``) is the user's and only theirs."""
    if info.st_uid != os.geteuid():
        raise CacheUnsafe(f"{what} belongs to uid {info.st_uid}, not to this user")
    if info.st_mode & 0o022:
        raise CacheUnsafe(f"{what} is writable by group or others (mode {stat.S_IMODE(info.st_mode):o})")


def check_dir(path):
    """Raise ``CacheUnsafe`` (an ``OSError``) unless ``path`` is a real directory of the user's that
    nobody else can write; ``FileNotFoundError`` if it does not exist."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise CacheUnsafe(f"{path} is not a directory")
    _check_owned(info, path)


def check_parent(path):
    """Raise ``CacheUnsafe`` if others could replace ``path`` itself: its parent directory must be
    the user's or root's, and writable by others only with the sticky bit (as /tmp)."""
    info = os.stat(os.path.dirname(os.path.abspath(path)))
    if info.st_uid not in (0, os.geteuid()):
        raise CacheUnsafe(f"the directory above {path} belongs to uid {info.st_uid}")
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise CacheUnsafe(f"the directory above {path} is writable by others without the sticky bit")


def make_dir(path):
    """Create ``path`` (mode 0700) if it does not exist, then check it as ``check_dir`` does."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    check_dir(path)


def entry_dir(local_tmp, key):
    """The directory of the entry ``key``: ``<parent of local_tmp>/applyset-ansiballz/<key>``."""
    return os.path.join(os.path.dirname(os.path.normpath(local_tmp)), CACHE_DIR_NAME, key)


def payload_files(names, prefix):
    """Which of ``names`` are ansible-core's cached payload files of the module ``prefix``
    (``<fqn>-``): not its ``.lock`` files, not files still being written (``-part``), not ours."""
    return sorted(name for name in names
                  if name.startswith(prefix) and not name.endswith((".lock", "-part")) and "/" not in name)


def is_private(path):
    """Whether ``path`` is a real directory of the user's that nobody else can even enter (as the
    per-process ``DEFAULT_LOCAL_TMP``, which ansible-core makes with ``mkdtemp``)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077


def _read_owned(path, private=False):
    """The bytes of the regular file ``path`` if it is the user's and, unless it is in a ``private``
    directory, writable by nobody else (``CacheUnsafe`` otherwise; no symlink is followed)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise CacheUnsafe(f"{path} is not a regular file")
        if private and info.st_uid != os.geteuid():
            raise CacheUnsafe(f"{path} belongs to uid {info.st_uid}, not to this user")
        if not private:
            _check_owned(info, path)
        return handle.read()


def _write_atomic(directory, name, data):
    """Write ``data`` as ``directory/name`` (mode 0600): a temporary file there, then a rename,
    so that a reader sees either no file or the whole of it."""
    fd, temp = tempfile.mkstemp(dir=directory, prefix=".applyset-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, os.path.join(directory, name))
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def copy_missing(source, target, prefix, private=False):
    """Copy the payload files of ``prefix`` (``payload_files``) from ``source`` to ``target`` that
    ``target`` does not have yet; returns their names. Each file copied must be the user's and,
    unless ``source`` is inside a ``private`` directory, writable by nobody else."""
    present = set(os.listdir(target))
    copied = []
    for name in payload_files(os.listdir(source), prefix):
        if name not in present:
            _write_atomic(target, name, _read_owned(os.path.join(source, name), private))
            copied.append(name)
    return copied


def check_entry(entry):
    """Raise ``CacheUnsafe`` unless the entry, the cache directory above it and that directory's
    place can be written by the user alone (``FileNotFoundError`` if one does not exist)."""
    base = os.path.dirname(entry)
    check_parent(base)
    check_dir(base)
    check_dir(entry)


def restore_entry(entry, process_cache, prefix):
    """Copy the entry's payload files into this process's ``ansiballz_cache`` dir (created with
    mode 0700 if missing) and mark the entry as used; returns the names copied.
    ``FileNotFoundError`` when there is no entry."""
    check_entry(entry)
    os.makedirs(process_cache, mode=0o700, exist_ok=True)
    copied = copy_missing(entry, process_cache, prefix)
    os.utime(entry)
    return copied


def save_entry(process_cache, entry, prefix, keep=MAX_ENTRIES):
    """Copy this process's payload files of ``prefix`` into the entry (created if missing, mode
    0700); a new entry removes the least recently used ones beyond ``keep``. Returns the names copied.

    The files are ansible-core's: they are read if the process directory is private (``is_private``)
    and they are the user's, or else if they are the user's alone, as ``check_dir`` asks of dirs."""
    private = is_private(os.path.dirname(process_cache))
    if not private:
        check_dir(process_cache)
    base = os.path.dirname(entry)
    check_parent(base)
    make_dir(base)
    new = not os.path.lexists(entry)
    make_dir(entry)
    copied = copy_missing(process_cache, entry, prefix, private)
    if new:
        prune(base, keep)
    return copied


def prune(base, keep=MAX_ENTRIES):
    """Remove the entries of ``base`` beyond the ``keep`` most recently used; returns their names.
    Only directories named as keys and owned by the user are touched."""
    entries = []
    for name in os.listdir(base):
        path = os.path.join(base, name)
        if _KEY_NAME.match(name):
            try:
                check_dir(path)
                entries.append((os.lstat(path).st_mtime_ns, name))
            except OSError:
                continue
    removed = [name for _mtime, name in sorted(entries, reverse=True)[keep:]]
    for name in removed:
        shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    return removed


# --- the action plugin's side: what this task's payload is built from, and the two copies ----


def _own_root():
    """The root of the collection copy Ansible loaded this file from (and so the module_utils)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _module_path(action, module_name):
    """Where the module is, found as ``ActionBase._configure_module`` finds it (the loader caches it)."""
    loader = action._shared_loader_obj.module_loader  # pylint: disable=protected-access
    for mod_type in action._connection.module_implementation_preferences:  # pylint: disable=protected-access
        found = loader.find_plugin_with_context(module_name, mod_type,
                                                collection_list=action._task.collections)  # pylint: disable=protected-access
        if found.resolved and found.plugin_resolved_path:
            return found.plugin_resolved_path
    raise LookupError(f"the module {module_name} was not found")


def _setting(config, name, task_vars):
    try:
        return config.get_config_value(name, variables=task_vars)
    except Exception:  # pylint: disable=broad-exception-caught  # not a setting of this ansible-core
        return "<none>"


def inputs_for(action, module_name, task_vars):
    """The ``PayloadInputs`` of ``module_name`` run by ``action`` (an ``ActionBase``)."""
    import ansible
    from ansible import constants as C
    from ansible.executor import module_common
    from ansible.plugins.loader import module_utils_loader

    module_path = _module_path(action, module_name)
    ansible_dir = os.path.dirname(os.path.abspath(ansible.__file__))
    own_utils = os.path.join(ansible_dir, "module_utils")
    # The same search path as module_common.recursive_finder (playbook and role module_utils included).
    paths = [p for p in module_utils_loader._get_paths(subdirs=False)  # pylint: disable=protected-access
             if os.path.isdir(p) and os.path.normpath(p) != os.path.normpath(own_utils)]
    roots = []
    for root in (collection_root(module_path), _own_root()):
        if root and root not in roots:
            roots.append(root)
    delegated = (task_vars or {}).get("ansible_delegated_vars") or {}
    use_vars = delegated.get(action._task.delegate_to, task_vars) if action._task.delegate_to else task_vars  # pylint: disable=protected-access
    settings = [(name, _setting(C.config, name, use_vars)) for name in EXTENSION_SETTINGS]
    settings.append(("DEFAULT_MODULE_UTILS_PATH", C.DEFAULT_MODULE_UTILS_PATH))
    return PayloadInputs(
        module_fqn=module_common._get_ansible_module_fqn(module_path),  # pylint: disable=protected-access
        module_path=module_path, collection_roots=roots, ansible_version=ansible.__version__,
        ansible_dir=ansible_dir, module_utils_paths=paths, settings=settings,
        compression=f"{C.DEFAULT_MODULE_COMPRESSION}/{_setting(C.config, 'DEFAULT_MODULE_COMPRESSION', use_vars)}")


class TaskCache:
    """The persistent payload entry of one task's module (``prepare`` before the module runs,
    ``save`` after). Never raises: a problem is a ``-vvv`` line and the run goes on without it."""

    def __init__(self, entry, process_cache, prefix):
        self.entry = entry
        self.process_cache = process_cache
        self.prefix = prefix

    @classmethod
    def prepare(cls, action, module_name, task_vars, environ=None):
        """Restore the entry of this payload into the process's cache; the ``TaskCache`` to ``save``
        after the module ran, or None (cache off, or the payload is in this process's cache already)."""
        from ansible import constants as C
        from ansible.utils.display import Display

        if not enabled(environ):
            return None
        started = time.perf_counter()
        try:
            inputs = inputs_for(action, module_name, task_vars)
            process_cache = os.path.join(C.DEFAULT_LOCAL_TMP, "ansiballz_cache")
            prefix = inputs.module_fqn + "-"
            if os.path.isdir(process_cache) and payload_files(os.listdir(process_cache), prefix):
                return None  # built or restored earlier in this run
            cache = cls(entry_dir(C.DEFAULT_LOCAL_TMP, payload_key(inputs)), process_cache, prefix)
            try:
                copied = restore_entry(cache.entry, process_cache, prefix)
            except FileNotFoundError:
                copied = []
            Display().vvv(f"applyset: AnsiballZ payload cache {cache.entry}: "
                          + (f"restored {', '.join(copied)}" if copied else "nothing to restore")
                          + f" ({(time.perf_counter() - started) * 1000:.1f} ms)")
            return cache
        except Exception as err:  # pylint: disable=broad-exception-caught  # best effort, never fails a task
            Display().vvv(f"applyset: AnsiballZ payload cache not used: {err!r}")
            return None

    def save(self):
        """Keep the payload files ansible-core wrote for this module (best effort)."""
        from ansible.utils.display import Display

        started = time.perf_counter()
        try:
            copied = save_entry(self.process_cache, self.entry, self.prefix)
            if copied:
                Display().vvv(f"applyset: AnsiballZ payload cache {self.entry}: saved {', '.join(copied)}"
                              f" ({(time.perf_counter() - started) * 1000:.1f} ms)")
        except Exception as err:  # pylint: disable=broad-exception-caught  # best effort, never fails a task
            Display().vvv(f"applyset: AnsiballZ payload cache not saved: {err!r}")
