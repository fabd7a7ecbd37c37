"""Every module's decision, from fixtures: arguments + facts -> the plan it makes.

Each file in tests/unit/modules/ holds one module's cases:

    module: file
    cases:
      - name: a missing directory is made
        args: {path: /srv/x, state: directory}
        facts: {type: absent}          # what the probe snippet read, as fields
        check: false                   # optional
        expect:                        # only the keys given are compared
          changed: true
          script: "set -e\nmkdir -p -- /srv/x\n"

`expect: {error: "text"}` says the arguments are refused with a message holding it.
`files:` (relative path -> text) are written into the playbook folder first,
for `src` files and templates; `vars:` are the task's variables.

No container, no root: a module's logic is tested in milliseconds. Where a
module's fact knows the converged state, the harness also checks that the
module plans nothing there (a second run changes nothing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pctfleet.errors import PlaybookError
from pctfleet.facts.kv import encode_fields
from pctfleet.modules import REGISTRY
from pctfleet.modules.args import Context
from pctfleet.modules.base import Fact, Plan, World
from pctfleet.sh import library

FIXTURES = Path(__file__).parent / "modules"


def _cases() -> list[tuple[str, dict]]:
    found = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        for case in document["cases"]:
            found.append((document["module"], case))
    return found


CASES = _cases()


def _reading(facts: Any) -> Fact | None:
    if facts is None:
        return None
    if isinstance(facts, str):  # a whole-fact value, printed as it is
        return Fact(facts, 0)
    return Fact(encode_fields(facts), 0)


def _prepared(module: Any, case: dict, tmp_path: Path) -> Any:
    """The case's typed arguments, its `files:` written into the playbook folder first."""
    for name, text in case.get("files", {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    ctx = Context(str(tmp_path), case.get("vars", {}))
    return module.prepare(dict(case["args"]), ctx, "fixture")


def _script(plan: Plan) -> str | None:
    """The plan's script without command's shared functions (sh/lib/run_command.sh,
    tested on their own)."""
    if plan.script is None:
        return None
    return plan.script.removeprefix(library(("run_command",)))


def _observed(plan: Any) -> dict[str, Any]:
    return {
        "changed": plan.changed,
        "failed": plan.failed,
        "msg": plan.msg,
        "script": _script(plan),
        "diff": plan.diff,
        "pushes": [push.dest for push in plan.pushes],
        "push_modes": [f"{push.mode} {push.owner}".strip() for push in plan.pushes],
        "stdin": plan.stdin.decode(),
        "result": plan.result,
        "skip_in_check": plan.skip_in_check,
    }


@pytest.mark.parametrize(
    ("module_name", "case"), CASES, ids=[f"{m}: {c['name']}" for m, c in CASES]
)
def test_fixture(module_name: str, case: dict, tmp_path: Path) -> None:
    module = REGISTRY[module_name]
    if "error" in case["expect"]:
        with pytest.raises(PlaybookError) as error:
            _prepared(module, case, tmp_path)
        assert case["expect"]["error"] in str(error.value) and "\n" not in str(error.value)
        return
    args = _prepared(module, case, tmp_path)
    plan = module.decide(args, _reading(case.get("facts")), bool(case.get("check")))
    observed = _observed(plan)
    expected = case["expect"]
    for key, wanted in expected.items():
        if key == "msg_contains":
            assert wanted in observed["msg"]
        elif key == "script_contains":
            for part in wanted:
                assert part in (observed["script"] or "")
        elif key == "script_excludes":
            for part in wanted:
                assert part not in (observed["script"] or ""), part
        else:
            assert observed[key] == wanted, key


@pytest.mark.parametrize(
    ("module_name", "case"), CASES, ids=[f"{m}: {c['name']}" for m, c in CASES]
)
def test_nothing_to_do_where_converged(module_name: str, case: dict, tmp_path: Path) -> None:
    module = REGISTRY[module_name]
    if module.fact is None or case.get("converged") is False or "error" in case["expect"]:
        pytest.skip("no converged state for this module or case")
    args = _prepared(module, case, tmp_path)
    if module.probe(args, False) is None:
        pytest.skip("this task reads no fact: it always runs")
    fields = module.fact.converged(args, World())
    plan = module.decide(args, _reading(fields), False)
    assert not plan.changed and not plan.failed, plan


def test_every_module_has_fixtures() -> None:
    covered = {module for module, _ in CASES}
    assert sorted(set(REGISTRY) - covered) == []


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_argument_errors_name_the_module(name: str) -> None:
    module = REGISTRY[name]
    if module.Args.free_names:
        pytest.skip("any argument name is accepted")
    with pytest.raises(PlaybookError) as error:
        module.prepare({"no_such_argument": 1}, Context(), "task")
    assert f"'{name}'" in str(error.value) or f"{name}: " in str(error.value), error.value


@pytest.mark.parametrize(
    ("module_name", "case"), CASES, ids=[f"{m}: {c['name']}" for m, c in CASES]
)
def test_nothing_read_is_the_facts_empty_state(
    module_name: str, case: dict, tmp_path: Path
) -> None:
    """A module plans from its fact's `State()` when the probe read nothing."""
    module = REGISTRY[module_name]
    if module.fact is None or module.fact.State is None or "error" in case["expect"]:
        pytest.skip("no fact state for this module, or arguments it refuses")
    args = _prepared(module, case, tmp_path)
    assert isinstance(module.decide(args, None, bool(case.get("check"))), Plan)
