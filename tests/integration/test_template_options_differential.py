"""How a template file is read, through ansible-playbook (`-c local`) and pctfleet
(`--local`): the template task's `trim_blocks`, `lstrip_blocks`, `newline_sequence`,
delimiters and `output_encoding`, a `#jinja2:` first line (which wins over the
task's), and the line breaks a file ends with (as many as the template file's, an
included file's last one left out), compared byte for byte (measured on
ansible-core 2.19)."""

from __future__ import annotations

from pathlib import Path

import differ

CALL = 1  # bump when how Ansible is called here changes
TEMPLATE = """\
[section]
  {% for name in names %}
  {{ name }} = on
  {% endfor %}
{% if flag %}
flag: yes
{% endif %}
tail
"""
MORE = {
    "lstrip.j2": "#jinja2: lstrip_blocks: True\n" + TEMPLATE,
    "notrim.j2": "#jinja2: trim_blocks: False, lstrip_blocks: True\n" + TEMPLATE,
    "square.j2": "#jinja2: variable_start_string: '[%', variable_end_string: '%]'\n"
    "{{ literal }} [% names | join(',') %]\n",
    "include.j2": "Hello {% include 'world.txt' %}!\n{% if flag %}end{% endif %}\n\n",
    "world.txt": "world\n",
}
BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {names: [a, b], flag: true}
  tasks:
    - {name: defaults, template: {src: plain.j2, dest: "{{ playbook_dir }}/out/defaults"}}
    - name: lstrip_blocks
      template: {src: plain.j2, dest: "{{ playbook_dir }}/out/lstrip", lstrip_blocks: true}
    - name: no trim_blocks
      template: {src: plain.j2, dest: "{{ playbook_dir }}/out/notrim", trim_blocks: false}
    - name: both
      template:
        src: plain.j2
        dest: "{{ playbook_dir }}/out/both"
        trim_blocks: false
        lstrip_blocks: true
    - name: CRLF
      template: {src: plain.j2, dest: "{{ playbook_dir }}/out/crlf", newline_sequence: '\r\n'}
    - name: other delimiters
      template:
        src: angle.j2
        dest: "{{ playbook_dir }}/out/angle"
        variable_start_string: "<<"
        variable_end_string: ">>"
        block_start_string: "<%"
        block_end_string: "%>"
    - name: latin-1
      template: {src: accent.j2, dest: "{{ playbook_dir }}/out/latin1", output_encoding: latin-1}
    - {name: header lstrip, template: {src: lstrip.j2, dest: "{{ playbook_dir }}/out/h-lstrip"}}
    - name: header wins over the task
      template: {src: notrim.j2, dest: "{{ playbook_dir }}/out/h-notrim", trim_blocks: true}
    - {name: header delimiters, template: {src: square.j2, dest: "{{ playbook_dir }}/out/h-sq"}}
    - name: an include, and line breaks after a block tag
      template: {src: include.j2, dest: "{{ playbook_dir }}/out/include"}
    - name: a second run changes nothing
      template: {src: plain.j2, dest: "{{ playbook_dir }}/out/lstrip", lstrip_blocks: true}
"""


def _tree(folder: Path) -> None:
    (folder / "out").mkdir(parents=True)
    templates = folder / "templates"
    templates.mkdir()
    (templates / "plain.j2").write_text(TEMPLATE)
    (templates / "angle.j2").write_text(
        "{{ raw }} << names | join('+') >>\n<% if flag %>on<% endif %>\n"
    )
    (templates / "accent.j2").write_text("café {{ names | length }}\n")
    for name, text in MORE.items():
        (templates / name).write_text(text)
    (folder / "book.yml").write_text(BOOK)


def _files(root: Path) -> dict[str, str]:
    return {p.name: p.read_bytes().hex() for p in sorted((root / "out").iterdir())}


def test_template_files_are_read_as_ansible_reads_them(tmp_path):
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"
    for folder in (theirs_dir, ours_dir):
        _tree(folder)

    def ansible() -> dict:
        tasks = differ.ansible_local(theirs_dir / "book.yml", theirs_dir)
        statuses = [differ.ansible_status(t["hosts"]["localhost"]) for t in tasks]
        return {"statuses": statuses, "files": _files(theirs_dir)}

    theirs = differ.cached("template-options", [CALL, BOOK, TEMPLATE, MORE], ansible)
    ours = differ.pctfleet_local(ours_dir / "book.yml", tmp_path / "runs")
    assert [t["status"] for t in ours] == theirs["statuses"]
    for name, hexed in _files(ours_dir).items():
        assert (name, bytes.fromhex(hexed)) == (name, bytes.fromhex(theirs["files"][name]))
    assert _files(ours_dir).keys() == theirs["files"].keys()


INLINE_BOOK = r"""
- hosts: all
  gather_facts: false
  vars: {hosts_list: [a, b]}
  tasks:
    - name: content with block lines
      copy:
        dest: "{{ playbook_dir }}/out.env"
        content: |
          # generated
          {% for h in hosts_list %}
          HOST_{{ loop.index }}={{ h }}
          {% endfor %}
          {% if hosts_list | length > 1 %}
          MULTI=1
          {% endif %}
    - name: a fact with block lines
      set_fact: {joined: "{% for h in hosts_list %}\n{{ h }}\n{% endfor %}\n"}
    - name: shows
      debug:
        msg: "{{ joined | to_json }} {{ lookup('file', playbook_dir + '/out.env') | to_json }}"
"""


def test_the_playbook_s_own_text_drops_the_line_break_after_a_block_tag(tmp_path):
    """ansible-core renders inline text with trim_blocks too (measured)."""
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(INLINE_BOOK)
    ours, theirs = differ.local_side_by_side(
        "template-inline", [1, INLINE_BOOK], tmp_path, lambda f: (f / "out.env").read_text()
    )
    assert ours == theirs
    assert ours["files"] == "# generated\nHOST_1=a\nHOST_2=b\nMULTI=1\n"
