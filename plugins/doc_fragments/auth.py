# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Connection and authentication options shared by every module of the collection.

The option names, aliases and ``K8S_AUTH_*`` environment variables are the ones
kubernetes.core uses (its ``k8s_auth_options`` fragment), so ``module_defaults``,
AWX/AAP credentials and CI environments written for kubernetes.core work unchanged.
The argument spec that goes with this fragment is ``AUTH_ARG_SPEC`` in
``plugins/module_utils/ansible_support.py``; keep the two in step.

Use it in a module with ``extends_documentation_fragment: [applyset.kubernetes.auth]``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to an existing Kubernetes config file, or the content of a config file given as a dictionary.
      - Several files may be given as one path list, separated by C(:) (C(;) on Windows), the same way
        as the C(KUBECONFIG) environment variable of kubectl.
      - A path to a file encrypted with Ansible Vault is decrypted by the action plugin on the controller, in
        memory, with the play's vault passwords, and used as a dictionary (relative paths in it count from the
        file's directory). Give such a file alone, in this option (not through the environment variables).
      - Can also be set with the E(K8S_AUTH_KUBECONFIG) environment variable. The option wins over the
        environment variable.
      - If neither this option, O(context), nor enough explicit connection options (O(host) with O(api_key),
        or O(host) with O(client_cert) and O(client_key)) are given, the in-cluster configuration of a pod's
        service account is tried first, then the default config file C(~/.kube/config).
    type: raw
  context:
    description:
      - The name of a context in the config file to use instead of the file's current context.
      - Can also be set with the E(K8S_AUTH_CONTEXT) environment variable. The option wins over the
        environment variable.
    type: str
  host:
    description:
      - URL of the Kubernetes API server, for example V(https://k8s.example.com:6443).
      - Can also be set with the E(K8S_AUTH_HOST) environment variable. The option wins over the environment
        variable, and either wins over the server named in the config file.
    type: str
  api_key:
    description:
      - Bearer token used to authenticate with the API server.
      - Can also be set with the E(K8S_AUTH_API_KEY) environment variable. The option wins over the
        environment variable, and either wins over the credentials in the config file.
      - With O(host) set, no config file and no in-cluster configuration is loaded.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - Can also be set with the E(K8S_AUTH_VERIFY_SSL) environment variable (E(K8S_AUTH_VALIDATE_CERTS) is read
        too and is preferred when both are set). The option wins over the environment variables, and either wins
        over the setting in the config file.
    type: bool
    aliases: [ verify_ssl ]
  ca_cert:
    description:
      - Path to a CA certificate bundle used to verify the API server's certificate. The full chain must be given
        to avoid certificate validation errors.
      - Can also be set with the E(K8S_AUTH_SSL_CA_CERT) environment variable (E(K8S_AUTH_CA_CERT) is read too and
        is preferred when both are set). The option wins over the environment variables, and either wins over the
        certificate authority in the config file.
    type: path
    aliases: [ ssl_ca_cert ]
  client_cert:
    description:
      - Path to a client certificate used to authenticate with the API server.
      - Can also be set with the E(K8S_AUTH_CERT_FILE) environment variable (E(K8S_AUTH_CLIENT_CERT) is read too
        and is preferred when both are set). The option wins over the environment variables, and either wins over
        the certificate in the config file.
    type: path
    aliases: [ cert_file ]
  client_key:
    description:
      - Path to the private key of O(client_cert).
      - Can also be set with the E(K8S_AUTH_KEY_FILE) environment variable (E(K8S_AUTH_CLIENT_KEY) is read too and
        is preferred when both are set). The option wins over the environment variables, and either wins over the
        key in the config file.
    type: path
    aliases: [ key_file ]
  proxy:
    description:
      - URL of an HTTP proxy to use for the connection to the API server.
      - Can also be set with the E(K8S_AUTH_PROXY) environment variable. The option wins over the environment
        variable.
      - The usual E(HTTP_PROXY) and E(HTTPS_PROXY) environment variables are B(not) used.
    type: str
  no_proxy:
    description:
      - Comma-separated list of hosts, domains, IP addresses and CIDR ranges that are reached without O(proxy),
        for example V(localhost,.local,127.0.0.0/8,10.0.0.0/8).
      - Can also be set with the E(K8S_AUTH_NO_PROXY) environment variable. The option wins over the environment
        variable.
      - The usual E(NO_PROXY) environment variable is B(not) used.
    type: str
  impersonate_user:
    description:
      - User name to impersonate for every request (sent as the C(Impersonate-User) header).
      - Can also be set with the E(K8S_AUTH_IMPERSONATE_USER) environment variable. The option wins over the
        environment variable, and either wins over impersonation set in the config file.
    type: str
  impersonate_groups:
    description:
      - Groups to impersonate for every request (each sent as an C(Impersonate-Group) header).
      - Can also be set with the E(K8S_AUTH_IMPERSONATE_GROUPS) environment variable as a comma-separated list,
        for example V(group1,group2). The option wins over the environment variable.
    type: list
    elements: str
notes:
  - >-
    How the connection is chosen: every option given in the task wins over its E(K8S_AUTH_*) environment variable,
    which wins over the value in the kubeconfig file or the in-cluster configuration. When O(host) is given with
    O(api_key), or with O(client_cert) and O(client_key), no configuration is loaded at all. Otherwise, when
    O(kubeconfig) or O(context) is given, that config file is loaded; when neither is given, the in-cluster
    configuration is tried first and the default config file C(~/.kube/config) next. The explicit options are then
    laid over the loaded configuration.
  - >-
    To avoid certificate validation errors when O(validate_certs=true), the full certificate chain of the API server
    must be available, through O(ca_cert) or in the kubeconfig file.
  - >-
    These options, their aliases and their environment variables are the ones of the kubernetes.core collection, so
    C(module_defaults) and credentials (for example the AWX/AAP "OpenShift or Kubernetes API Bearer Token"
    credential, which sets E(K8S_AUTH_HOST), E(K8S_AUTH_API_KEY), E(K8S_AUTH_VERIFY_SSL) and
    E(K8S_AUTH_SSL_CA_CERT)) written for it can be reused. The kubernetes.core options C(username) and C(password) (HTTP basic
    auth), C(proxy_headers) and C(persist_config) are not supported.
"""
