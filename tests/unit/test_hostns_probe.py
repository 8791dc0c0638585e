"""Whether emulated hosts can have namespaces here, and what is said when they cannot."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from smdist.backends.local.hosts.namespaced import probe
from smdist.backends.local.hosts.namespaced.sshd import etc_environment, write_client
from smdist.backends.local.hosts.namespaced.switch import (
    DNS_SERVER,
    _network_ready,
    await_own_network,
    host_address,
    hosts_file,
    resolver_file,
)


def _probe(monkeypatch, *, euid: int, trial_code: int = 0, missing: str | None = None):
    probe.namespace_support.cache_clear()
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    monkeypatch.setattr(
        probe.shutil, "which", lambda tool, path=None: None if tool == missing else tool
    )
    trial = subprocess.CompletedProcess([], trial_code, "", "unshare: Operation not permitted")
    monkeypatch.setattr(probe, "_try", lambda user: trial)
    try:
        return probe.namespace_support()
    finally:
        probe.namespace_support.cache_clear()


def test_as_root_hosts_are_kernel_namespaces_and_without_root_user_namespaces(monkeypatch):
    assert _probe(monkeypatch, euid=0) == probe.Support(probe.ROOT)
    assert _probe(monkeypatch, euid=1000).user_namespace


def test_without_root_a_kernel_that_refuses_user_namespaces_is_named(monkeypatch):
    support = _probe(monkeypatch, euid=1000, trial_code=1)
    assert support.mode is None
    assert "unprivileged user namespaces" in support.problem
    assert "Operation not permitted" in support.problem


def test_a_missing_tool_is_named(monkeypatch):
    support = _probe(monkeypatch, euid=0, missing="ip")
    assert support.problem == "ip not found (util-linux, iproute2)"


def test_a_loopback_resolver_is_replaced_by_the_routers():
    assert resolver_file("nameserver 10.255.255.53\n") is None
    assert resolver_file("search x\nnameserver 127.0.0.53\n") == (
        f"nameserver {DNS_SERVER}\nsearch x\n"
    )


def test_every_host_resolves_every_other_by_name():
    assert host_address(2) == "10.0.0.12"  # .2 and .3 are the router's gateway and DNS
    assert hosts_file(["algo-1", "algo-2"]).splitlines() == [
        "127.0.0.1 localhost", "10.0.0.11 algo-1", "10.0.0.12 algo-2",
    ]  # fmt: skip


def test_the_ssh_client_runs_without_site_packages_and_refuses_a_host_not_of_the_job(tmp_path):
    client = write_client(tmp_path / "tools", tmp_path / "run")
    (tmp_path / "run").mkdir()
    # The client imports the shared argument reader by path, as it must under ``-S``.
    done = subprocess.run([str(client), "-p", "22", "root@algo-9", "-o", "X=1", "true"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 255, done.stderr
    assert "Could not resolve hostname algo-9" in done.stderr


def test_the_sshd_reads_etc_environment_as_pam_env_does():
    assert etc_environment("A=1\n# B=2\nC=x=y\n") == {"A": "1", "C": "x=y"}


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root")
def test_a_user_namespace_is_joined_only_once_unshare_has_mapped_root():
    """unshare makes the namespaces, then writes the map: a switch entered in between cannot
    add its bridge (``RTNETLINK answers: Operation not permitted``), so the wait covers both."""
    started = [
        subprocess.Popen(["unshare", "--user", *mapping, "--net", "--", "sleep", "60"])
        for mapping in ([], ["--map-root-user"])
    ]
    unmapped, mapped = started
    try:
        await_own_network(mapped.pid, user_namespace=True)
        assert _network_ready(mapped.pid, user_namespace=True)
        await_own_network(unmapped.pid)  # its own network, but a user namespace never mapped
        assert not _network_ready(unmapped.pid, user_namespace=True)
        refused = subprocess.run(
            ["nsenter", "--target", str(unmapped.pid), "--user", "--preserve-credentials",
             "--net", "--", "ip", "link", "add", "br0", "type", "bridge"],
            capture_output=True, text=True,
        )  # fmt: skip
        assert refused.returncode != 0 and "Operation not permitted" in refused.stderr
    finally:
        for process in started:
            process.kill()
            process.wait()
