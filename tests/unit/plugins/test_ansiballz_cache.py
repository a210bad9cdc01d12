"""The persistent AnsiballZ payload cache of the action plugins (plugins/plugin_utils/ansiballz_cache.py):
its key, the copies into and out of ansible-core's per-process cache, the ownership and mode checks,
the .lock exclusion, the least-recently-used limit and the switch. tests/integration/test_ansiballz_payload_reuse.py
runs it under ansible-playbook."""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location("ansiballz_cache",
                                              REPO_ROOT / "plugins" / "plugin_utils" / "ansiballz_cache.py")
cache = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(cache)

FQN = "ansible_collections.applyset.kubernetes.plugins.modules.applyset_apply"
PREFIX = FQN + "-"
PAYLOAD = FQN + "-ZIP_DEFLATED-none"


# ----- the key -----------------------------------------------------------------------------------------------


@pytest.fixture
def trees(tmp_path):
    """A small collection and a small ansible-core package, and the inputs of a payload built from them."""
    root = tmp_path / "ansible_collections" / "applyset" / "kubernetes"
    for path, text in {"plugins/modules/applyset_apply.py": "from ..module_utils import a\n",
                       "plugins/module_utils/a.py": "VALUE = 1\n",
                       "plugins/module_utils/applyset/b.py": "VALUE = 2\n",
                       "meta/runtime.yml": "requires_ansible: '>=2.16'\n",
                       "plugins/action/applyset_apply.py": "# controller side\n"}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    ansible_dir = tmp_path / "site-packages" / "ansible"
    (ansible_dir / "module_utils" / "common").mkdir(parents=True)
    (ansible_dir / "module_utils" / "basic.py").write_text("# basic\n")
    (ansible_dir / "module_utils" / "common" / "text.py").write_text("# text\n")
    inputs = dict(module_fqn=FQN, module_path=str(root / "plugins/modules/applyset_apply.py"),
                  collection_roots=[str(root)], ansible_version="2.19.4", ansible_dir=str(ansible_dir),
                  compression="ZIP_DEFLATED", settings=[("_ANSIBALLZ_COVERAGE_CONFIG", None)])
    return SimpleNamespace(root=root, ansible_dir=ansible_dir, inputs=inputs)


def key(trees, **changes):
    return cache.payload_key(cache.PayloadInputs(**dict(trees.inputs, **changes)))


def test_the_key_is_stable_while_nothing_changes_bytecode_and_plugins_outside_the_payload_included(trees):
    first = key(trees)
    (trees.root / "plugins/module_utils/__pycache__").mkdir()
    (trees.root / "plugins/module_utils/__pycache__/a.cpython-311.pyc").write_bytes(b"\0compiled")
    (trees.root / "plugins/action/applyset_apply.py").write_text("# edited controller side\n")
    assert key(trees) == first and len(first) == 64


def test_the_key_changes_with_the_bytes_of_a_module_utils_file_even_at_the_same_size_and_mtime(trees):
    path = trees.root / "plugins/module_utils/applyset/b.py"
    first, info = key(trees), path.stat()
    path.write_text("VALUE = 3\n")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size and key(trees) != first


@pytest.mark.parametrize("edit", ["module", "new module_utils file", "runtime.yml"])
def test_the_key_changes_with_the_module_a_new_file_and_the_collection_routing(trees, edit):
    first = key(trees)
    path = {"module": "plugins/modules/applyset_apply.py", "new module_utils file": "plugins/module_utils/c.py",
            "runtime.yml": "meta/runtime.yml"}[edit]
    (trees.root / path).write_text("# edited\n")
    assert key(trees) != first


@pytest.mark.parametrize("change", [
    {"ansible_version": "2.19.5"}, {"ansible_version": "2.19.4.post0"}, {"ansible_dir": "/elsewhere/ansible"},
    {"module_fqn": FQN.replace("apply", "info")}, {"compression": "ZIP_STORED"},
    {"settings": [("_ANSIBALLZ_COVERAGE_CONFIG", "{'output': '/tmp/c'}")]},
    {"module_utils_paths": ["/etc/ansible/module_utils"]}])
def test_the_key_changes_with_ansible_core_the_module_and_the_settings(trees, change):
    assert key(trees, **change) != key(trees)


def test_the_key_changes_when_ansible_cores_own_module_utils_are_edited(trees):
    first = key(trees)
    (trees.ansible_dir / "module_utils" / "common" / "text.py").write_text("# text, patched\n")
    assert key(trees) != first


def test_the_key_changes_with_the_files_of_a_configured_module_utils_dir(trees, tmp_path):
    extra = tmp_path / "playbook" / "module_utils"
    extra.mkdir(parents=True)
    first = key(trees, module_utils_paths=[str(extra)])
    (extra / "basic.py").write_text("# shadows ansible.module_utils.basic\n")
    assert key(trees, module_utils_paths=[str(extra)]) != first


def test_the_key_changes_with_the_controllers_python(trees, monkeypatch):
    first = key(trees)
    monkeypatch.setattr(sys, "version", sys.version + " patched")
    assert key(trees) != first


