"""Inventory loading, validation, patterns, vars precedence, -e and --ct parsing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pctfleet.errors import InputError, InventoryError
from pctfleet.inventory import (
    Container,
    Inventory,
    Node,
    adhoc_inventory,
    load_inventory,
    parse_ctids,
    parse_extra_vars,
)

REPO = Path(__file__).resolve().parents[2]

NATIVE = """\
defaults:
  user: admin
  port: 2200
  identity: /keys/id
  known_hosts: /keys/known
  ssh_options: {ServerAliveInterval: 30}
vars: {level: all, cuda_toolkit: "13.0.2"}
nodes:
  pve1:
    address: 10.1.2.6
    vars: {level: node}
    containers:
      200: {name: gpu-a, vars: {level: container}}
      201: {name: gpu-b}
      205:
  pve2:
    port: 22
    containers:
      300: {name: gpu-c}
      301: {name: cpu-a}
groups:
  gpu:
    containers: [gpu-a, pve1/201]
    nodes: [pve2]
    vars: {level: gpu}
  cpu:
    containers: [cpu-a]
  fleet:
    children: [gpu, cpu]
    vars: {level: fleet}
"""


def write(tmp_path: Path, text: str, name: str = "inv.yml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def load(tmp_path: Path, text: str) -> Inventory:
    return load_inventory(write(tmp_path, text))


def error(tmp_path: Path, text: str, kind: type[Exception] = InventoryError) -> str:
    """The one-line message that loading `text` fails with."""
    path = write(tmp_path, text)
    with pytest.raises(kind) as info:
        load_inventory(path)
    message = str(info.value)
    assert len(message.splitlines()) == 1
    return message.replace(str(path), "F")


def keys(containers: list[Container]) -> list[str]:
    return [c.key for c in containers]


# ---------------------------------------------------------------- native format


def test_native_inventory_loads_nodes_containers_and_defaults(tmp_path):
    inv = load(tmp_path, NATIVE)
    assert list(inv.nodes) == ["pve1", "pve2"]
    pve1, pve2 = inv.nodes["pve1"], inv.nodes["pve2"]
    assert pve1 == Node("pve1", "10.1.2.6", 2200, "admin", "/keys/id", "/keys/known")
    assert pve1.ssh_options == {"ServerAliveInterval": 30}
    assert (pve2.address, pve2.port, pve2.user) == ("pve2", 22, "admin")
    assert keys(inv.containers) == ["pve1/200", "pve1/201", "pve1/205", "pve2/300", "pve2/301"]
    a = inv.containers[0]
    assert (a.node, a.ctid, a.name, a.label, a.vars) == (
        pve1,
        200,
        "gpu-a",
        "gpu-a",
        {"level": "container"},
    )
    assert inv.containers[2].name is None and inv.containers[2].label == "pve1/205"
    assert hash(a) == hash(inv.get("pve1/200"))


def test_groups_resolve_nodes_names_and_children_in_precedence_order(tmp_path):
    inv = load(tmp_path, NATIVE)
    assert inv.groups["gpu"].members == ("pve1/200", "pve1/201", "pve2/300", "pve2/301")
    assert set(inv.groups["fleet"].members) == {"pve1/200", "pve1/201", "pve2/300", "pve2/301"}
    assert inv.groups["gpu"].parents == ("fleet",)
    # parents before children: fleet (depth 1) then cpu, gpu (depth 2, by name)
    assert inv.get("pve2/301").groups == ("fleet", "cpu", "gpu")
    assert inv.get("pve1/205").groups == ()


def test_vars_precedence_all_group_node_container_extra(tmp_path):
    inv = load(tmp_path, NATIVE)
    ct = {c.key: c for c in inv.containers}
    assert inv.vars_for(ct["pve1/205"])["level"] == "node"
    assert inv.vars_for(ct["pve1/200"])["level"] == "container"
    assert inv.vars_for(ct["pve1/200"], {"level": "extra"})["level"] == "extra"
    # pve2 has no node vars: the deepest group wins over its parent and over all
    assert inv.vars_for(ct["pve2/300"])["level"] == "gpu"
    assert inv.vars_for(ct["pve2/300"])["cuda_toolkit"] == "13.0.2"


def test_sibling_groups_apply_in_name_order(tmp_path):
    inv = load(
        tmp_path,
        """\
        vars: {v: all}
        nodes: {pve1: {containers: {200: }}}
        groups:
          zeta: {nodes: [pve1], vars: {v: zeta}}
          alpha: {nodes: [pve1], vars: {v: alpha}}
        """,
    )
    assert inv.containers[0].groups == ("alpha", "zeta")
    assert inv.vars_for(inv.containers[0])["v"] == "zeta"


def test_builtin_vars(tmp_path):
    inv = load(tmp_path, NATIVE)
    v = inv.vars_for(inv.get("pve1/200"), {"inventory_hostname": "nope"})
    assert v["inventory_hostname"] == "pve1/200"
    assert (v["node_name"], v["node_address"], v["ctid"], v["ct_name"]) == (
        "pve1",
        "10.1.2.6",
        200,
        "gpu-a",
    )
    assert v["group_names"] == ["fleet", "gpu"]


def test_container_list_shorthand_and_null_sections(tmp_path):
    inv = load(
        tmp_path,
        """\
        nodes:
          pve1:
            containers: [200, 201]
          pve2:
        groups:
        """,
    )
    assert keys(inv.containers) == ["pve1/200", "pve1/201"]
    assert inv.nodes["pve2"].address == "pve2"


# ---------------------------------------------------------------- validation errors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "nodes:\n  pve1:\n    port: abc\n",
            "F:3: node 'pve1': 'port' must be an integer 1-65535, got 'abc'",
        ),
        ("nodes:\n  pve1:\n    port: 70000\n", "F:3: node 'pve1': 'port' must be an integer"),
        ("defaults:\n  port: 0\nnodes: {pve1: }\n", "F:2: defaults: 'port' must be an integer"),
        (
            "nodes: {pve1: }\nnode: {}\n",
            "F:2: inventory: unknown key 'node' (did you mean 'nodes'?)",
        ),
        (
            "nodes:\n  pve1:\n    containers:\n      99: {}\n",
            "F:4: node 'pve1': container id 99 is invalid (integers 100-999999999)",
        ),
        (
            "nodes:\n  pve1:\n    containers:\n      abc: {}\n",
            "F:4: node 'pve1': container id 'abc'",
        ),
        ("nodes:\n  pve1:\n    containers:\n      1000000000:\n", "F:4: node 'pve1': container id"),
        ("nodes:\n  pve1:\n    address: ''\n", "F:3: node 'pve1': 'address' must be a non-empty"),
        (
            "nodes:\n  pve1:\n    address: -oProxyCommand=x\n",
            "F:3: node 'pve1': 'address' must not contain whitespace or start with '-'",
        ),
        ("nodes:\n  pve1:\n    address: 'a b'\n", "F:3: node 'pve1': 'address' must not contain"),
        ("nodes:\n  'pve 1': {}\n", "F:2: node name 'pve 1' is invalid"),
        (
            "nodes:\n  pve1:\n    adress: x\n",
            "F:3: node 'pve1': unknown key 'adress' (did you mean 'address'?)",
        ),
        (
            "nodes:\n  pve1:\n    containers:\n      200: {name: a}\n      201: {name: a}\n",
            "F:5: container pve1/201: container name 'a' is already used by pve1/200",
        ),
        (
            "nodes:\n  pve1:\n    containers:\n      200: {nmae: a}\n",
            "F:4: container pve1/200: unknown key 'nmae' (did you mean 'name'?)",
        ),
        (
            "nodes: {pve1: {containers: [200]}}\ngroups:\n  g:\n    containers:\n      - pve1/200\n"
            "      - pve1/999\n",
            "F:6: group 'g': unknown container 'pve1/999' in 'containers'",
        ),
        (
            "nodes: {pve1: }\ngroups:\n  g:\n    nodes: [pve9]\n",
            "F:4: group 'g': unknown node 'pve9'",
        ),
        (
            "nodes: {pve1: }\ngroups:\n  g:\n    children: [h]\n",
            "F:4: group 'g': unknown group 'h'",
        ),
        (
            "nodes: {pve1: }\ngroups:\n  a:\n    children: [b]\n  b:\n    children: [a]\n",
            "F:3: group cycle in 'children': a -> b -> a",
        ),
        ("nodes: {pve1: }\ngroups:\n  all: {}\n", "F:3: group name 'all' is reserved"),
        ("nodes: {pve1: }\ngroups:\n  'g g': {}\n", "F:3: group name 'g g' is invalid"),
        ("nodes: {pve1: }\nvars:\n  1bad: x\n", "F:3: vars: variable name '1bad' is invalid"),
        ("vars: {}\n", "F:1: the inventory defines no nodes"),
        ("- a\n- b\n", "F:1: an inventory must be a mapping"),
        ("nodes:\n  pve1: 5\n", "F:2: node 'pve1': 'pve1' must be a mapping, got 5"),
    ],
)
def test_validation_errors_name_file_and_line(tmp_path, text, expected):
    assert error(tmp_path, text).startswith(expected)


def test_yaml_problems_are_one_line_input_errors(tmp_path):
    assert error(tmp_path, "nodes:\n  pve1: [\n", InputError).startswith("F:3:1: YAML error")
    assert error(tmp_path, "nodes: {}\nnodes: {}\n", InputError).startswith(
        "F:2:1: YAML error: duplicate key 'nodes' (first defined on line 1)"
    )
    assert (
        error(tmp_path, "# nothing\n", InputError)
        == "F: file is empty (expected an inventory mapping)"
    )
    with pytest.raises(InputError, match="cannot read file"):
        load_inventory(tmp_path / "missing.yml")


# ---------------------------------------------------------------- patterns


@pytest.fixture
def inv(tmp_path) -> Inventory:
    return load(tmp_path, NATIVE)


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (None, ["pve1/200", "pve1/201", "pve1/205", "pve2/300", "pve2/301"]),
        ("all", ["pve1/200", "pve1/201", "pve1/205", "pve2/300", "pve2/301"]),
        ("*", ["pve1/200", "pve1/201", "pve1/205", "pve2/300", "pve2/301"]),
        ("cpu", ["pve2/301"]),
        ("pve1", ["pve1/200", "pve1/201", "pve1/205"]),
        ("pve1/205", ["pve1/205"]),
        ("gpu-b", ["pve1/201"]),
        ("300", ["pve2/300"]),
        ("gpu-*", ["pve1/200", "pve1/201", "pve2/300"]),
        ("pve1/20[!5]", ["pve1/200", "pve1/201"]),
        ("~pve1/20[01]", ["pve1/200", "pve1/201"]),
        ("pve1[1:]", ["pve1/201", "pve1/205"]),
        ("pve2,gpu-a", ["pve1/200", "pve2/300", "pve2/301"]),
        ("pve2:gpu-a", ["pve1/200", "pve2/300", "pve2/301"]),
        ("gpu:!pve2", ["pve1/200", "pve1/201"]),
        ("gpu,&pve2", ["pve2/300", "pve2/301"]),
        ("fleet:&pve*:!cpu-a", ["pve1/200", "pve1/201", "pve2/300"]),
        ("!pve1", ["pve2/300", "pve2/301"]),
    ],
)
def test_select_patterns(inv, limit, expected):
    assert keys(inv.select(limit)) == expected


@pytest.mark.parametrize("limit", ["nope", "gpu,nope", "gpu:!nope", "zz-*", "pve1/999"])
def test_unknown_pattern_is_an_error_naming_it(inv, limit):
    with pytest.raises(InventoryError, match="pattern '(nope|zz-\\*|pve1/999)' matches no"):
        inv.select(limit)


def test_unknown_pattern_suggests_a_close_name(inv):
    with pytest.raises(InventoryError, match="did you mean 'gpu-a'"):
        inv.select("gpu-aa")


# ---------------------------------------------------------------- Ansible format


ANSIBLE = """\
all:
  vars:
    ansible_user: admin
    level: all
  hosts:
    gpu-a:
      ansible_host: 10.1.2.6
      proxmox_vmid: 200
      level: host
      ansible_ssh_private_key_file: /keys/id
    pve-node:
      ansible_host: 10.1.2.6
  children:
    east:
      vars: {ansible_host: 10.1.2.7, ansible_port: 2222, level: east}
      hosts:
        gpu-b: {proxmox_vmid: 300}
        gpu-c: {proxmox_vmid: "301"}
      children:
        canary:
          hosts:
            gpu-c:
          vars: {level: canary}
