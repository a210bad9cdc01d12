"""bytecode_cache.py: the collection's module_utils imported from a zip (as AnsiballZ runs them)
are compiled once, kept in a private cache, and loaded from it while their source is the same.

Each import runs in a fresh interpreter (a subprocess), as each module run does.
"""

import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CACHE_MODULE = REPO / "plugins" / "module_utils" / "bytecode_cache.py"
PKG = "ansible_collections/applyset/kubernetes/plugins/module_utils"

IMPORTER = """
import json, os, sys, traceback
sys.path.insert(0, sys.argv[1])
from ansible_collections.applyset.kubernetes.plugins.module_utils import bytecode_cache
finder = bytecode_cache.install()
from ansible_collections.applyset.kubernetes.plugins.module_utils.demo import inner
from ansible_collections.applyset.kubernetes.plugins.module_utils.demo.inner import VALUE, where, fails
try:
    fails()
    frame = None
except ValueError as err:
    frame = traceback.extract_tb(err.__traceback__)[-1]
print(json.dumps({"value": VALUE, "where": where(), "file": inner.__file__,
                  "hits": finder and finder.hits, "compiled": finder and finder.compiled,
                  "frame": frame and [frame.filename, frame.lineno, frame.line]}))
"""


def make_zip(path: Path, value: str) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for part in ("ansible_collections", "ansible_collections/applyset", "ansible_collections/applyset/kubernetes",
                     "ansible_collections/applyset/kubernetes/plugins", PKG, f"{PKG}/demo"):
            z.writestr(f"{part}/__init__.py", "")
        z.writestr(f"{PKG}/bytecode_cache.py", CACHE_MODULE.read_text())
        z.writestr(f"{PKG}/demo/inner.py", f"VALUE = {value!r}\n\n"
                   "def where():\n    return (lambda: __file__)()\n\n"
                   "def fails():\n    raise ValueError('from the zip')\n")
    return path


def run(zip_path: Path, cache_home: Path, **env) -> dict:
    environ = {k: v for k, v in os.environ.items() if k != "APPLYSET_BYTECODE_CACHE"}
    environ.update(XDG_CACHE_HOME=str(cache_home), **env)
    proc = subprocess.run([sys.executable, "-c", IMPORTER, str(zip_path)], capture_output=True, text=True,
                          env=environ, timeout=60, check=True)
    return json.loads(proc.stdout)


def cached_files(cache_home: Path) -> list:
    return sorted(cache_home.glob("applyset-kubernetes/bytecode/*/*.bin"))


def test_compiled_once_then_loaded_from_the_cache_with_this_runs_file_names(tmp_path):
    first = run(make_zip(tmp_path / "a.zip", "one"), tmp_path / "cache")
    assert first["value"] == "one" and first["hits"] == 0 and first["compiled"] == 2  # the package demo and demo.inner
    files = cached_files(tmp_path / "cache")
    assert len(files) == 2 and all(stat.S_IMODE(f.stat().st_mode) & 0o077 == 0 for f in files)
    # another run's zip (AnsiballZ uses a new temporary path every time): loaded, under its own file name
    second = run(make_zip(tmp_path / "b.zip", "one"), tmp_path / "cache")
    assert second["hits"] == 2 and second["compiled"] == 0
    inner = str(tmp_path / "b.zip" / PKG / "demo" / "inner.py")
    assert second["file"] == second["where"] == inner
    assert second["frame"] == [inner, 7, "raise ValueError('from the zip')"]  # tracebacks name it and show the line


def test_a_changed_source_is_compiled_again_never_taken_from_the_cache(tmp_path):
    run(make_zip(tmp_path / "a.zip", "one"), tmp_path / "cache")
    changed = run(make_zip(tmp_path / "b.zip", "two"), tmp_path / "cache")
    assert changed["value"] == "two" and changed["compiled"] == 1 and changed["hits"] == 1


def test_a_cache_file_others_may_write_is_never_read(tmp_path):
    run(make_zip(tmp_path / "a.zip", "one"), tmp_path / "cache")
    for f in cached_files(tmp_path / "cache"):
        f.write_bytes(b"not code")  # what another user could have put there
        f.chmod(0o666)
    again = run(make_zip(tmp_path / "b.zip", "one"), tmp_path / "cache")
    assert again["value"] == "one" and again["hits"] == 0 and again["compiled"] == 2


def test_a_directory_others_may_write_is_not_used(tmp_path):
    directory = tmp_path / "cache" / "applyset-kubernetes" / "bytecode"
    directory.mkdir(parents=True)
    tag = sys.implementation.cache_tag
    (directory / tag).mkdir(mode=0o777)
    (directory / tag).chmod(0o777)
    result = run(make_zip(tmp_path / "a.zip", "one"), tmp_path / "cache")
    assert result["value"] == "one" and result["hits"] is None  # no finder: the zip importer as before


def test_turned_off_it_leaves_the_import_to_python(tmp_path):
    result = run(make_zip(tmp_path / "a.zip", "one"), tmp_path / "cache", APPLYSET_BYTECODE_CACHE="false")
    assert result["value"] == "one" and result["hits"] is None
    assert cached_files(tmp_path / "cache") == []


def test_a_broken_cache_file_is_compiled_again(tmp_path):
    run(make_zip(tmp_path / "a.zip", "one"), tmp_path / "cache")
    for f in cached_files(tmp_path / "cache"):
        f.write_bytes(b"\x00\x01")
    again = run(make_zip(tmp_path / "b.zip", "one"), tmp_path / "cache")
    assert again["value"] == "one" and again["compiled"] == 2


@pytest.mark.parametrize("count", [5])
def test_the_cache_keeps_a_bounded_number_of_files(tmp_path, monkeypatch, count):
    sys.path.insert(0, str(CACHE_MODULE.parent))
    try:
        import bytecode_cache
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(bytecode_cache, "MAX_FILES", count)
    directory = tmp_path / "d"
    directory.mkdir(mode=0o700)
    for i in range(count):
        (directory / f"{i}.bin").write_bytes(b"x")
        os.utime(directory / f"{i}.bin", (i, i))
    bytecode_cache._write(str(directory), str(directory / "new.bin"), compile("1", "x", "exec"))
    names = sorted(p.name for p in directory.iterdir())
    assert "new.bin" in names and "0.bin" not in names and len(names) == count - count // 2 + 1