def test_a_directory_link_back_into_its_parent_is_not_followed_forever(trees):
    (trees.root / "plugins/module_utils/applyset/loop").symlink_to("..")
    assert len(key(trees)) == 64


def test_the_key_of_this_repository_is_stable_and_reads_every_module_utils_file():
    import ansible

    inputs = cache.PayloadInputs(module_fqn=FQN, module_path=str(REPO_ROOT / "plugins/modules/applyset_apply.py"),
                                 collection_roots=[str(REPO_ROOT)], ansible_version=ansible.__version__,
                                 ansible_dir=os.path.dirname(ansible.__file__))
    assert cache.payload_key(inputs) == cache.payload_key(inputs)
    walked = [name for name, _entry in cache._walk(str(REPO_ROOT / "plugins/module_utils"))]
    assert "applyset/spec.py" in walked and not [name for name in walked if "__pycache__" in name]


def test_the_modules_import_no_other_collection_so_the_key_covers_all_they_carry():
    """The key hashes this collection's module_utils only: a module_utils import of another collection
    would need that collection's files in the key too."""
    others = set()
    for path in [*REPO_ROOT.glob("plugins/modules/*.py"), *REPO_ROOT.glob("plugins/module_utils/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            others.update(n for n in names if n.startswith("ansible_collections.")
                          and not n.startswith("ansible_collections.applyset.kubernetes."))
    assert others == set()


def test_the_collection_root_is_found_from_the_module_path():
    assert cache.collection_root("/c/ansible_collections/a/b/plugins/modules/m.py") == "/c/ansible_collections/a/b"
    assert cache.collection_root("/roles/x/library/m.py") is None


# ----- restore and save ----------------------------------------------------------------------------------------


@pytest.fixture
def dirs(tmp_path):
    """A local tmp base as ansible-core makes it: 0700, with a per-process dir and its ansiballz_cache."""
    base = tmp_path / "tmp"
    process = base / "ansible-local-123abc"
    process.mkdir(parents=True, mode=0o700)
    base.chmod(0o700)
    process_cache = process / "ansiballz_cache"
    process_cache.mkdir()
    return SimpleNamespace(base=base, process=process, process_cache=process_cache,
                           entry=Path(cache.entry_dir(str(process), "a" * 64)))


def mode(path):
    return os.stat(path).st_mode & 0o777


def test_the_entry_is_under_the_local_tmp_base_and_save_copies_the_modules_payload_files_only(dirs):
    assert dirs.entry == dirs.base / "applyset-ansiballz" / ("a" * 64)
    for name in (PAYLOAD, PAYLOAD + ".lock", PAYLOAD + "-part", FQN + "-ZIP_STORED",
                 "ansible.modules.ping-ZIP_DEFLATED-none", FQN.replace("apply", "apply_x") + "-ZIP_DEFLATED"):
        (dirs.process_cache / name).write_bytes(b"payload of " + name.encode())
    copied = cache.save_entry(str(dirs.process_cache), str(dirs.entry), PREFIX)
    assert copied == sorted([FQN + "-ZIP_STORED", PAYLOAD]) == sorted(os.listdir(dirs.entry))
    assert (dirs.entry / PAYLOAD).read_bytes() == b"payload of " + PAYLOAD.encode()
    assert mode(dirs.entry) == mode(dirs.entry.parent) == 0o700 and mode(dirs.entry / PAYLOAD) == 0o600
    assert cache.save_entry(str(dirs.process_cache), str(dirs.entry), PREFIX) == []  # kept, not copied again


def test_restore_copies_into_a_new_process_cache_what_it_does_not_have_and_marks_the_entry_used(dirs, tmp_path):
    (dirs.process_cache / PAYLOAD).write_bytes(b"built")
    (dirs.process_cache / (FQN + "-ZIP_STORED")).write_bytes(b"stored")
    cache.save_entry(str(dirs.process_cache), str(dirs.entry), PREFIX)
    os.utime(dirs.entry, (1, 1))
    later = dirs.base / "ansible-local-456def" / "ansiballz_cache"
    later.parent.mkdir(mode=0o700)
    assert cache.restore_entry(str(dirs.entry), str(later), PREFIX) == sorted([FQN + "-ZIP_STORED", PAYLOAD])
    assert (later / PAYLOAD).read_bytes() == b"built" and mode(later) == 0o700
    assert dirs.entry.stat().st_mtime > 1
    (later / PAYLOAD).write_bytes(b"built by this process")
    (later / (FQN + "-ZIP_STORED")).unlink()
    assert cache.restore_entry(str(dirs.entry), str(later), PREFIX) == [FQN + "-ZIP_STORED"]
    assert (later / PAYLOAD).read_bytes() == b"built by this process"
    assert not [n for n in os.listdir(later) if n.startswith(".applyset-")]  # no temporary file left


def test_restore_without_an_entry_is_file_not_found(dirs):
    with pytest.raises(FileNotFoundError):
        cache.restore_entry(str(dirs.entry), str(dirs.process_cache), PREFIX)


def saved(dirs):
    (dirs.process_cache / PAYLOAD).write_bytes(b"built")
    cache.save_entry(str(dirs.process_cache), str(dirs.entry), PREFIX)
    target = dirs.base / "ansible-local-789" / "ansiballz_cache"
    target.parent.mkdir(mode=0o700)
    return target


@pytest.mark.parametrize("where", ["entry", "cache dir", "local tmp base"])
def test_a_directory_writable_by_group_or_others_is_refused_and_nothing_is_restored(dirs, where):
    target = saved(dirs)
    {"entry": dirs.entry, "cache dir": dirs.entry.parent, "local tmp base": dirs.base}[where].chmod(0o770)
    with pytest.raises(cache.CacheUnsafe):
        cache.restore_entry(str(dirs.entry), str(target), PREFIX)
    assert not target.exists() or os.listdir(target) == []


def test_a_sticky_world_writable_local_tmp_base_as_tmp_is_accepted(dirs):
    target = saved(dirs)
    dirs.base.chmod(0o1777)
    assert cache.restore_entry(str(dirs.entry), str(target), PREFIX) == [PAYLOAD]


def test_a_file_writable_by_others_or_a_link_in_the_entry_is_refused(dirs, tmp_path):
    target = saved(dirs)
    (dirs.entry / PAYLOAD).chmod(0o622)
    with pytest.raises(cache.CacheUnsafe):
        cache.restore_entry(str(dirs.entry), str(target), PREFIX)
    (dirs.entry / PAYLOAD).unlink()
    (tmp_path / "planted").write_bytes(b"planted")
    (dirs.entry / PAYLOAD).symlink_to(tmp_path / "planted")
    with pytest.raises(OSError):
        cache.restore_entry(str(dirs.entry), str(target), PREFIX)
    assert os.listdir(target) == []


def test_an_entry_that_is_a_link_is_refused(dirs, tmp_path):
    target = saved(dirs)
    dirs.entry.rename(tmp_path / "elsewhere")
    dirs.entry.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(cache.CacheUnsafe):
        cache.restore_entry(str(dirs.entry), str(target), PREFIX)


def test_what_another_user_owns_is_refused(dirs, monkeypatch):
    target = saved(dirs)
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 4242)
    with pytest.raises(cache.CacheUnsafe, match="belongs to uid"):
        cache.restore_entry(str(dirs.entry), str(target), PREFIX)
    with pytest.raises(cache.CacheUnsafe, match="belongs to uid"):
        cache.save_entry(str(dirs.process_cache), str(dirs.entry), PREFIX)


