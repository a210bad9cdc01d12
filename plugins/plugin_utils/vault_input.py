# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Decrypt the Ansible Vault input of the collection's modules on the controller, in memory.

The action plugins use ``VaultInput`` with the play's vault secrets (``DataLoader``'s
``VaultLib``); nothing here writes a file (``DataLoader.get_real_file`` would write the
plaintext to a temporary file, so it is not used). What is decrypted:

* ``src`` files encrypted whole with ``ansible-vault encrypt``, and ``src`` files that hold
  ``!vault`` values (``ansible-vault encrypt_string``). ``src_contents`` returns the plain bytes
  of just those files, by real path; the action plugin hands them to the module in its hidden
  ``no_log`` parameter, and the module reads them in place of the file
  (``manifests.load_sources``): so the order of the documents, the expansion of directories and
  globs, and the file names in messages stay exactly what they are for plain files, which the
  module still reads from disk itself.
* a ``kubeconfig`` option that is the path of a vault-encrypted file (``kubeconfig``): it
  becomes the inline kubeconfig mapping, which travels hidden as well.

A file that is vaulted but cannot be decrypted (no vault password, or not the right one) is an
``InputError`` naming the file, and nothing is sent to the module or the cluster.
"""

from __future__ import annotations

import os
import re

import yaml
from ansible.errors import AnsibleError
from ansible.parsing.vault import AnsibleVaultFormatError

from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.kubeyaml import stream as kubeyaml
from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.inputs import manifests
from ansible_collections.applyset.kubernetes.plugins.module_utils.applyset.errors import InputError

PASSWORD_OPTIONS = "--ask-vault-pass, --vault-password-file FILE or --vault-id LABEL@SOURCE"

# kubectl cuts a YAML stream into documents at every line that starts with "---" (as kubeyaml does).
_SEPARATOR = re.compile(r"^---.*$", re.MULTILINE)
_LINE_BREAKS = re.compile(r"\r\n|\r|\n")
_VAULT_TAGS = (("!", "vault"), (None, "!vault"))  # !vault and the verbatim !<!vault>

# Kubeconfig fields that hold a file path; kubectl reads a relative one from the kubeconfig's directory
# (client-go's ResolveLocalPaths; an exec command only when it holds a path separator).
_CLUSTER_FILES = ("certificate-authority",)
_USER_FILES = ("client-certificate", "client-key", "tokenFile")


class VaultInput:
    """Decrypt vaulted input with ``vault``, an ``ansible.parsing.vault.VaultLib`` (``loader._vault``)."""

    def __init__(self, vault):
        self._vault = vault

    # ----- src -------------------------------------------------------------------------------

    def src_contents(self, src) -> dict:
        """``{real path: plain bytes}`` of the files of ``src`` that are vaulted or hold ``!vault`` values.

        The files are listed as the module lists them (``manifests.source_files``). A file that cannot
        be listed or read here is left out: the module reads it and reports the problem as usual.

        Raises:
            InputError: a vaulted file or value that cannot be decrypted, or a file with ``!vault``
                values that cannot be read as YAML (the values could not be found).
        """
        files, _problems = manifests.source_files([src] if isinstance(src, str) else src)
        contents = {}
        for path, shown in files:
            data = _read_small_file(path)
            plain = None if data is None else self._plain_bytes(data, f"file {shown}")
            if plain is not None:
                contents[os.path.realpath(path)] = plain
        return contents

    def _plain_bytes(self, data: bytes, file_ref: str) -> bytes | None:
        """The file's bytes decrypted, or None when it holds nothing vaulted."""
        decrypted = data.startswith(manifests.VAULT_HEADER)
        if decrypted:
            data = self._decrypt(data, file_ref, "the file is")
        if b"!vault" in data:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None  # the module refuses the file, naming the byte offset
            if text is not None:
                replaced = self._replace_vault_values(text, file_ref)
                if replaced != text:
                    return replaced.encode("utf-8")
        return data if decrypted else None

    def _replace_vault_values(self, text: str, file_ref: str) -> str:
        """``text`` with every ``!vault`` scalar replaced by its plaintext as a double-quoted string.

        Why text and not a YAML loader: the module must keep reading every file with kubectl's YAML
        rules (``kubeyaml``: ``on`` is a boolean, ``0o17`` a number, ``12:30`` a string), which
        Ansible's loader does not follow, and ``kubeyaml`` keeps a ``!vault`` scalar as its text,
        as kubectl does. So the tagged scalars are found with PyYAML's scanner (the tokenizer under
        both loaders), per document as kubectl cuts them, and only they are rewritten. A
        double-quoted scalar is a string under every YAML rule, and the line breaks of the
        encrypted block are kept after it, so every later line keeps its number in messages.
        """
        if text.lstrip("\ufeff")[:kubeyaml.JSON_SNIFF_LENGTH].lstrip().startswith("{"):
            return text  # a JSON stream (kubectl's sniffing): it has no tags
        pieces, position, line = [], 0, 0
        for start, end in _yaml_chunks(text):
            line += text.count("\n", position, start)
            pieces.append(text[position:start])
            pieces.append(self._replace_in_chunk(text[start:end], line, file_ref))
            line += text.count("\n", start, end)
            position = end
        pieces.append(text[position:])
        return "".join(pieces)

    def _replace_in_chunk(self, chunk: str, line_offset: int, file_ref: str) -> str:
        if "!vault" not in chunk:
            return chunk
        edits = []  # (start, end, replacement), in order
        tokens = _tokens(chunk, line_offset, file_ref)
        for index, token in enumerate(tokens):
            if not (isinstance(token, yaml.TagToken) and token.value in _VAULT_TAGS):
                continue
            where = f"{file_ref}, line {line_offset + token.start_mark.line + 1}, column {token.start_mark.column + 1}"
            scalar = next((item for item in tokens[index + 1:] if not isinstance(item, yaml.AnchorToken)), None)
            if not isinstance(scalar, yaml.ScalarToken):
                raise InputError("a !vault tag is not on a string", obj=where,
                                 fix="tag only the encrypted text, as ansible-vault encrypt_string writes it")
            plain = self._decrypt(scalar.value.encode("utf-8"), where, "the !vault value is")
            try:
                plain_text = plain.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError("the decrypted !vault value is not UTF-8 text", obj=where,
                                 fix="encrypt text, or put binary data base64-encoded under a Secret's data") from None
            span = chunk[scalar.start_mark.index:scalar.end_mark.index]
            edits.append((token.start_mark.index, token.end_mark.index, ""))
            edits.append((scalar.start_mark.index, scalar.end_mark.index,
                          _double_quoted(plain_text) + "".join(_LINE_BREAKS.findall(span))))
        for start, end, replacement in reversed(edits):
            chunk = chunk[:start] + replacement + chunk[end:]
        return chunk

    # ----- kubeconfig ------------------------------------------------------------------------

    def kubeconfig(self, value, base_dir: str) -> dict | None:
        """The kubeconfig mapping of ``value`` when it is the path of a vault-encrypted file, else None.

        A relative ``value`` is relative to ``base_dir`` (the module runs there); relative file paths
        inside are made absolute against the kubeconfig's directory, as kubectl reads them.
        """
        if not isinstance(value, str) or not value.strip() or "\n" in value:
            return None
        paths = [os.path.join(base_dir, os.path.expanduser(part)) for part in value.split(os.pathsep) if part]
        vaulted = [path for path in paths if _starts_vaulted(path)]
        if not vaulted:
            return None
        ref = f"kubeconfig {value}"
        if len(paths) > 1:
            raise InputError("a vault-encrypted kubeconfig cannot be merged with other kubeconfig files", obj=ref,
                             fix="give the vault-encrypted kubeconfig file alone")
        data = _read_small_file(vaulted[0])
        if data is None:
            raise InputError("cannot read the file", obj=ref, fix="check the path and the file's permissions")
        config = _kubeconfig_mapping(self._decrypt(data, ref, "the file is"), ref)
        _resolve_kubeconfig_paths(config, os.path.dirname(os.path.abspath(vaulted[0])))
        return config

    # ----- decryption ------------------------------------------------------------------------

    def _decrypt(self, ciphertext: bytes, where: str, subject: str) -> bytes:
        """``ciphertext`` decrypted; an ``InputError`` about ``where`` when it cannot be."""
        label = _vault_id(ciphertext)
        encrypted = f"{subject} encrypted with Ansible Vault" + (f" (vault ID {label})" if label else "")
        fix = f"give ansible-playbook the vault password: {PASSWORD_OPTIONS}"
        if label:
            fix += f" (for this one: --vault-id {label}@SOURCE)"
        if not self._vault.secrets:
            raise InputError(f"{encrypted}, and no vault password was given", obj=where, fix=fix)
        try:
            return self._vault.decrypt(ciphertext)
        except AnsibleVaultFormatError as error:
            raise InputError(f"{subject} not valid Ansible Vault data: {_message(error)}", obj=where,
                             fix="encrypt it again with ansible-vault") from None
        except AnsibleError:
            raise InputError(f"{encrypted}, and none of the vault passwords given decrypts it", obj=where,
                             fix=fix.replace("the vault password", "the password it was encrypted with", 1)) from None


