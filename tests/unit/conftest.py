"""Every unit test sees no ansible.cfg but the ones it writes: not the developer's
~/.ansible.cfg, not /etc/ansible's, no ANSIBLE_* variable."""

from __future__ import annotations

import pytest

from pctfleet import ansiblecfg


@pytest.fixture(autouse=True)
def no_ansible_config_of_this_machine(monkeypatch, tmp_path_factory):
    nowhere = tmp_path_factory.getbasetemp() / "no-ansible-config"
    monkeypatch.setattr(ansiblecfg, "SYSTEM", nowhere / "etc.cfg")
    monkeypatch.setattr(ansiblecfg, "HOME_CONFIG", str(nowhere / "home.cfg"))
    for name in ("CONFIG", "INVENTORY", "VAULT_PASSWORD_FILE", "ROLES_PATH"):
        monkeypatch.delenv(f"ANSIBLE_{name}", raising=False)