def test_ansible_cores_group_writable_files_are_saved_only_from_a_private_process_dir(dirs):
    (dirs.process_cache / PAYLOAD).write_bytes(b"built under umask 002")
    (dirs.process_cache / PAYLOAD).chmod(0o664)
    assert cache.save_entry(str(dirs.process_cache), str(dirs.entry), PREFIX) == [PAYLOAD]
    assert mode(dirs.entry / PAYLOAD) == 0o600
    (dirs.entry / PAYLOAD).unlink()
    dirs.process.chmod(0o755)
    with pytest.raises(cache.CacheUnsafe):
        cache.save_entry(str(dirs.process_cache), str(dirs.entry), PREFIX)
    assert os.listdir(dirs.entry) == []


def test_a_new_entry_removes_the_least_recently_used_beyond_the_limit_and_nothing_else(dirs):
    root = dirs.entry.parent
    root.mkdir(mode=0o700)
    for number in range(10):
        old = root / f"{number:064x}"
        old.mkdir(mode=0o700)
        os.utime(old, (1000 + number, 1000 + number))
    (root / "not-a-key").mkdir()
    (dirs.process_cache / PAYLOAD).write_bytes(b"built")
    cache.save_entry(str(dirs.process_cache), str(dirs.entry), PREFIX, keep=8)
    assert sorted(os.listdir(root)) == sorted([dirs.entry.name, "not-a-key"] + [f"{n:064x}" for n in range(3, 10)])


@pytest.mark.parametrize("value, on", [(None, True), ("", True), ("true", True), ("1", True), ("false", False),
                                       ("False", False), ("0", False), ("no", False), ("off", False)])
def test_the_switch(value, on):
    assert cache.enabled({} if value is None else {cache.ENV_SWITCH: value}) is on


def test_a_task_cache_that_cannot_work_is_none_and_never_raises(monkeypatch):
    broken_action = SimpleNamespace()  # no loader, no connection, no task
    assert cache.TaskCache.prepare(broken_action, "applyset.kubernetes.applyset_apply", {}) is None
    assert cache.TaskCache.prepare(broken_action, "x", {}, environ={cache.ENV_SWITCH: "false"}) is None
    cache.TaskCache("/nonexistent/applyset-ansiballz/" + "b" * 64, "/nonexistent/ansiballz_cache", PREFIX).save()
