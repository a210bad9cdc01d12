# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: kubeconfig
short_description: One host per Kubernetes cluster, from kubeconfig contexts or a list of kubeconfig files
version_added: 0.1.0
description:
  - Makes one inventory host per context of the kubeconfig files given in O(kubeconfigs) (by default the files of
    E(KUBECONFIG), else C(~/.kube/config)), so that one play deploys, previews or audits the same ApplySets on
    many clusters.
  - Each host gets the variables C(applyset_kubeconfig) (the absolute path of its file) and C(applyset_context)
    (its context). The roles of this collection (C(deploy), C(uninstall), C(audit)) connect with them when their
    own connection variables are unset; for tasks that call the modules directly, one C(module_defaults) entry
    for the C(group/applyset.kubernetes.applyset) action group passes them on (see EXAMPLES).
  - Also set, for reference only, C(applyset_cluster) (the kubeconfig's cluster entry), C(applyset_server) (the
    API server URL) and C(applyset_namespace) (the context's namespace, when it has one).
  - Credentials are never read into variables. Only the names of contexts, clusters and users, and the server
    URL, are read from the files; certificates, keys and tokens stay in the files, which the modules read when
    they connect. C(ansible-inventory --list) therefore shows no secret.
  - Hosts run their tasks on the controller (C(ansible_connection=local)) with the Python that runs Ansible, so
    that the C(kubernetes) library installed next to Ansible is found; see O(connection) and
    O(python_interpreter).
  - "Groups: every host is in O(group); O(context_pattern) makes groups from parts of the context names (for
    example C(stage_prod) and C(region_eu)); and O(keyed_groups), O(groups) and O(compose) work as in the
    C(constructed) plugin, on the variables above (for example one group per cluster entry with
    C(keyed_groups: [{key: applyset_cluster, prefix: cluster}]))."
  - The inventory file's name must end in C(kubeconfig.yml) or C(kubeconfig.yaml), for example
    C(fleet.kubeconfig.yml).
author:
  - applyset.kubernetes contributors (!UNKNOWN)
extends_documentation_fragment:
  - constructed
options:
  plugin:
    description: Marks the file as a source of this plugin.
    required: true
    choices: [applyset.kubernetes.kubeconfig]
    type: str
  kubeconfigs:
    description:
      - The kubeconfig files. Each entry is a path (globs allowed, C(~) expanded, relative paths resolved against
        the directory of this inventory file) or a dictionary with C(path) and optionally C(contexts) (glob
        patterns of the contexts to take from that file) and C(name) (the host name, for a file that yields
        exactly one context).
      - When unset, the files listed in the E(KUBECONFIG) environment variable, or C(~/.kube/config).
      - A context name that appears in several files makes two hosts of the same name, which is refused; give
        the entries a C(name), or set O(host_name).
    type: list
    elements: raw
  contexts:
    description: Glob patterns; only contexts whose name matches one of them become hosts.
    type: list
    elements: str
    default: ['*']
  exclude_contexts:
    description: Glob patterns of contexts to leave out, for example stale entries of a personal kubeconfig.
    type: list
    elements: str
    default: []
  current_context_only:
    description: Take only each file's C(current-context), so one file makes one host.
    type: bool
    default: false
  host_name:
    description:
      - A Jinja2 expression for the host name, over C(context), C(cluster), C(server), C(namespace) and C(file)
        (the file name without its directory and extension). An entry's C(name) wins over it.
      - Host names may not contain C(:), C(,), spaces or brackets (they would break host patterns); rename such
        contexts, for example C(context | regex_replace('[^A-Za-z0-9_.-]', '-')).
    type: str
    default: context
  group:
    description: A group that holds every host of this source.
    type: str
    default: kubernetes_clusters
  context_pattern:
    description:
      - A regular expression with named groups, matched against each context name. Each named group that matches
        makes the host a member of the group C(<name>_<value>), and its value is put into the host variable
        C(applyset_context_parts).
      - For example C(^(?P<stage>[a-z]+)-(?P<region>[a-z0-9-]+)$) puts the context C(prod-eu-west) into the
        groups C(stage_prod) and C(region_eu_west). Contexts that do not match get no such group.
    type: str
  set_kubeconfig:
    description:
      - Set C(applyset_kubeconfig) to the file each host came from.
      - Turn it off when the files are somewhere else when the play runs. AWX, for example, writes a credential's
        kubeconfig to a new temporary path for the inventory sync and for each job. The hosts then carry only their
        C(applyset_context), and the modules read the file named by E(K8S_AUTH_KUBECONFIG) or E(KUBECONFIG) when
        the job runs (or a C(group_vars) file sets C(applyset_kubeconfig)).
    type: bool
    default: true
  connection:
    description: The C(ansible_connection) of every host; the modules run where the play runs. Empty sets none.
    type: str
    default: local
  python_interpreter:
    description:
      - The C(ansible_python_interpreter) of every host. By default the Python that runs this inventory (and
        Ansible), which has the collection's requirements when they were installed next to Ansible. Empty sets
        none.
    type: str
