"""Every condition on a boolean variable in roles/ and playbooks/ goes through ``| bool``.

A variable given on the command line (``-e audit_fail=true``) or by a survey is a string. Since
ansible-core 2.19 a bare string in ``when:`` fails the task ("Conditionals must have a boolean
result"), and in a template ``{{ 'on' if audit_fix else 'off' }}`` the string "false" is true.
So each condition that tests such a variable for truth must convert it with ``| bool``. This
test finds the boolean variables (argument specs, role defaults, play and group vars) and checks
every condition and every template expression that tests one of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from jinja2 import Environment, nodes

REPO = Path(__file__).resolve().parents[3]
CONDITION_KEYS = ("when", "failed_when", "changed_when", "until", "that")
JINJA = Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])


def yaml_files():
    return sorted([*REPO.glob("roles/*/tasks/*.yml"), *REPO.glob("roles/*/handlers/*.yml"),
                   *REPO.glob("playbooks/*.yml"), *REPO.glob("playbooks/group_vars/*.yml"),
                   *REPO.glob("playbooks/host_vars/*.yml"), *REPO.glob("roles/*/defaults/*.yml")])


def template_files():
    return sorted([*REPO.glob("roles/*/templates/*.j2"), *REPO.glob("playbooks/templates/*.j2")])


def load(path):
    return yaml.safe_load(path.read_text()) or {}


def boolean_variables() -> set:
    """Variables meant as booleans: bool options of the roles, bool defaults and bool play/group vars."""
    names = set()
    for spec in REPO.glob("roles/*/meta/argument_specs.yml"):
        for entry in load(spec)["argument_specs"].values():
            names |= {name for name, option in entry.get("options", {}).items() if option.get("type") == "bool"}
    for path in [*REPO.glob("roles/*/defaults/*.yml"), *REPO.glob("playbooks/group_vars/*.yml")]:
        names |= {name for name, value in load(path).items() if isinstance(value, bool)}
    for path in REPO.glob("playbooks/*.yml"):
        for play in load(path) if isinstance(load(path), list) else []:
            for section in [play.get("vars") or {}] + [r.get("vars") or {} for r in play.get("roles") or []
                                                      if isinstance(r, dict)]:
                names |= {name for name, value in section.items() if isinstance(value, bool)}
    return names


BOOLEANS = boolean_variables()


def truth_tests(node):
    """The sub-expressions whose truth value is used (an if's test, and/or/not operands)."""
    if isinstance(node, (nodes.And, nodes.Or)):
        yield from truth_tests(node.left)
        yield from truth_tests(node.right)
    elif isinstance(node, nodes.Not):
        yield from truth_tests(node.node)
    else:
        yield node


def bare_booleans(tree, whole_is_condition: bool) -> list:
    """Names of boolean variables tested for truth without ``| bool``."""
    tested = []
    if whole_is_condition:
        for output in tree.find_all(nodes.Output):
            for expr in output.nodes:
                tested += list(truth_tests(expr))
    for node in tree.find_all((nodes.CondExpr, nodes.If)):
        tested += list(truth_tests(node.test))
    for node in tree.find_all((nodes.And, nodes.Or, nodes.Not)):
        tested += list(truth_tests(node))
    return sorted({n.name for n in tested if isinstance(n, nodes.Name) and n.name in BOOLEANS})


def conditions(data, where=""):
    """(location, expression, is_bare_condition) for every condition and template string in a YAML tree."""
    if isinstance(data, dict):
        for key, value in data.items():
            here = f"{where}.{key}" if where else str(key)
            if key in CONDITION_KEYS and isinstance(value, (str, list, bool)):
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, str):
                        yield here, item, True
            else:
                yield from conditions(value, here)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from conditions(value, f"{where}[{index}]")
    elif isinstance(data, str) and ("{{" in data or "{%" in data):
        yield where, data, False


def parse(expression: str, bare: bool):
    text = expression if not bare or "{{" in expression else "{{ " + expression + " }}"
    return JINJA.parse(text)


CASES = [(path, location, expression, bare) for path in yaml_files()
         for location, expression, bare in conditions(load(path))]


def test_the_boolean_variables_are_found():
    assert {"audit_fail_on_problems", "audit_fix", "deploy_allow_empty", "audit_fail", "shop_without_banner",
            "deploy_wait"} <= BOOLEANS


@pytest.mark.parametrize("path, location, expression, bare", CASES,
                         ids=[f"{c[0].relative_to(REPO)}:{c[1]}" for c in CASES])
def test_conditions_in_tasks_and_playbooks_convert_booleans(path, location, expression, bare):
    offenders = bare_booleans(parse(expression, bare), whole_is_condition=bare)
    assert not offenders, (f"{path.relative_to(REPO)} {location}: {expression!r} tests {', '.join(offenders)} without "
                           "| bool; a string from -e or a survey would fail or be always true")


@pytest.mark.parametrize("path", template_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_conditions_in_templates_convert_booleans(path):
    offenders = bare_booleans(JINJA.parse(path.read_text()), whole_is_condition=False)
    assert not offenders, f"{path.relative_to(REPO)} tests {', '.join(offenders)} without | bool"


@pytest.mark.parametrize("expression, bare, found", [
    ("audit_fail_on_problems", True, ["audit_fail_on_problems"]),
    ("audit_fail_on_problems | bool", True, []),
    ("not audit_fix and x", True, ["audit_fix"]),
    ("{{ 'on' if audit_fix else 'off' }}", False, ["audit_fix"]),
    ("{{ 'on' if audit_fix | bool else 'off' }}", False, []),
    ("{{ audit_fix }}", False, []),  # passed on as a value: the module converts it
    ("deploy_files | length > 0", True, []),
])
def test_the_checker_itself(expression, bare, found):
    assert bare_booleans(parse(expression, bare), whole_is_condition=bare) == found
