"""Several inventory sources (-i given more than once, ansible.cfg's comma-separated
`inventory`, a folder's files) read in order as one Ansible inventory; an INI source
may name the groups of the sources before it. What Ansible does with each is
measured in tests/integration/test_inventory_differential.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pctfleet import exitcodes
from pctfleet.cli.main import _invoke, app
from pctfleet.errors import InputError
from pctfleet.inventory import load_inventory

ONE = "[gpu]\na proxmox_vmid=200 ansible_host=192.0.2.10 from=one\n"
TWO = "[db]\nb proxmox_vmid=201 ansible_host=192.0.2.10\n[gpu]\na from=two\n"
NATIVE = "nodes:\n  pve1:\n    address: 192.0.2.1\n    containers: [200]\n"
HOSTS = "[gpu]\nct1 proxmox_vmid=200 ansible_host=192.0.2.10\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_several_sources_are_one_inventory_read_in_order(tmp_path):
    write(tmp_path, {"one.ini": ONE, "two.ini": TWO})
    inv = load_inventory([tmp_path / "one.ini", tmp_path / "two.ini"])
    assert [c.host for c in inv.containers] == ["a", "b"]  # groups.all: ['a', 'b']
    a, b = inv.containers
    assert (a.groups, b.groups) == (("gpu",), ("db",))
    assert inv.vars_for(a)["from"] == "two"  # a later source's value wins


def test_the_same_folder_twice_gives_its_vars_files_where_it_comes_last(tmp_path):
    # ansible-core reads X's group_vars for each of its sources: X's last reading wins.
    write(tmp_path, {
        "X/a.ini": ONE, "Y/b.ini": "[gpu]\na\n", "X/c.ini": "[gpu]\na\n",
        "X/group_vars/all.yml": "v: x\n", "Y/group_vars/all.yml": "v: y\n",
    })  # fmt: skip
    sources = [tmp_path / "X/a.ini", tmp_path / "Y/b.ini", tmp_path / "X/c.ini"]
    (container,) = (inv := load_inventory(sources)).containers
    assert inv.vars_for(container)["v"] == "x"
    (container,) = (inv := load_inventory(sources[:2])).containers
    assert inv.vars_for(container)["v"] == "y"


@pytest.mark.parametrize(
    "later",
    [{"20-vars.ini": "[gpu:vars]\nx=1\n"}, {"20-groups.ini": "[fleet:children]\ngpu\n"}],
    ids=["vars", "children"],
)
@pytest.mark.parametrize("how", ["folder", "several -i"])
def test_an_ini_file_may_name_a_group_an_earlier_source_declared(tmp_path, later, how):
    write(tmp_path / "inv", {"10-hosts.ini": HOSTS, **later})
    files = sorted((tmp_path / "inv").iterdir())
    inv = load_inventory(tmp_path / "inv" if how == "folder" else files)
    (container,) = inv.containers
    if "20-vars.ini" in later:
        assert inv.vars_for(container)["x"] == 1
    else:
        assert container.groups == ("fleet", "gpu")
        assert inv.groups["fleet"].members == (container.key,)


def test_a_yaml_source_declares_groups_for_a_later_ini_one_nested_ones_too(tmp_path):
    yaml = "all:\n  children:\n    top:\n      children:\n        gpu:\n          hosts:\n"
    write(tmp_path, {"a.yml": yaml + "            ct1: {proxmox_vmid: 200, ansible_host: h}\n",
                     "b.ini": "[gpu:vars]\nx=1\n[fleet:children]\ntop\n"})  # fmt: skip
    inv = load_inventory([tmp_path / "a.yml", tmp_path / "b.ini"])
    (container,) = inv.containers
    assert container.groups == ("fleet", "top", "gpu") and inv.vars_for(container)["x"] == 1


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"10-vars.ini": "[gpu:vars]\nx=1\n", "20-hosts.ini": HOSTS},
            "10-vars.ini:1: section [gpu:vars] names group 'gpu', declared only by {root}/"
            "20-hosts.ini, which is read later: Ansible reads inventory sources in order",
        ),
        (
            {"10-groups.ini": "[fleet:children]\nx\ngpu\n", "20-hosts.ini": HOSTS + "[x]\n"},
            "10-groups.ini:2: section [fleet:children] names group 'x', declared only by",
        ),
        (
            {"10-hosts.ini": HOSTS, "20-vars.ini": "[nope:vars]\nx=1\n"},
            "20-vars.ini:1: section [nope:vars] is for a group declared nowhere",
        ),
        (
            {"10-hosts.ini": HOSTS, "20-groups.ini": "[fleet:children]\nall\n"},
            "20-groups.ini:2: section [fleet:children] names a group declared nowhere: 'all'",
        ),
    ],
    ids=["vars-later", "child-later", "nowhere", "all-as-child"],
)
def test_a_group_no_earlier_source_declares_is_one_line_naming_the_file(tmp_path, files, message):
    write(tmp_path, files)
    with pytest.raises(InputError) as caught:
        load_inventory(tmp_path)
    expected = f"{tmp_path}/{message.format(root=tmp_path)}"
    assert str(caught.value).startswith(expected), str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_native_inventory_is_not_merged_with_another_source(tmp_path):
    write(tmp_path, {"one.ini": ONE, "native.yml": NATIVE})
    with pytest.raises(InputError) as caught:
        load_inventory([tmp_path / "one.ini", tmp_path / "native.yml"])
    assert str(caught.value) == (
        f"{tmp_path}/native.yml: a native inventory is read alone (one -i): several -i merge "
        "Ansible ones only"
    )
    assert [c.key for c in load_inventory([tmp_path / "native.yml"]).containers] == ["pve1/200"]


# -- on the command line --------------------------------------------------------------


def show(tmp_path: Path, monkeypatch, capsys, *args: str) -> tuple[int, dict | None, str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh/config of this machine's
    code = _invoke(app, ["inventory", "show", "--json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == exitcodes.OK else None, err


def names(shown: dict) -> list[str]:
    return [row["name"] for row in shown["containers"]]


def test_i_given_twice_reads_both(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"one.ini": ONE, "two.ini": TWO})
    code, shown, err = show(tmp_path, monkeypatch, capsys, "-i", "one.ini", "-i", "two.ini")
    assert code == exitcodes.OK, err
    assert names(shown) == ["a", "b"]
    code, shown, _ = show(tmp_path, monkeypatch, capsys, "-i", "one.ini", "-i", "two.ini",
                          "-l", "db")  # fmt: skip
    assert names(shown) == ["b"]


@pytest.mark.parametrize("how", ["ansible.cfg", "ANSIBLE_INVENTORY"])
def test_a_configured_list_of_inventories_is_read_whole(tmp_path, monkeypatch, capsys, how):
    write(tmp_path, {"inv/one.ini": ONE, "two.ini": TWO})
    if how == "ansible.cfg":
        write(tmp_path, {"ansible.cfg": "[defaults]\ninventory = inv/one.ini, two.ini\n"})
    else:
        monkeypatch.setenv("ANSIBLE_INVENTORY", "inv/one.ini,two.ini")
    code, shown, err = show(tmp_path, monkeypatch, capsys)
    assert code == exitcodes.OK, err
    assert names(shown) == ["a", "b"]


def test_a_configured_inventory_not_there_is_named_with_its_setting(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"one.ini": ONE, "ansible.cfg": "[defaults]\ninventory = one.ini,nope.ini\n"})
    code, _, err = show(tmp_path, monkeypatch, capsys)
    assert code == exitcodes.BAD_OPTIONS
    assert err == f"error: {tmp_path}/ansible.cfg: inventory {tmp_path}/nope.ini not found\n"


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [
        ({"one.ini": ONE, "n.yml": NATIVE}, ["-i", "one.ini", "-i", "n.yml"],
         "error: n.yml: a native inventory is read alone (one -i)"),
        ({"one.ini": ONE, "l.yml": "- a\n"}, ["-i", "one.ini", "-i", "l.yml"],
         "error: l.yml: not an Ansible inventory (YAML or INI): got ['a']"),
        ({"one.ini": ONE, "t.yml": "gpu:\n  hostz: {}\n"}, ["-i", "one.ini", "-i", "t.yml"],
         "error: t.yml:2: group 'gpu': unknown key 'hostz' (did you mean 'hosts'?)"),
        ({"one.ini": ONE}, ["-i", "one.ini", "-i", "nope.ini"], "error: nope.ini: "),
        ({"v.ini": "[gpu:vars]\nx=1\n", "h.ini": HOSTS}, ["-i", "v.ini", "-i", "h.ini"],
         "error: v.ini:1: section [gpu:vars] names group 'gpu', declared only by h.ini"),
    ],
    ids=["native", "list", "typo", "missing", "declared-later"],
)  # fmt: skip
def test_a_source_that_cannot_be_merged_is_one_line_exit_4(
    tmp_path, monkeypatch, capsys, files, args, message
):
    write(tmp_path, files)
    code, _, err = show(tmp_path, monkeypatch, capsys, *args)
    assert code == exitcodes.PARSE_ERROR
    assert err.startswith(message) and len(err.splitlines()) == 1, err


# Read in order, these two give an error of their own; either alone gives another, so
# a command that dropped one says so, and none of them gets as far as connecting.
VARS_FIRST = {"v.ini": "[gpu:vars]\nx=1\n", "h.ini": "[gpu]\nct1 ansible_host=192.0.2.10\n"}


@pytest.mark.parametrize(
    "command",
    [["run", "book.yml"], ["provision"], ["audit"], ["verify"], ["doctor"],
     ["report", "--markdown", "-"], ["rollout", "book.yml", "--no-gate", "--journal-dir", "j"],
     ["exec", "-i", "v.ini", "-i", "h.ini", "--", "true"], ["inventory", "show"],
     ["inventory", "discover"]],
    ids=lambda argv: " ".join(argv[:2]),
)  # fmt: skip
def test_every_command_that_takes_i_reads_each_one(tmp_path, monkeypatch, capsys, command):
    write(tmp_path, {**VARS_FIRST, "book.yml": "- hosts: all\n  tasks: []\n"})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    argv = command if "-i" in command else [*command, "-i", "v.ini", "-i", "h.ini"]
    code = _invoke(app, argv)
    err = capsys.readouterr().err
    assert code == exitcodes.PARSE_ERROR, err
    assert err.startswith("error: v.ini:1: section [gpu:vars] names group 'gpu', declared "
                          "only by h.ini"), err  # fmt: skip


def test_the_api_reads_a_list_of_sources_as_one_inventory(tmp_path):
    from pctfleet.api import Fleet

    write(tmp_path, {"one.ini": ONE, "two.ini": TWO})
    fleet = Fleet.from_inventory([tmp_path / "one.ini", tmp_path / "two.ini"], limit="db,gpu")
    try:
        assert [c.name for c in fleet.containers] == ["192.0.2.10/200", "192.0.2.10/201"]
    finally:
        fleet.close()


def test_ansible_inventory_sources_lists_every_source(tmp_path):
    from pctfleet.playbook.magic import inventory_files

    write(tmp_path, {"one.ini": ONE, "two.ini": TWO})
    inv = load_inventory([tmp_path / "one.ini", tmp_path / "two.ini"])
    found = inventory_files(inv)["ansible_inventory_sources"]
    assert found == [str(tmp_path / "one.ini"), str(tmp_path / "two.ini")]