def _read_small_file(path: str) -> bytes | None:
    """The file's bytes, or None when it is not a regular file, cannot be read or is too large."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > manifests.MAX_FILE_BYTES:
            return None
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _starts_vaulted(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(manifests.VAULT_HEADER)) == manifests.VAULT_HEADER
    except OSError:
        return False  # the module reports a missing or unreadable kubeconfig


def _vault_id(ciphertext: bytes) -> str | None:
    """The vault ID label of the envelope's header (``$ANSIBLE_VAULT;1.2;AES256;prod``), if any."""
    header = ciphertext.strip().split(b"\n", 1)[0].split(b";")
    return header[3].strip().decode("utf-8", "replace") if len(header) > 3 and header[3].strip() else None


def _message(error) -> str:
    return getattr(error, "message", None) or str(error)


def _yaml_chunks(text: str):
    """(start, end) of each text between kubectl's document separator lines."""
    start = 0
    for match in _SEPARATOR.finditer(text):
        yield start, match.start()
        start = min(match.end() + 1, len(text))
    yield start, len(text)


def _tokens(chunk: str, line_offset: int, file_ref: str) -> list:
    try:
        return list(yaml.scan(chunk, Loader=yaml.SafeLoader))
    except yaml.YAMLError as error:
        # The module would refuse the file too; refused here, no !vault value can go on encrypted.
        mark = getattr(error, "problem_mark", None)
        where = f" at line {line_offset + mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or "cannot be read"
        raise InputError(f"YAML syntax error{where}: {problem}", obj=file_ref,
                         fix="correct the YAML at that position") from None


