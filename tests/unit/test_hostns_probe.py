"""Whether emulated hosts can have namespaces here, and what is said when they cannot."""

from __future__ import annotations

import os

from smdist.backends.local.hostns import probe
from smdist.backends.local.hostns.sshd import etc_environment, split_arguments
from smdist.backends.local.hostns.switch import host_address, hosts_file


def test_without_root_the_reason_is_named(monkeypatch):
    probe.namespace_problem.cache_clear()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    try:
        assert probe.namespace_problem() == "Linux namespaces for the hosts need root here"
    finally:
        probe.namespace_problem.cache_clear()


def test_a_missing_tool_is_named(monkeypatch):
    probe.namespace_problem.cache_clear()
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(
        probe.shutil, "which", lambda tool, path=None: None if tool == "ip" else tool
    )
    try:
        assert probe.namespace_problem() == "ip not found (util-linux, iproute2)"
    finally:
        probe.namespace_problem.cache_clear()


def test_every_host_resolves_every_other_by_name():
    assert host_address(2) == "10.0.0.2"
    assert hosts_file(["algo-1", "algo-2"]).splitlines() == [
        "127.0.0.1 localhost", "10.0.0.1 algo-1", "10.0.0.2 algo-2",
    ]  # fmt: skip


def test_the_ssh_client_reads_options_before_the_host_and_keeps_the_command_words():
    assert split_arguments(["-o", "StrictHostKeyChecking=no", "-p22", "-x", "root@algo-2",
                            "orted", "-mca", "ess", "env"]) == (
        "algo-2", ["orted", "-mca", "ess", "env"])  # fmt: skip
    assert etc_environment("A=1\n# B=2\nC=x=y\n") == {"A": "1", "C": "x=y"}
