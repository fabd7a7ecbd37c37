"""Host patterns (--limit, a play's hosts:) as ansible-core reads them. The same
patterns run through the real tool in tests/integration/test_limit_differential.py;
here are the outcomes, pctfleet's own terms, the errors and the commands."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from pctfleet import exitcodes
from pctfleet.cli import main as cli
from pctfleet.errors import EmptySelection, InventoryError, UndefinedVariable
from pctfleet.inventory import load_inventory
from pctfleet.inventory.limit import ansible_order, split_pattern
from pctfleet.inventory.model import Group
from pctfleet.run.engine import RunOptions
from pctfleet.run.playbookrun import RunRequest, prepare
from pctfleet.transport import ssh
from pctfleet.transport.options import ConnectOptions

INI = (Path(__file__).resolve().parents[1] / "patterns/hosts.ini").read_text()


@pytest.fixture
def inv_path(tmp_path: Path) -> Path:
    path = tmp_path / "hosts.ini"
    path.write_text(INI)
    return path


@pytest.fixture
def inv(inv_path: Path):  # noqa: ANN201
    return load_inventory(inv_path)


# ansible-core's `all` (measured): ungrouped, the top groups' own hosts, then deeper.
EVERY = ["solo", "ct02", "gpu-1", "gpu-2", "ct03", "ct12", "api.prod.example.com",
         "api.dev.example.com"]  # fmt: skip


def hosts(containers) -> list[str]:  # noqa: ANN001
    return [c.host for c in containers]


# ---------------------------------------------------------------- names (F11)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*1", ["gpu-1"]),  # not gpu-2, whose ctid (201) ends in 1
        ("*.prod.example.com", ["api.prod.example.com"]),  # not api.dev, on pve1.prod...
        ("api.*", ["api.prod.example.com", "api.dev.example.com"]),
        ("a*", EVERY),  # group `all` matches, as in Ansible
    ],
)
def test_globs_match_host_and_group_names_only(inv, pattern, expected):
    assert hosts(inv.select(pattern)) == expected


@pytest.mark.parametrize("pattern", ["192.0.2.*", "*/101", "pve1.prod.*", "10?"])
def test_a_glob_never_matches_a_node_a_key_or_a_ctid(inv, pattern):
    with pytest.raises(InventoryError, match="matches no group, host, node or container"):
        inv.select(pattern)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("192.0.2.20", ["ct02", "ct12"]),  # a node, by its address
        ("pve1.prod.example.com", ["api.prod.example.com", "api.dev.example.com"]),
        ("192.0.2.10/201", ["gpu-2"]),  # a node/ctid key
        ("201", ["gpu-2"]),  # a ctid
        ("gpu:!192.0.2.20", ["gpu-1", "gpu-2", "ct03"]),
        ("ct03", ["ct03"]),  # a host's name wins over the group of that name...
        ("all:&ct03", ["ct02"]),  # ...where the term is plain, as in ansible-core
    ],
)
def test_exact_terms_ansible_has_no_name_for(inv, pattern, expected):
    assert hosts(inv.select(pattern)) == expected


# ---------------------------------------------------------------- subscripts, ~regex (F5)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        # gpu in Ansible's order: its own hosts, then rack's: gpu-1 gpu-2 ct03 ct02 ct12
        ("gpu[0]", {"gpu-1"}),
        ("gpu[-1]", {"ct12"}),
        ("gpu[1:]", {"gpu-2", "ct03", "ct02", "ct12"}),
        ("gpu[0:1]", {"gpu-1", "gpu-2"}),  # inclusive
        ("gpu[0:0]", {"gpu-1"}),  # an end of 0 is no end, as there
        ("gpu[3:0]", {"ct02"}),
        ("gpu[2:1]", set()),
        ("gpu[9:]", set()),
        ("gpu[1-2]", {"gpu-2", "ct03"}),  # the old form, still read
        # top: gpu's and web's own hosts come before rack's (level by level)
        ("top[3]", {"ct12"}),
        ("top[0:3]", {"gpu-1", "gpu-2", "ct03", "ct12"}),
        ("*[0]", {"solo"}),  # the groups `*` matches, `all` first
        ("all[1]", {"ct02"}),  # all: ungrouped, then ct03, then top's levels
        ("empty[0]", set()),
        ("~ct0[12]", {"ct02"}),  # a regex, matched from the start
        ("~ct", {"ct03", "ct02", "ct12"}),
        ("ct0[!2]", {"ct03", "ct02"}),  # a glob class: host ct03, and group ct03 (ct02)
        ("~^api\\.(prod|dev)", {"api.prod.example.com", "api.dev.example.com"}),
        ("gpu[0],gpu[-1]", {"gpu-1", "ct12"}),
        ("gpu:!gpu[0]", {"gpu-2", "ct03", "ct02", "ct12"}),
    ],
)
def test_subscripts_and_regexes(inv, pattern, expected):
    assert set(hosts(inv.matching(pattern))) == expected


@pytest.mark.parametrize("pattern", ["gpu[9]", "gpu[-6]", "rack[2]"])
def test_a_subscript_past_the_end_is_an_error_naming_it(inv, pattern):
    with pytest.raises(InventoryError, match=rf"pattern {re.escape(repr(pattern))}: no host at"):
        inv.select(pattern)


def test_a_trailing_bracket_of_digits_is_a_subscript_not_a_glob(inv):
    with pytest.raises(InventoryError) as caught:
        inv.select("ct0[12]")
    message = str(caught.value)
    assert "'ct0[12]' matches no group, host" in message
    assert "[12] is a subscript of 'ct0'" in message and "~ct0[12]" in message


def test_a_bad_regex_is_one_line_naming_it(inv):
    with pytest.raises(InventoryError, match=r"pattern '~\(ct': invalid regular expression"):
        inv.select("~(ct")


def test_group_order_counts_own_hosts_before_childrens():
    """`members` is closed depth first; a subscript counts level by level."""
    groups = {
        "top": Group("top", ("a", "x", "b", "y", "c"), ("g1", "g2")),
        "g1": Group("g1", ("x", "b", "y"), ("deep",)),
        "deep": Group("deep", ("b", "y")),
        "g2": Group("g2", ("c",)),
    }
    order = ansible_order(groups, ["z", "a", "x", "b", "y", "c"])
    assert order["top"] == ["a", "x", "c", "b", "y"]  # top's a; g1's x, g2's c; deep's
    assert order["g1"] == ["x", "b", "y"]
    assert order["all"] == ["z", "a", "x", "c", "b", "y"]  # z is in no group
    # b listed in top itself (and in deep): top's own hosts are a and b
    groups["top"] = Group("top", ("a", "b", "x", "y", "c"), ("g1", "g2"))
    assert ansible_order(groups)["top"] == ["a", "b", "x", "c", "y"]


# ---------------------------------------------------------------- splitting, lists (F8)


@pytest.mark.parametrize(
    ("pattern", "terms"),
    [
        ("gpu:&rack:!ct12", ["gpu", "&rack", "!ct12"]),
        ("gpu , !ct12", ["gpu", "!ct12"]),
        ("gpu ct02", ["gpu", "ct02"]),
        ("gpu:101", ["gpu:101"]),  # host:port, one term (as in Ansible)
        ("2001:db8::1", ["2001:db8::1"]),
        ("[2001:db8::1]:22", ["[2001:db8::1]:22"]),
        ("web[0:1]:gpu", ["web[0:1]", "gpu"]),
        ("web[0:1]", ["web[0:1]"]),
        (["gpu:!b", "a"], ["gpu", "!b", "a"]),  # a list: each item apart
    ],
)
def test_patterns_split_as_ansible_splits_them(pattern, terms):
    assert split_pattern(pattern) == terms


def test_a_hosts_list_item_keeps_its_own_separators(inv):
    assert hosts(inv.matching(["rack:!ct12", "gpu-1"])) == ["ct02", "gpu-1"]
    # `!` reaches every item, as ansible-core orders the terms
    assert hosts(inv.matching(["gpu-1", "rack:!gpu-1"])) == ["ct02", "ct12"]


def test_a_host_port_term_says_how_to_separate(inv):
    with pytest.raises(InventoryError, match="'gpu:101' matches no .*separate terms with commas"):
        inv.select("gpu:101")


# ---------------------------------------------------------------- @file (F6)


def test_a_limit_file_gives_a_pattern_a_line(inv, tmp_path, monkeypatch):
    (tmp_path / "site.retry").write_text("gpu-1\n\n  rack  \n!ct12\n")
    monkeypatch.chdir(tmp_path)
    assert hosts(inv.select("@site.retry")) == ["ct02", "gpu-1"]
    assert hosts(inv.select(f"@{tmp_path / 'site.retry'},prod")) == [
        "ct02", "gpu-1", "api.prod.example.com",
    ]  # fmt: skip
    # a play's hosts: has no limit files
    with pytest.raises(InventoryError, match="'@site.retry' matches no"):
        inv.matching("@site.retry")


def test_limit_file_errors_name_the_file(inv, tmp_path):
    with pytest.raises(InventoryError, match=r"^--limit '@/nonexistent/x': no such file$"):
        inv.select("@/nonexistent/x")
    with pytest.raises(InventoryError, match=r"^--limit '@.*': not a file"):
        inv.select(f"@{tmp_path}")
    (tmp_path / "bad.retry").write_text("gpu-1\nnope\n")
    with pytest.raises(InventoryError, match=r"'nope' matches no .*\(a line of @.*bad.retry\)"):
        inv.select(f"@{tmp_path / 'bad.retry'}")


# ---------------------------------------------------------------- empty selections (F10)


@pytest.mark.parametrize("pattern", ["empty", "gpu:&rack:!ct02:!ct12", "gpu[9:]", "!all"])
def test_a_limit_that_leaves_nothing_is_refused(inv, pattern):
    with pytest.raises(EmptySelection, match=r"leaves no container to target in .*hosts.ini$"):
        inv.select(pattern)
    assert inv.matching(pattern) == []  # a play's hosts: may match nothing


def invoke(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli._invoke(cli.app, list(args))
    return code, out.getvalue(), err.getvalue()


BOOK = "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: {msg: hi}\n"


@pytest.mark.parametrize(
    "command",
    [
        ["run", "BOOK"],
        ["provision"],
        ["audit"],
        ["verify"],
        ["doctor"],
        ["exec", "-n", "--", "true"],
        ["rollout", "BOOK", "--no-gate"],
        ["report", "--markdown", "-"],
    ],
)
def test_every_command_refuses_an_empty_selection(inv_path, tmp_path, monkeypatch, command):
    tried: list = []
    monkeypatch.setattr(ssh.NodeConnection, "_connect", lambda self: tried.append(self.node))
    book = tmp_path / "book.yml"
    book.write_text(BOOK)
    args = [str(book) if word == "BOOK" else word for word in command]
    if command[0] in ("run", "provision", "rollout"):
        args += ["--journal-dir", str(tmp_path / "runs")]
    where = ["-i", str(inv_path), "-l", "gpu:&rack:!ct02:!ct12"]
    code, out, err = invoke(*args[:1], *where, *args[1:])
    assert code == exitcodes.BAD_OPTIONS, (code, out, err)
    assert err.strip() == (
        f"error: --limit 'gpu:&rack:!ct02:!ct12' leaves no container to target in {inv_path}"
    )
    assert not tried and not (tmp_path / "runs").exists()


def test_inventory_show_lists_an_empty_selection(inv_path):
    code, out, err = invoke("inventory", "show", "-i", str(inv_path), "-l", "empty", "--json")
    assert (code, json.loads(out)) == (exitcodes.OK, {"nodes": [], "containers": []})
    code, out, err = invoke("inventory", "show", "-i", str(inv_path), "-l", "empty")
    assert code == exitcodes.OK and "leaves no container to target" in err


def test_limit_file_on_the_command_line(inv_path, tmp_path, monkeypatch):
    (tmp_path / "site.retry").write_text("ct12\ngpu-2\n")
    monkeypatch.chdir(tmp_path)
    code, out, _ = invoke("inventory", "show", "-i", str(inv_path), "-l", "@site.retry", "--json")
    assert code == exitcodes.OK
    assert [c["name"] for c in json.loads(out)["containers"]] == ["gpu-2", "ct12"]
    code, _, err = invoke("inventory", "show", "-i", str(inv_path), "-l", "@missing.retry")
    assert code == exitcodes.PARSE_ERROR
    assert err.strip() == "error: --limit '@missing.retry': no such file"


# ---------------------------------------------------------------- hosts: templates (F7)


def plays(tmp_path: Path, inv, book: str, limit: str | None = None, **extra):  # noqa: ANN001, ANN201
    (tmp_path / "site.yml").write_text(book)
    request = RunRequest(
        tmp_path / "site.yml",
        inv,
        inv.select(limit),
        ConnectOptions(),
        RunOptions(extra_vars=extra),
    )
    prepared = prepare(request)
    return [hosts(members) for _, members in prepared.plays], prepared.warnings


TEMPLATED = """\
- hosts: "{{ target }}"
  gather_facts: false
  tasks: [{debug: {msg: x}}]
