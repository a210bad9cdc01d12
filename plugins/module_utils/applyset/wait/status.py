"""One readiness result, whichever rule source judged the object.

Every rule (the built-in ones of ``readiness``, the bundled ``library``, the CEL rules of
``expressions``, a JMESPath override) and every wait answers a ``Readiness``: a ``Status`` as
kstatus (sigs.k8s.io/cli-utils/pkg/kstatus) names them, the message a user reads, and the rule
that judged (``readiness_rule`` in results). ``FAILED`` is the one status no amount of waiting
changes: a wait stops at once on it, a gate refuses to open.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace


class Status(enum.Enum):
    """kstatus' statuses, less its ``Unknown`` for an object read without any status rule."""

    CURRENT = "current"  # ready: the controller says the spec is in effect
    IN_PROGRESS = "in progress"  # not yet: waiting may change it
    FAILED = "failed"  # never, as things stand: waiting cannot change it
    TERMINATING = "terminating"  # being deleted (deletionTimestamp set)
    NOT_FOUND = "not found"  # not there (a wait for deletion wants this one)
    UNKNOWN = "unknown"  # could not be read


@dataclass(frozen=True)
class Readiness:
    """How one object stands: ``status``, ``message`` (``1/3 replicas available``) and, once
    ``readiness.verdict`` picked it, the ``rule`` that judged it (``built-in``, ``library NAME``...)."""

    status: Status
    message: str
    rule: str = ""

    @property
    def ready(self) -> bool:
        return self.status is Status.CURRENT

    @property
    def final(self) -> bool:
        """Whether waiting longer cannot change it (a failed Job, a rejected CRD)."""
        return self.status is Status.FAILED

    def judged_by(self, rule: str) -> Readiness:
        return replace(self, rule=rule)

    @classmethod
    def current(cls, message: str) -> Readiness:
        return cls(Status.CURRENT, message)

    @classmethod
    def in_progress(cls, message: str) -> Readiness:
        return cls(Status.IN_PROGRESS, message)

    @classmethod
    def failed(cls, message: str) -> Readiness:
        return cls(Status.FAILED, message)