"""


def test_ansible_inventory_converts_hosts_to_containers(tmp_path):
    inv = load(tmp_path, ANSIBLE)
    assert keys(inv.containers) == ["10.1.2.6/200", "10.1.2.7/300", "10.1.2.7/301"]
    a, b, c = inv.containers
    assert a.node == Node("10.1.2.6", "10.1.2.6", 22, "admin", "/keys/id")
    assert b.node == Node("10.1.2.7", "10.1.2.7", 2222, "admin")
    assert (a.name, b.name, c.name) == ("gpu-a", "gpu-b", "gpu-c")
    assert a.vars == {"level": "host"}  # connection vars are consumed
    assert c.groups == ("east", "canary")
    assert inv.groups["east"].members == ("10.1.2.7/300", "10.1.2.7/301")
    assert inv.groups["east"].vars == {"level": "east"}
    assert inv.vars == {"level": "all"}
    assert [inv.vars_for(ct)["level"] for ct in inv.containers] == ["host", "east", "canary"]
    assert keys(inv.select("canary")) == ["10.1.2.7/301"]
    assert keys(inv.select("10.1.2.6")) == ["10.1.2.6/200"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("all:\n  hosts:\n    a: {proxmox_vmid: 200}\n", "F:3: host 'a': has proxmox_vmid but no"),
        (
            "all:\n  hosts:\n    a: {ansible_host: h, proxmox_vmid: 5}\n",
            "F:3: host 'a': proxmox_vmid 5 is invalid",
        ),
        (
            "all:\n  hosts:\n    a: {ansible_host: h, proxmox_vmid: 200, ansible_port: x}\n",
            "F:3: host 'a': ansible_port must be an integer 1-65535",
        ),
        (
            "all:\n  hosts:\n    a: {ansible_host: h, proxmox_vmid: 200}\n"
            "    b: {ansible_host: h, proxmox_vmid: 201, ansible_port: 2}\n",
            "F:4: host 'b': node 'h' is reached with different",
        ),
        ("all:\n  hosts:\n    a: {ansible_host: h}\n", "F: no host has 'proxmox_vmid'"),
        ("all:\n  hots: {}\n", "F:2: group 'all': unknown key 'hots' (did you mean 'hosts'?)"),
        (
            "all:\n  children:\n    g:\n      hots: {}\n",
            "F:4: group 'g': unknown key 'hots' (did you mean 'hosts'?)",
        ),
    ],
)
def test_ansible_inventory_errors(tmp_path, text, expected):
    assert error(tmp_path, text).startswith(expected)


def test_example_inventories_load():
    native = load_inventory(REPO / "inventory" / "example.yml")
    ansible = load_inventory(REPO / "inventory" / "ansible-example.yml")
    assert native.containers and ansible.containers
    assert {c.name for c in native.select("gpu-*")} == {c.name for c in ansible.select("gpu-*")}


# ---------------------------------------------------------------- ad hoc, --ct, -e


def test_adhoc_inventory():
    inv = adhoc_inventory("10.1.2.6", [200, 201, 200], port=2222, user="admin")
    assert keys(inv.containers) == ["10.1.2.6/200", "10.1.2.6/201"]
    assert inv.nodes["10.1.2.6"] == Node("10.1.2.6", "10.1.2.6", 2222, "admin")
    with pytest.raises(InventoryError, match="--ct: 99 is not a container id"):
        adhoc_inventory("h", [99])
    with pytest.raises(InventoryError, match="--host"):
        adhoc_inventory("-oProxyCommand=x", [200])


def test_parse_ctids():
    assert parse_ctids("200,201,205-207") == [200, 201, 205, 206, 207]
    assert parse_ctids(" 300 , 300") == [300]
    with pytest.raises(InventoryError) as info:
        parse_ctids("200,20x")
    assert str(info.value) == "--ct: '20x' is not a container id (integers 100-999999999)"
    for bad in ["", "99", "207-205", "1000000000", "200-", "100-99999"]:
        with pytest.raises(InventoryError, match="--ct"):
            parse_ctids(bad)


def test_parse_extra_vars_forms(tmp_path):
    varfile = write(tmp_path, "a: 1\nlist: [x, y]\n", "vars.yml")
    got = parse_extra_vars(
        [
            "a=0 b='two words' c=\"x=y\"",
            f"@{varfile}",
            '{"d": {"e": 5}, "f": true}',
            "{g: 7}",
        ]
    )
    assert got == {
        "a": 1,
        "b": "two words",
        "c": "x=y",
        "list": ["x", "y"],
        "d": {"e": 5},
        "f": True,
        "g": 7,
    }
    assert parse_extra_vars(["n=5"]) == {"n": "5"}  # k=v values stay strings
    assert parse_extra_vars(None) == {}


@pytest.mark.parametrize(
    ("item", "match"),
    [
        ("novalue", "-e: expected name=value"),
        ("a='unclosed", "-e: cannot parse"),
        ("1a=2", "-e: expected name=value"),
        ("[1, 2]", "-e: expected a mapping"),
        ("@", "'@' must be followed"),
        ("@/nonexistent/vars.yml", "cannot read file"),
        ("{a: [}", "YAML error"),
    ],
)
def test_parse_extra_vars_errors(item, match):
    with pytest.raises(InputError, match=match) as info:
        parse_extra_vars([item])
    assert len(str(info.value).splitlines()) == 1


# ---------------------------------------------------------------- property


VOCAB = [
    "defaults",
    "vars",
    "nodes",
    "groups",
    "containers",
    "children",
    "hosts",
    "all",
    "address",
    "port",
    "user",
    "identity",
    "name",
    "proxmox_vmid",
    "ansible_host",
    "ansible_port",
    "pve1",
    "gpu",
    "200",
    "x",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 2**40),
    st.floats(),
    st.text(max_size=12),
    st.sampled_from(VOCAB),
)
keys_ = st.one_of(st.sampled_from(VOCAB), st.integers(0, 1000), st.text(max_size=8))
structures = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys_, inner, max_size=5)),
    max_leaves=30,
)


def _must_load_or_input_error(path: Path) -> None:
    try:
        load_inventory(path)
    except InputError as err:
        assert len(str(err).splitlines()) == 1, str(err)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(structures)
def test_random_structures_load_or_raise_input_error(tmp_path, data):
    path = tmp_path / "random.yml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    _must_load_or_input_error(path)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(alphabet=st.sampled_from(list("ab:-{}[]&*!?|>'\"#%@ \n\t,.0129\x00é")), max_size=60))
def test_random_text_loads_or_raises_input_error(tmp_path, text):
    path = tmp_path / "junk.yml"
    path.write_text(text, encoding="utf-8")
    _must_load_or_input_error(path)


def test_loaded_vars_are_plain_data_and_alias_loops_are_errors(tmp_path):
    inv = load(tmp_path, "vars: {a: {b: [1, {c: 2}]}}\nnodes: {pve1: {containers: [200]}}\n")
    assert type(inv.vars["a"]) is dict and type(inv.vars["a"]["b"]) is list
    assert yaml.safe_load(yaml.safe_dump(inv.vars)) == {"a": {"b": [1, {"c": 2}]}}
    assert (
        error(tmp_path, "vars: {a: &x [*x]}\nnodes: {pve1: }\n")
        == "F: inventory is nested too deeply"
    )


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (
            "Compression: yes",
            "F:4: node 'pve1': ssh_options: 'Compression' is not supported "
            "(supported: ProxyJump, ProxyCommand, ServerAliveInterval, StrictHostKeyChecking)",
        ),
        (
            "Port: 2222",
            "F:4: node 'pve1': ssh_options: 'Port' is not supported (use the 'port' key)",
        ),
        (
            "StrictHostKeyChecking: no",
            "F:4: node 'pve1': ssh_options: StrictHostKeyChecking no: only yes or accept-new",
        ),
    ],
)
def test_ssh_options_take_only_what_the_transport_applies(tmp_path, option, expected):
    text = f"nodes:\n  pve1:\n    ssh_options:\n      {option}\n"
    assert error(tmp_path, text).startswith(expected)


def test_connection_variables_may_be_templates_of_the_host_s_variables(tmp_path):
    # As ansible-core renders them (measured): the node's address, the ctid, a key path.
    (tmp_path / "inv.yml").write_text(
        "all:\n"
        "  vars: {pve_addr: 192.0.2.10, base: 200}\n"
        "  hosts:\n"
        "    a: {proxmox_vmid: '{{ base + 1 }}', ansible_host: '{{pve_addr}}',\n"
        "        ansible_ssh_private_key_file: '{{ inventory_dir }}/keys/pve'}\n"
    )
    (container,) = load_inventory(tmp_path / "inv.yml").containers
    assert (container.node.address, container.ctid) == ("192.0.2.10", 201)
    assert container.node.identity == str(tmp_path / "keys" / "pve")
    (tmp_path / "bad.yml").write_text(
        "all:\n  hosts:\n    a: {proxmox_vmid: 200, ansible_host: '{{ nope }}'}\n"
    )
    with pytest.raises(
        InventoryError, match=r"bad.yml:3: host 'a': ansible_host: undefined variable 'nope'"
    ):
        load_inventory(tmp_path / "bad.yml")