- hosts: "{{ from_vars }}"
  vars: {from_vars: prod}
  gather_facts: false
  tasks: [{debug: {msg: x}}]
- hosts: "{{ from_file }}"
  vars_files: [names.yml]
  gather_facts: false
  tasks: [{debug: {msg: x}}]
- hosts: "{{ groups['gpu'][:2] }}"
  gather_facts: false
  tasks: [{debug: {msg: x}}]
- hosts: ["{{ 'r' ~ 'ack' }}", "!{{ target_not }}"]
  gather_facts: false
  tasks: [{debug: {msg: x}}]
- hosts: ["rack:!ct12", gpu-1]
  gather_facts: false
  tasks: [{debug: {msg: x}}]
"""


def test_templated_hosts_render_with_extra_play_vars_and_magic(tmp_path, inv):
    (tmp_path / "names.yml").write_text("from_file: dev\n")
    found, _ = plays(tmp_path, inv, TEMPLATED, target="web", target_not="ct12")
    assert found == [
        ["ct12", "api.prod.example.com", "api.dev.example.com"],
        ["api.prod.example.com"],
        ["api.dev.example.com"],
        ["gpu-1", "gpu-2"],
        ["ct02"],
        ["ct02", "gpu-1"],
    ]


def test_hosts_cannot_use_an_inventory_variable(tmp_path):
    path = tmp_path / "hosts.ini"
    path.write_text("[gpu]\na proxmox_vmid=200 ansible_host=192.0.2.10\n[all:vars]\nt=gpu\n")
    inv = load_inventory(path)
    book = '- name: p\n  hosts: "{{ t }}"\n  tasks: [{debug: {msg: x}}]\n'
    with pytest.raises(UndefinedVariable) as caught:
        plays(tmp_path, inv, book)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path}/site.yml:1: play 'p': 'hosts': undefined variable 't'")
    assert "no inventory variable is known then" in message and "\n" not in message


def test_a_play_no_selected_container_matches_is_skipped_with_a_warning(tmp_path, inv):
    book = (
        "- name: first\n  hosts: empty\n  tasks: [{debug: {msg: x}}]\n"
        "- name: second\n  hosts: gpu\n  tasks: [{debug: {msg: x}}]\n"
    )
    found, warnings = plays(tmp_path, inv, book, limit="rack")
    assert found == [[], ["ct02", "ct12"]]
    assert warnings == [
        f"{tmp_path}/site.yml:1: play 'first': no selected container matches its hosts 'empty': "
        "skipped"
    ]


def test_a_rollout_journal_names_a_limit_file_by_absolute_path(tmp_path, monkeypatch):
    from pctfleet.cli.rollout import RolloutArgs

    monkeypatch.chdir(tmp_path)

    def kept(limit: str) -> str:
        return RolloutArgs(playbook=Path("site.yml"), inventory=None, limit=limit).params()["limit"]

    assert kept("@site.retry:gpu") == f"@{tmp_path}/site.retry,gpu"  # --resume may run elsewhere
    assert kept("gpu:!b") == "gpu:!b"


def test_a_hosts_subscript_counts_the_inventory_not_the_selection(tmp_path, inv):
    book = "- hosts: rack[0]\n  tasks: []\n- hosts: rack[-1]\n  tasks: []\n"
    found, _ = plays(tmp_path, inv, book, limit="ct12")
    assert found == [[], ["ct12"]]  # rack[0] is ct02, outside --limit: as ansible-playbook


# ---------------------------------------------------------------- order


_AB = "a proxmox_vmid=200 ansible_host=192.0.2.10\nb proxmox_vmid=201 ansible_host=192.0.2.10\n"
CANARY = f"[pve1]\n{_AB}[canary]\nb\n"
OWN_FIRST = (
    "[pve1]\na proxmox_vmid=200 ansible_host=192.0.2.10\n"
    "[gpu]\nb proxmox_vmid=201 ansible_host=192.0.2.10\n[gpu:children]\npve1\n"
)
NESTED = (
    "[pve1]\na proxmox_vmid=200 ansible_host=192.0.2.10\n"
    "[pve2]\nb proxmox_vmid=201 ansible_host=192.0.2.10\n[gpu:children]\npve1\n"
)
SERIAL = "- hosts: {}\n  serial: 1\n  gather_facts: false\n  tasks: [{{debug: {{msg: x}}}}]\n"


def _inv(tmp_path: Path, text: str):  # noqa: ANN202
    (tmp_path / "hosts.ini").write_text(text)
    return load_inventory(tmp_path / "hosts.ini")


def test_a_play_s_hosts_come_in_ansible_s_order(tmp_path):
    # measured (ansible-core 2.19, ansible_play_hosts_all and serial: 1 batches)
    assert plays(tmp_path, _inv(tmp_path, CANARY), SERIAL.format('"canary:pve1"'))[0] == [
        ["b", "a"]
    ]
    # the play's order, not the --limit's (`all`'s: a, b)
    found, _ = plays(tmp_path, _inv(tmp_path, CANARY), SERIAL.format("canary:pve1"), "pve1")
    assert found == [["b", "a"]]
    assert plays(tmp_path, _inv(tmp_path, OWN_FIRST), SERIAL.format("gpu"))[0] == [["b", "a"]]
    assert plays(tmp_path, _inv(tmp_path, NESTED), SERIAL.format("all"))[0] == [["b", "a"]]


def test_a_limit_selects_in_the_all_group_s_order(tmp_path):
    inv = _inv(tmp_path, NESTED)
    # `ansible all --list-hosts -l a,b`: b, a (pve2 is all's child, pve1 gpu's)
    assert hosts(inv.select("a,b")) == hosts(inv.select(None)) == ["b", "a"]
    assert hosts(_inv(tmp_path, CANARY).select("b,a")) == ["a", "b"]


def test_the_groups_variable_lists_hosts_in_ansible_s_order(tmp_path):
    from pctfleet.playbook.magic import groups

    assert groups(_inv(tmp_path, OWN_FIRST)) == {
        "all": ["b", "a"], "ungrouped": [], "pve1": ["a"], "gpu": ["b", "a"],
    }  # fmt: skip
    assert groups(_inv(tmp_path, NESTED))["all"] == ["b", "a"]


def test_a_native_inventory_keeps_its_order(tmp_path):
    (tmp_path / "fleet.yml").write_text(
        "nodes: {pve1: {containers: [200, 201]}, pve2: {containers: [300]}}\n"
        "groups: {gpu: {containers: [pve2/300, pve1/201]}}\n"
    )
    inv = load_inventory(tmp_path / "fleet.yml")
    keys = ["pve1/201", "pve2/300"]
    assert [c.key for c in inv.matching("pve2/300:gpu")] == keys
    assert [c.key for c in inv.select("pve2/300,gpu")] == keys
