# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The compiled code of the collection's module_utils, kept between module runs on the host.

Ansible runs a module from a zip it sends with every task (AnsiballZ), and Python's zip importer
compiles every imported file again on every run: it never reads or writes ``.pyc`` files. For
this collection that is some 70 files and about 0.1 s of every task, a tenth of a no-op re-run.
``install`` puts a finder in front of the zip importer for the collection's own packages: it
compiles a file once, keeps the code in the user's cache directory, and loads it from there on
the next run (``marshal``, a few milliseconds for all of them).

A cache file is named by the sha256 of the interpreter's bytecode magic number, the module's
name and the exact bytes of its source, so a changed file, another collection version or another
Python never meets code that was not compiled from it. The code object gets the file name of
this run, so tracebacks and coverage name the file as they would without the cache. The
directory (``$XDG_CACHE_HOME`` or ``~/.cache``, then ``applyset-kubernetes/bytecode``) is made
private (0700); a directory or file that belongs to another user, or that others may write, is
never read (code from it would run as this user). Anything that goes wrong leaves the import to
the zip importer, as without the cache. ``APPLYSET_BYTECODE_CACHE=false`` turns it off.

Standard library only, and no Ansible: the modules import it before anything else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import importlib.machinery
import importlib.util
import marshal
import os
import stat
import sys
import tempfile
import zipimport

PREFIX = "ansible_collections.applyset.kubernetes.plugins.module_utils."
# At most this many files are kept; past it, the older half goes (a version of the collection
# writes about 70).
MAX_FILES = 600
_OFF = ("0", "false", "no", "off")


def install(environ=None):
    """Put the caching finder on ``sys.meta_path`` just before the path finder (once); returns it, or None when the
    cache is off or has no usable directory."""
    environ = os.environ if environ is None else environ
    if environ.get("APPLYSET_BYTECODE_CACHE", "true").strip().lower() in _OFF:
        return None
    for finder in sys.meta_path:
        if isinstance(finder, CachingFinder):
            return finder
    directory = cache_dir(environ)
    if directory is None:
        return None
    finder = CachingFinder(directory)
    # Just before Python's path finder (which would find the zip): the finders ahead of it (built-in
    # and frozen modules, and whatever a host or a test harness put first) keep their places.
    at = next((i for i, f in enumerate(sys.meta_path) if f is importlib.machinery.PathFinder), len(sys.meta_path))
    sys.meta_path.insert(at, finder)
    return finder


def cache_dir(environ):
    """The private cache directory, made if missing; None when it cannot be used safely."""
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    tag = sys.implementation.cache_tag or "python"
    directory = os.path.join(base, "applyset-kubernetes", "bytecode", tag)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        return directory if _private(os.stat(directory, follow_symlinks=False), directory=True) else None
    except OSError:
        return None


def _private(st, directory=False):
    """Whether what ``st`` describes is this user's own and nobody else may write it."""
    kind_ok = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
    return kind_ok and st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


class CachingFinder:
    """Finds the collection's module_utils in the zip Python would import them from, and loads
    them through the cache. The spec is made here, not by the zip importer's ``find_spec``: that
    asks ``get_filename``, which compiles the module only to learn its path (CPython 3.10-3.13),
    so without this every file would be compiled twice."""

    def __init__(self, directory):
        self.directory = directory
        self.hits = 0
        self.compiled = 0

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(PREFIX):
            return None
        for entry in path if path is not None else sys.path:
            importer = _zip_importer(entry)
            if importer is None:
                continue
            try:
                is_package = importer.is_package(fullname)
            except zipimport.ZipImportError:
                continue  # not in this entry
            base = os.path.join(importer.archive, importer.prefix, fullname.rpartition(".")[2])
            filename = os.path.join(base, "__init__.py") if is_package else base + ".py"
            spec = importlib.util.spec_from_loader(fullname, CachingLoader(importer, filename, self),
                                                   origin=filename, is_package=is_package)
            if spec is None:  # never, with a loader given; Python's own finders then
                continue
            spec.has_location = True
            if is_package:
                spec.submodule_search_locations = [base]
            return spec
        return None  # not in a zip: Python's own finders (and their .pyc files) do the rest


def _zip_importer(entry):
    importer = sys.path_importer_cache.get(entry)
    if isinstance(importer, zipimport.zipimporter):
        return importer
    if importer is not None or not isinstance(entry, str) or ".zip" not in entry:
        return None
    try:
        return zipimport.zipimporter(entry)
    except zipimport.ZipImportError:
        return None


class CachingLoader:
    """Loads one module of the zip, its code answered from the cache."""

    def __init__(self, importer, filename, finder):
        self._importer = importer
        self._filename = filename
        self._finder = finder

    def __getattr__(self, name):
        return getattr(self._importer, name)

    def create_module(self, spec):
        return None  # the default module

    def exec_module(self, module):
        exec(self.get_code(module.__name__), module.__dict__)  # pylint: disable=exec-used

    def get_filename(self, fullname):
        return self._filename

    def get_code(self, fullname):
        source = self._importer.get_source(fullname)
        if source is None:  # compiled files only: the zip importer's own code
            return self._importer.get_code(fullname)
        data = source.encode("utf-8")
        key = hashlib.sha256(importlib.util.MAGIC_NUMBER + fullname.encode() + b"\0" + data).hexdigest()
        path = os.path.join(self._finder.directory, key + ".bin")
        code = _read(path)
        if code is not None:
            self._finder.hits += 1
            return _renamed(code, self._filename)
        code = compile(data, self._filename, "exec", dont_inherit=True)
        self._finder.compiled += 1
        _write(self._finder.directory, path, code)
        return code


def _read(path):
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not _private(os.fstat(fd)):
            return None
        with os.fdopen(fd, "rb") as handle:
            fd = -1  # the file object closes it
            return marshal.loads(handle.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def _write(directory, path, code):
    try:
        names = os.listdir(directory)
        if len(names) >= MAX_FILES:
            _forget_oldest(directory, names)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(marshal.dumps(code))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):
        pass  # the next run compiles it again


def _forget_oldest(directory, names):
    dated = []
    for name in names:
        try:
            dated.append((os.stat(os.path.join(directory, name)).st_mtime, name))
        except OSError:
            continue
    for _mtime, name in sorted(dated)[:len(dated) // 2]:
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            continue


def _renamed(code, filename):
    """``code`` and every code object in it with ``co_filename`` set to this run's file."""
    if code.co_filename == filename:
        return code
    consts = tuple(_renamed(c, filename) if isinstance(c, type(code)) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)
