"""A play's templated `vars_files`: each container reads the file its own variables name."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pctfleet.errors import InputError
from pctfleet.inventory import inventory_from_text
from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook
from pctfleet.run.playbookrun import container_vars, preflight

INVENTORY = """\
nodes:
  pve1:
    address: 10.1.2.6
    vars: {site: eu}
    containers:
      200: {}
      201: {vars: {site: us}}
      202: {vars: {site: mars}}
"""


def play_of(tmp_path: Path, vars_files: str, files: dict[str, str], more: str = ""):  # noqa: ANN201
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    book = tmp_path / "book.yml"
    play = f"- hosts: all\n  vars_files: {vars_files}\n{more}  tasks: []\n"
    book.write_text(play)
    return load_playbook(book, known_args())


def values(book, extra: dict | None = None) -> tuple[dict[str, dict], list[str]]:  # noqa: ANN001
    inventory = inventory_from_text(textwrap.dedent(INVENTORY))
    warnings: list[str] = []
    (play,) = book.plays
    found = {
        c.key: container_vars(inventory, c, play, extra or {}, None, warnings)
        for c in inventory.containers
    }
    return found, warnings


SITES = {"vars/eu.yml": "dc: eu-1\n", "vars/us.yml": "dc: us-1\n"}


def test_each_container_reads_the_file_its_variables_name(tmp_path):
    book = play_of(tmp_path, "['{{ site }}.yml']", SITES)
    found, warnings = values(book)
    assert found["pve1/200"]["dc"] == "eu-1"
    assert found["pve1/201"]["dc"] == "us-1"
    assert "dc" not in found["pve1/202"]
    (warning,) = warnings
    assert "vars file 'mars.yml' (from '{{ site }}.yml') not found" in warning
    assert warning.startswith(f"{tmp_path / 'book.yml'}:2: play 'play #1': ")


def test_entries_keep_their_order_over_play_vars_and_under_extra_vars(tmp_path):
    files = {**SITES, "base.yml": "dc: base\ntier: base\n", "last.yml": "tier: last\n"}
    more = "  vars: {dc: play, colour: red}\n"
    book = play_of(tmp_path, "[base.yml, '{{ site }}.yml', last.yml]", files, more)
    found, _ = values(book, {"colour": "blue"})
    assert [found["pve1/200"][k] for k in ("dc", "tier", "colour")] == ["eu-1", "last", "blue"]
    assert found["pve1/202"]["dc"] == "base"  # no mars.yml: the earlier file's value
    assert book.plays[0].vars == {"dc": "play", "colour": "red"}  # files are per container


def test_extra_vars_and_play_vars_can_name_the_file(tmp_path):
    files = {"vars/prod.yml": "replicas: 3\n", "vars/gold.yml": "support: 24x7\n"}
    book = play_of(tmp_path, "['{{ env }}.yml', '{{ tier }}.yml']", files, "  vars: {tier: gold}\n")
    found, warnings = values(book, {"env": "prod"})
    assert (found["pve1/201"]["replicas"], found["pve1/201"]["support"]) == (3, "24x7")
    assert warnings == []


def test_a_first_found_list_is_rendered_then_searched(tmp_path):
    files = {**SITES, "vars/default.yml": "dc: default\n"}
    book = play_of(tmp_path, "[['{{ site }}.yml', default.yml]]", files)
    found, warnings = values(book)
    assert [found[k]["dc"] for k in ("pve1/200", "pve1/201", "pve1/202")] == [
        "eu-1", "us-1", "default",
    ]  # fmt: skip
    assert warnings == []


def test_an_undefined_variable_skips_the_entry_with_a_warning(tmp_path):
    book = play_of(tmp_path, "['{{ region }}.yml', '{{ site }}.yml']", SITES)
    found, warnings = values(book)
    assert found["pve1/200"]["dc"] == "eu-1"
    assert any("'{{ region }}.yml': undefined variable 'region': skipped" in w for w in warnings)


def test_a_name_that_reads_facts_is_refused_before_any_container_is_reached(tmp_path):
    book = play_of(tmp_path, "['{{ ansible_os_family }}.yml']", {})
    inventory = inventory_from_text(textwrap.dedent(INVENTORY))
    (play,) = book.plays
    with pytest.raises(InputError, match="reads facts .*use an include_vars task|include_vars"):
        preflight(play, [], inventory.containers, inventory, {}, str(tmp_path))


def test_preflight_collects_each_warning_once(tmp_path):
    book = play_of(tmp_path, "['{{ site }}.yml', nope.yml]", SITES)
    inventory = inventory_from_text(textwrap.dedent(INVENTORY))
    (play,) = book.plays
    warnings: list[str] = []
    preflight(play, [], inventory.containers, inventory, {}, str(tmp_path), None, warnings)
    assert len(warnings) == 2, warnings  # mars.yml, and nope.yml once for three containers


def test_a_bad_template_is_refused_when_the_playbook_loads(tmp_path):
    with pytest.raises(InputError, match="book.yml:2: .*vars_files entry: template syntax error"):
        play_of(tmp_path, "['{{ site .yml']", {})


def test_names_are_rendered_in_turn_as_ansible_renders_them(tmp_path):
    files = {**SITES, "vars/default.yml": "dc: default\n", "vars/pointer.yml": "site: us\n"}
    cases = {
        "['{{ region | default(\"default\") }}.yml']": "default",  # a filter may cover it
        "[[default.yml, '{{ region }}.yml']]": "default",  # found before the undefined one
        "[pointer.yml, '{{ site }}.yml']": "us-1",  # an earlier entry's value names the file
    }
    for entries, wanted in cases.items():
        found, warnings = values(play_of(tmp_path, entries, files))
        assert (found["pve1/200"]["dc"], warnings) == (wanted, []), entries


def test_role_vars_stay_above_a_templated_vars_file(tmp_path):
    files = {
        **SITES,
        "roles/r/vars/main.yml": "dc: role\n",
        "roles/r/tasks/main.yml": "- debug: {msg: hi}\n",
    }
    found, _ = values(play_of(tmp_path, "['{{ site }}.yml']", files, "  roles: [r]\n"))
    assert found["pve1/200"]["dc"] == "role"  # as with a plain name: role vars win