notes:
  - The plugin reads local files only; it contacts no cluster. A cluster that cannot be reached fails the tasks
    of its host, not the inventory.
  - Per-cluster variables come from C(group_vars/) and C(host_vars/) next to the inventory file or the playbook,
    as for any inventory.
  - The collection's C(docs/fleet.md) shows laptop and AWX set-ups, canary rollouts (C(playbooks/fleet-deploy.yml)),
    the fleet audit (C(playbooks/fleet-audit.yml)) and how runs scale with the number of clusters.
seealso:
  - module: applyset.kubernetes.applyset_apply
  - module: applyset.kubernetes.applyset_verify
"""

EXAMPLES = r"""
# fleet.kubeconfig.yml: one host per context of one kubeconfig file
plugin: applyset.kubernetes.kubeconfig
kubeconfigs: [~/.kube/fleet.yaml]
exclude_contexts: [kind-*]
context_pattern: '^(?P<stage>[a-z]+)-(?P<region>[a-z0-9-]+)$' # groups stage_prod, region_eu_west, ...
groups:
  canary: applyset_context.startswith('staging-')
keyed_groups:
  - key: applyset_cluster
    prefix: cluster

# Other sources, each in an inventory file of its own:
#
# One host per file, named by the entry (each file holds one context):
#   plugin: applyset.kubernetes.kubeconfig
#   kubeconfigs:
#     - {path: /etc/fleet/staging-eu.yaml, name: staging-eu}
#     - {path: /etc/fleet/prod-eu.yaml, name: prod-eu}
#
# Every file in a directory, one host per file, named after the file:
#   plugin: applyset.kubernetes.kubeconfig
#   kubeconfigs: [/etc/fleet/*.yaml]
#   current_context_only: true
#   host_name: file
#
# A play over the fleet: the roles connect by themselves; module_defaults wires the modules.
#   - hosts: kubernetes_clusters
#     gather_facts: false
#     module_defaults:
#       group/applyset.kubernetes.applyset:
#         kubeconfig: "{{ applyset_kubeconfig | default(omit) }}"
#         context: "{{ applyset_context | default(omit) }}"
#     tasks:
#       - name: List the sets on every cluster
#         applyset.kubernetes.applyset_info: {}
"""

import fnmatch
import glob
import os
import re
import sys

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML is an ansible-core dependency
    yaml = None

# Characters that cannot appear in a host name without breaking host patterns ("a:b", "a,b", "a[0]").
BAD_HOST_NAME = re.compile(r"[:,\s\[\]]")
GROUP_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def safe_group_name(text):
    """``eu-west-1`` -> ``eu_west_1``: group names are Python-identifier-like in Ansible."""
    return GROUP_NAME_UNSAFE.sub("_", text)


def default_kubeconfigs(environ=None):
    """The files kubectl would read: KUBECONFIG's list, else ~/.kube/config."""
    environ = os.environ if environ is None else environ
    listed = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return listed or ["~/.kube/config"]


def load_kubeconfig(path):
    """The names of a kubeconfig file: contexts, clusters (with their server) and users; never credentials."""
    try:
        with open(path, "rb") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as err:
        # Only the error's kind and position: a YAML error's text could quote a line of the file.
        where = getattr(err, "problem_mark", None)
        detail = err.strerror if isinstance(err, OSError) else "not valid YAML" + (
            " (line %d)" % (where.line + 1) if where is not None else "")
        raise AnsibleParserError("kubeconfig file %s cannot be read: %s" % (path, detail))
    if not isinstance(data, dict):
        raise AnsibleParserError("kubeconfig file %s is not a kubeconfig (no mapping at the top)" % path)

    def named(section):
        entries = data.get(section) or []
        return [e for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)]

    clusters: dict = {}
    for entry in named("clusters"):
        cluster = entry.get("cluster") if isinstance(entry.get("cluster"), dict) else {}
        clusters.setdefault(entry["name"], cluster.get("server"))
    users = {entry["name"] for entry in named("users")}
    contexts = []
    seen = set()
    for entry in named("contexts"):
        if entry["name"] in seen:
            continue  # kubectl uses the first of two contexts with one name
        seen.add(entry["name"])
        context = entry.get("context") if isinstance(entry.get("context"), dict) else {}
        contexts.append({"name": entry["name"], "cluster": context.get("cluster"), "user": context.get("user"),
                         "namespace": context.get("namespace")})
    current = data.get("current-context") if isinstance(data.get("current-context"), str) else None
    return {"contexts": contexts, "clusters": clusters, "users": users, "current": current}


