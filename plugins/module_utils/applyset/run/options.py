"""How a run behaves: the ``Options`` every caller of the engine builds, checked before any request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import InputError

# The rules and readiness are imported where they are used: applyset_apply builds and checks its
# Options before its early reads (run/early.py), which must not wait for the rules' imports (the
# YAML parser among them). tests/unit/plugins/test_module_options.py keeps it so.
if TYPE_CHECKING:
    from ..rules import legacy as legacies
    from ..wait.reasons import WaitSettings
    from ..history.revisions import Settings
    from ..inputs.helm_chart import Chart

DEFAULT_FIELD_MANAGER = "applyset.kubernetes"
REAPPLY_CHOICES = ("changed", "always")


@dataclass(frozen=True)
class GuardLimits:
    """The blast-radius guard (the module's ``guard`` option), which rules/prune.py applies: an
    empty desired set prunes nothing unless ``allow_empty``; at most ``max_prune_percent`` of the
    set is pruned at once; the protected kinds are pruned only when named in ``allow_prune_kinds``
    (by Kind or Kind.group)."""

    allow_empty: bool = False
    max_prune_percent: int = 50
    allow_prune_kinds: frozenset = frozenset()


@dataclass(frozen=True)
class WaitOptions:
    """The wait options: whether a successful run waits (``enabled``: applied objects ready,
    pruned ones gone) within ``timeout`` seconds, by the readiness ``rules`` (``readiness.verdict``
    keywords: fail_closed, overrides, wait_for_load_balancers, health_check_exprs), and whether a
    failed wait, gate or hook carries its failing containers' last log lines (``failure_logs``).
    The gates and hooks wait by the same settings whether or not ``enabled``."""

    enabled: bool = False
    timeout: float = 300.0
    rules: Mapping[str, Any] = field(default_factory=dict)  # wait_rules: the readiness rules' keywords
    failure_logs: bool = True


@dataclass(frozen=True)
class HelmSettings:
    """The helm option: the ``chart`` rendered into the desired objects (steps/chart_render.py), and
    the ``release`` it renders as or that is taken over (steps/release_takeover.py, with
    ``take_over``): the given name or the parent's; the given ``namespace`` (with a chart, else the
    set's). Empty without the option."""

    chart: Chart | None = None
    release: str | None = None
    namespace: str | None = None
    take_over: bool = False


@dataclass(frozen=True)
class SetDependency:
    """One entry of ``wait_for_sets`` (steps/set_dependencies.py): the other set's ``parent`` (the
    parent option's syntax) and ``namespace``, the ``revision`` it must be at least at, and whether
    its members must be ``ready``. Its last release must have succeeded in any case."""

    parent: Any
    namespace: str | None = None
    revision: int | None = None
    ready: bool = False
    ready_expr: str | None = None  # CEL over ``parent`` (its metadata) and ``members``, as Flux's readyExpr

    def problems(self, index: int) -> list[tuple[str, str, str]]:
        where = f"wait_for_sets[{index}]"
        if not isinstance(self.parent, (str, dict)) or not self.parent:
            return [(f"{where}.parent", "must name a set's parent", 'e.g. parent: "secrets/db" or {kind: Secret, name: db}')]
        if self.revision is not None and self.revision < 1:
            return [(f"{where}.revision", "must be 1 or more", "give the lowest revision the set may be at")]
        if self.ready_expr is not None:
            from ..wait import cel

            why = cel.check(self.ready_expr, READY_EXPR_FIELDS)
            if why:
                return [(f"{where}.ready_expr", why, "write a CEL boolean over parent and members")]
        return []


# The variables of a wait_for_sets ready_expr: the other set's parent (metadata only) and its members.
READY_EXPR_FIELDS = frozenset({"parent", "members"})


@dataclass(frozen=True)
class RunOptions:
    """How a run behaves, as every entry point reads it (apply, uninstall, disband); an apply's
    ``Options`` add what only an apply reads. The modules build them from their options, other
    callers directly.

    Frozen: what a run derives (a chart's provenance, a Helm release's) goes to that run's own copy
    (``dataclasses.replace``), never into the caller's, which an automatic rollback reuses.
    Call ``validate()`` (the engine does) before any request. The fields follow the module's
    options: ``field_manager``, ``force_conflicts`` and ``field_validation`` go to every apply (a
    teardown's hooks are applied too); ``propagation_policy`` and ``guard`` rule the deletes;
    ``waiting`` how the run waits; ``dry_run`` is check mode and ``diff`` asks for before/after
    documents; the timeouts are in seconds. The groups (``guard``, ``waiting``, ``history``,
    ``helm``) are built whole by the caller; ``from_settings`` builds them from the module's flat
    option names.
    """

    field_manager: str = DEFAULT_FIELD_MANAGER
    force_conflicts: bool = False
    field_validation: str = "Strict"
    dry_run: bool = False
    diff: bool = False
    propagation_policy: str = "Background"
    takeover: bool = False  # manage a set whose parent another tool made
    guard: GuardLimits = field(default_factory=GuardLimits)
    claim_ttl: float = 60.0  # how long a crashed run's claim on the set blocks others
    claim_wait: float = 120.0  # how long to wait for another run's claim to go away
    waiting: WaitOptions = field(default_factory=WaitOptions)
    history: Settings | None = None  # revisions kept, rollback; None keeps no history
    # steps/approval.py: the plan a real run must still have (a plan id, a plan list, or a check-mode
    # result); a run whose plan differs fails before any write. None binds the run to no plan.
    approved_plan: object = None
    helm: HelmSettings = field(default_factory=HelmSettings)

    @classmethod
    def from_settings(cls: type[_Built], **settings: Any) -> _Built:
        """Options from flat keywords: this class's fields, and the groups' members by the module's
        option names (``wait``, ``wait_timeout``, ``wait_rules``, ``failure_logs``; ``allow_empty``,
        ``max_prune_percent``, ``allow_prune_kinds``), as test drivers and the benchmark give them."""
        grouped: dict[str, dict[str, Any]] = {"waiting": {}, "guard": {}}
        for name, (group, member) in _FLAT_GROUPS.items():
            if name in settings:
                grouped[group][member] = settings.pop(name)
        guard = grouped["guard"]
        if "allow_prune_kinds" in guard:
            guard["allow_prune_kinds"] = frozenset(guard["allow_prune_kinds"])
        return cls(**settings, waiting=WaitOptions(**grouped["waiting"]), guard=GuardLimits(**guard))

    def wait_settings(self) -> WaitSettings:
        """How the run's waits (members, hooks, gates) wait: the ``waiting`` group and who applied."""
        from ..wait.reasons import WaitSettings

        return WaitSettings(timeout=self.waiting.timeout, rules=dict(self.waiting.rules or {}),
                            field_manager=self.field_manager, failure_logs=self.waiting.failure_logs)

    def problems(self) -> list[tuple[str, str, str]]:
        """``(option, what is wrong, fix)`` for each value out of its range or choices: the checks
        that need no import, so that a module makes them before its first request (``validate``
        makes them again for every other caller, with the checks that need the rules)."""
        found = []
        if self.field_validation not in ("Strict", "Warn", "Ignore"):
            found.append(("field_validation", "must be Strict, Warn or Ignore", "give Strict, Warn or Ignore"))
        if self.propagation_policy not in ("Background", "Foreground", "Orphan"):
            found.append(("propagation_policy", "must be Background, Foreground or Orphan",
                          "give Background, Foreground or Orphan"))
        found += self._apply_problems()
        if not 0 <= self.guard.max_prune_percent <= 100:
            found.append(("guard.max_prune_percent", "must be between 0 and 100",
                          "set it to 100 to allow any prune, or lower to guard more"))
        if self.helm.take_over and not self.helm.release:
            found.append(("helm.take_over", "needs the release's name", "set helm.release_name"))
        for name, seconds in self._timeouts():
            if seconds < 0:
                found.append((name, "must be 0 seconds or more", f"set {name} to 0 or more"))
        return found

    def validate(self) -> None:
        """Check every option before the first request, whoever builds them (the modules, the
        benchmark, a test driver): a bad one must never surface after writes.

        Raises:
            InputError: naming each bad option (wait rule overrides included).
        """
        from ..wait import readiness

        problems = [(name, why) for name, why, _fix in self.problems()]
        unknown = set(self.waiting.rules or {}) - readiness.RULE_OPTIONS
        if unknown:
            problems.append(("wait_rules", f"unknown rule options {', '.join(sorted(unknown))}"))
        problems += self.history.problems() if self.history is not None else []
        if problems:
            raise InputError("; ".join(f"{name} {why}" for name, why in problems), obj="options",
                             fix="correct the options named; nothing was changed")
        readiness.check_overrides((self.waiting.rules or {}).get("overrides"))
        self._check_cel_rules()
        self._check_apply_rules()
        if self.approved_plan is not None:
            from ..rules import plan_diff

            plan_diff.parse_approved(self.approved_plan)

    def _apply_problems(self) -> list[tuple[str, str, str]]:
        """``problems`` of the options only an apply has (``Options``): none here."""
        return []

    def _timeouts(self) -> list[tuple[str, float]]:
        """``(option, seconds)`` of the timeouts ``problems`` checks, in the module's order."""
        return [("claim_ttl", self.claim_ttl), ("claim_wait", self.claim_wait), ("wait_timeout", self.waiting.timeout)]

    def _check_apply_rules(self) -> None:
        """``validate``'s checks of the options only an apply has (``Options``): none here."""

    def _check_cel_rules(self) -> None:
        """Every ``waiting.rules`` ``health_check_exprs`` expression compiles (cel-python imported only then)."""
        exprs = (self.waiting.rules or {}).get("health_check_exprs")
        if not exprs:
            return
        from ..wait import expressions

        problems = expressions.problems_in_exprs(exprs)
        if problems:
            raise InputError("; ".join(problems), obj="wait_rules.health_check_exprs",
                             fix="correct the expressions named (CEL, as in Flux's healthCheckExprs); nothing was changed")


@dataclass(frozen=True)
class Options(RunOptions):
    """An apply's options: every entry point's (``RunOptions``) and what only an apply reads:
    whether it ``prune``s, takes objects of other sets (``adopt``, ``adopt_legacy``), makes the
    parent's namespace, recreates immutable changes, skips unchanged members (``reapply``), leaves
    fields to other managers (``ignore_fields``), waits ``crd_timeout`` for its CRDs, and annotates pod
    templates with the digest of the config they read (``config_digest``), after waiting for other sets
    (``wait_for_sets``)."""

    prune: bool = True
    adopt: bool = False  # take live objects that belong to another set
    crd_timeout: float = 60.0
    adopt_legacy: legacies.LegacyAdoption | None = None  # take over a `kubectl apply --prune -l` set
    create_namespace: bool = False  # create the parent's namespace when missing (not a member)
    recreate_on_immutable: frozenset = frozenset()  # kinds deleted and created again when a change is immutable
    recreate_timeout: float = 120.0  # how long a recreated object may take to be gone
    # "changed": members whose live object already is what the apply would make are not sent
    # (nochange.py), and a run with nothing to change writes nothing, the parent included;
    # "always": every member is applied on every run.
    reapply: str = "changed"
    # field_policy.py: fields left to other managers, as the module's ignore_fields option gives them
    ignore_fields: tuple = ()
    # inputs/config_digest.py: pod templates get the digest of the set's ConfigMaps and Secrets they read
    config_digest: bool = False
    # steps/set_dependencies.py: other sets waited for before this run reads its own (SetDependency)
    wait_for_sets: tuple = ()
    # rules/versioned_keep.py: how many older versions of each versioned ConfigMap and Secret stay members
    versioned_keep: int = 3
    # inputs/versioned.py: kinds (ConfigMap, Secret) or Kind/name versioned as if annotated
    versioned: tuple = ()

    def _apply_problems(self) -> list[tuple[str, str, str]]:
        found = [problem for index, dependency in enumerate(self.wait_for_sets) for problem in dependency.problems(index)]
        found += [("versioned", f"has {entry!r}, which is no ConfigMap or Secret", "give ConfigMap, Secret, ConfigMap/<name> "
                   "or Secret/<name>") for entry in self.versioned if str(entry).split("/", 1)[0] not in ("ConfigMap", "Secret")]
        if self.versioned_keep < 0:
            found.append(("versioned_keep", "must be 0 or more", "give how many older versions to keep"))
        if self.reapply not in REAPPLY_CHOICES:
            found.append(("reapply", "must be changed or always", "give changed or always"))
        return found

    def _timeouts(self) -> list[tuple[str, float]]:
        return [("crd_timeout", self.crd_timeout), *super()._timeouts(), ("recreate_timeout", self.recreate_timeout)]

    def _check_apply_rules(self) -> None:
        from ..rules import field_policy

        field_policy.parse_rules(self.ignore_fields)


_Built = TypeVar("_Built", bound=RunOptions)

# The groups' members by the module's flat option names (Options.from_settings).
_FLAT_GROUPS = {"wait": ("waiting", "enabled"), "wait_timeout": ("waiting", "timeout"),
                "wait_rules": ("waiting", "rules"), "failure_logs": ("waiting", "failure_logs"),
                "allow_empty": ("guard", "allow_empty"), "max_prune_percent": ("guard", "max_prune_percent"),
                "allow_prune_kinds": ("guard", "allow_prune_kinds")}
