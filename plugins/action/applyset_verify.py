# -*- coding: utf-8 -*-
# Copyright: applyset.kubernetes contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run applyset_verify with an inline kubeconfig kept out of the visible parameters, async allowed.

See ApplySetAction in applyset_apply.py and docs/secrets.md.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.applyset.kubernetes.plugins.action.applyset_apply import ApplySetAction


class ActionModule(ApplySetAction):
    DEFAULT_MODULE = "applyset.kubernetes.applyset_verify"