def _double_quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar: printable characters as they are, others escaped."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif (0x20 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD) and code != 0xFEFF \
                or code >= 0x10000:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}")
    out.append('"')
    return "".join(out)


def _kubeconfig_mapping(data: bytes, ref: str) -> dict:
    """The decrypted kubeconfig read as the module reads a kubeconfig file (``yaml.safe_load``).

    Errors name the line and column only: the text is full of credentials.
    """
    try:
        config = yaml.safe_load(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InputError(f"the decrypted kubeconfig is not UTF-8 (byte offset {error.start})", obj=ref,
                         fix="save the kubeconfig as UTF-8 and encrypt it again") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputError(f"the decrypted kubeconfig is not valid YAML{where}", obj=ref,
                         fix=f"check it with: ansible-vault view {ref.split(' ', 1)[1]}") from None
    if not isinstance(config, dict):
        raise InputError("not a kubeconfig: the decrypted file holds no mapping", obj=ref,
                         fix=f"check it with: ansible-vault view {ref.split(' ', 1)[1]}")
    return config


def _resolve_kubeconfig_paths(config: dict, directory: str) -> None:
    def resolve(entry, key):
        value = entry.get(key)
        if isinstance(value, str) and value and not os.path.isabs(os.path.expanduser(value)):
            entry[key] = os.path.normpath(os.path.join(directory, value))

    for section, key, fields in (("clusters", "cluster", _CLUSTER_FILES), ("users", "user", _USER_FILES)):
        for item in config.get(section) or []:
            entry = item.get(key) if isinstance(item, dict) else None
            if not isinstance(entry, dict):
                continue
            for field in fields:
                resolve(entry, field)
            exec_config = entry.get("exec")
            if isinstance(exec_config, dict) and os.sep in str(exec_config.get("command") or ""):
                resolve(exec_config, "command")