def matches(name, patterns):
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = "applyset.kubernetes.kubeconfig"

    def verify_file(self, path):
        return super(InventoryModule, self).verify_file(path) and path.endswith(
            ("kubeconfig.yml", "kubeconfig.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        if yaml is None:  # pragma: no cover
            raise AnsibleParserError("the applyset.kubernetes.kubeconfig inventory needs PyYAML")
        self._read_config_data(path)
        base_dir = os.path.dirname(os.path.abspath(path))
        hosts = {}  # host name -> its variables; in file and context order
        sources: dict[str, str] = {}  # host name -> "file, context X", for the duplicate error
        for entry_number, entry in enumerate(self._entries(), start=1):
            for file_path in self._expand(entry, base_dir, entry_number):
                for host, variables in self._hosts_of_file(file_path, entry):
                    origin = "%s, context %s" % (file_path, variables["applyset_context"])
                    if host in sources:
                        raise AnsibleParserError(
                            "two clusters would both be the host %s (%s; and %s). Fix: give the kubeconfigs "
                            "entries a name, or set host_name (for example host_name: file)"
                            % (host, sources[host], origin))
                    sources[host] = origin
                    hosts[host] = variables
        self._populate(hosts)

    # ----- which files and contexts ---------------------------------------------------------

    def _entries(self):
        configured = self.get_option("kubeconfigs")
        entries = configured if configured else default_kubeconfigs()
        normalised = []
        for number, entry in enumerate(entries, start=1):
            if isinstance(entry, str):
                entry = {"path": entry}
            if not isinstance(entry, dict) or not isinstance(entry.get("path"), str) or not entry["path"].strip():
                raise AnsibleParserError(
                    "kubeconfigs entry %d must be a path or a dictionary with a path (and optionally name and "
                    "contexts); got %r" % (number, entry))
            unknown = set(entry) - {"path", "name", "contexts"}
            if unknown:
                raise AnsibleParserError("kubeconfigs entry %d (%s) has unknown keys %s; the keys are path, name "
                                         "and contexts" % (number, entry["path"], ", ".join(sorted(unknown))))
            normalised.append(entry)
        return normalised

    def _expand(self, entry, base_dir, number):
        path = os.path.expanduser(os.path.expandvars(entry["path"]))
        if not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        if glob.has_magic(path):
            files = sorted(f for f in glob.glob(path) if os.path.isfile(f))
            if not files:
                self.display.warning("kubeconfigs entry %d: no file matches %s" % (number, path))
            if entry.get("name") and len(files) > 1:
                raise AnsibleParserError("kubeconfigs entry %d names the host %s, but %s matches %d files; a name "
                                         "fits one file only" % (number, entry["name"], path, len(files)))
            return files
        if not os.path.isfile(path):
            raise AnsibleParserError(
                "kubeconfig file %s (kubeconfigs entry %d) does not exist. Fix: correct the path (relative paths "
                "are resolved against the inventory file's directory, %s)" % (path, number, base_dir))
        return [path]

    def _chosen_contexts(self, config, entry, file_path):
        contexts = config["contexts"]
        if self.get_option("current_context_only"):
            contexts = [c for c in contexts if c["name"] == config["current"]]
            if not contexts:
                raise AnsibleParserError(
                    "kubeconfig file %s has no current-context (or it names no context), but "
                    "current_context_only is set. Fix: set its current-context, or list its contexts in the "
                    "entry's contexts" % file_path)
        include = entry.get("contexts") or self.get_option("contexts")
        exclude = self.get_option("exclude_contexts")
        return [c for c in contexts if matches(c["name"], include) and not matches(c["name"], exclude)]

    def _hosts_of_file(self, file_path, entry):
        config = load_kubeconfig(file_path)
        chosen = self._chosen_contexts(config, entry, file_path)
        if entry.get("name") and len(chosen) != 1:
            raise AnsibleParserError(
                "the kubeconfigs entry for %s names the host %s, but %d contexts of the file were chosen (%s); "
                "a name fits one context. Fix: add contexts: [<one context>] to the entry"
                % (file_path, entry["name"], len(chosen), ", ".join(c["name"] for c in chosen) or "none"))
        found = []
        for context in chosen:
            self._check_context(context, config, file_path)
            variables = self._variables(context, config, file_path)
            if not self.get_option("set_kubeconfig"):
                del variables["applyset_kubeconfig"]
            host = entry.get("name") or self._host_name(context, config, file_path)
            if not isinstance(host, str) or not host or BAD_HOST_NAME.search(host):
                raise AnsibleParserError(
                    "context %s of %s would be the host %r, which host patterns cannot address. Fix: give the "
                    "entry a name, or set host_name, for example: host_name: \"context | regex_replace('[^A-Za-z0-9"
                    "_.-]', '-')\"" % (context["name"], file_path, host))
            found.append((host, variables))
        return found

    @staticmethod
    def _check_context(context, config, file_path):
        """A context that points nowhere fails here, named, rather than in every task of its host."""
        if context["cluster"] not in config["clusters"]:
            raise AnsibleParserError(
                "context %s in %s uses the cluster %s, which the file does not define. Fix: add the cluster to the "
                "file, or leave the context out with exclude_contexts"
                % (context["name"], file_path, context["cluster"]))
        if context["user"] and context["user"] not in config["users"]:
            raise AnsibleParserError(
                "context %s in %s uses the user %s, which the file does not define. Fix: add the user to the file, "
                "or leave the context out with exclude_contexts" % (context["name"], file_path, context["user"]))

    @staticmethod
    def _variables(context, config, file_path):
        variables = {
            "applyset_kubeconfig": file_path,
            "applyset_context": context["name"],
            "applyset_cluster": context["cluster"],
            "applyset_server": config["clusters"].get(context["cluster"]),
        }
        if context["namespace"]:
            variables["applyset_namespace"] = context["namespace"]
        return variables

    def _host_name(self, context, config, file_path):
        expression = self.get_option("host_name")
        values = {"context": context["name"], "cluster": context["cluster"], "namespace": context["namespace"],
                  "server": config["clusters"].get(context["cluster"]),
                  "file": os.path.splitext(os.path.basename(file_path))[0]}
        if expression in values:  # the common cases need no template
            return values[expression]
        try:
            return self._compose(expression, values)
        except Exception as err:
            raise AnsibleParserError("host_name %r cannot be evaluated for context %s of %s: %s"
                                     % (expression, context["name"], file_path, err))

    # ----- hosts, groups, variables -----------------------------------------------------------

    def _populate(self, hosts):
        group = self.get_option("group")
        if group:
            group = self.inventory.add_group(safe_group_name(group))
        pattern = self._context_pattern()
        connection = self.get_option("connection")
        interpreter = self.get_option("python_interpreter")
        if interpreter is None:
            interpreter = sys.executable
        strict = self.get_option("strict")
        for host, variables in hosts.items():
            self.inventory.add_host(host, group=group or None)
            if connection:
                variables["ansible_connection"] = connection
            if interpreter:
                variables["ansible_python_interpreter"] = interpreter
            if pattern is not None:
                self._add_pattern_groups(host, variables, pattern)
            for name, value in variables.items():
                self.inventory.set_variable(host, name, value)
            self._set_composite_vars(self.get_option("compose"), variables, host, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), variables, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), variables, host, strict=strict)

    def _context_pattern(self):
        text = self.get_option("context_pattern")
        if not text:
            return None
        try:
            pattern = re.compile(text)
        except re.error as err:
            raise AnsibleParserError("context_pattern %r is not a valid regular expression: %s" % (text, err))
        if not pattern.groupindex:
            raise AnsibleParserError("context_pattern %r has no named group, so it makes no group. Fix: name the "
                                     "parts, for example ^(?P<stage>[a-z]+)-(?P<region>.+)$" % text)
        return pattern

    def _add_pattern_groups(self, host, variables, pattern):
        found = pattern.search(variables["applyset_context"])
        if found is None:
            self.display.vvv("context %s does not match context_pattern; no groups from it"
                             % variables["applyset_context"])
            return
        parts = {name: value for name, value in found.groupdict().items() if value}
        variables["applyset_context_parts"] = parts
        for name, value in sorted(parts.items()):
            group = self.inventory.add_group(safe_group_name("%s_%s" % (name, value)))
            self.inventory.add_child(group, host)
