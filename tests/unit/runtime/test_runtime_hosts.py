"""The bounded wait for host names, with real name resolution (libnss-wrapper for algo-N)."""

from __future__ import annotations

import ctypes.util
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from smdist.backends.local.hosts.names import HostNames
from smdist.runtime.hosts import HostsUnresolvedError, wait_for_hosts

REPO = Path(__file__).resolve().parents[3]
needs_nss_wrapper = pytest.mark.skipif(
    ctypes.util.find_library("nss_wrapper") is None,
    reason="libnss-wrapper is not installed (Debian package libnss-wrapper)",
)


def hosts_file_lines(*names_and_addresses: tuple[str, str]) -> str:
    names, addresses = zip(*names_and_addresses, strict=True)
    return HostNames(list(names), list(addresses)).hosts_file_text()


def test_hosts_that_resolve_return_at_once():
    wait_for_hosts(["localhost", "127.0.0.1"], timeout_s=5, interval_s=0.1)


def test_unresolved_hosts_are_named_with_the_timeout():
    with pytest.raises(HostsUnresolvedError) as error:
        wait_for_hosts(["localhost", "smdist-missing-host.invalid"], timeout_s=0.3, interval_s=0.1)
    assert error.value.hosts == ["smdist-missing-host.invalid"]
    assert "smdist-missing-host.invalid" in str(error.value)
    assert "0.3 s" in str(error.value)
    assert "localhost" not in str(error.value)


@pytest.mark.parametrize(("timeout_s", "interval_s"), [(-1, 1), (1, 0)])
def test_nonsensical_bounds_are_rejected(timeout_s, interval_s):
    with pytest.raises(ValueError, match="timeout_s"):
        wait_for_hosts(["localhost"], timeout_s=timeout_s, interval_s=interval_s)


def run_waiter(hosts_file: Path, hosts: list[str], timeout_s: float) -> subprocess.Popen:
    code = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.INFO)\n"
        "from smdist.runtime.hosts import wait_for_hosts, HostsUnresolvedError\n"
        "try:\n"
        f"    wait_for_hosts({hosts!r}, timeout_s={timeout_s}, interval_s=0.1)\n"
        "except HostsUnresolvedError as error:\n"
        "    print(error, file=sys.stderr); sys.exit(3)\n"
    )
    env = dict(os.environ, LD_PRELOAD="libnss_wrapper.so", NSS_WRAPPER_HOSTS=str(hosts_file))
    return subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True
    )


@needs_nss_wrapper
def test_a_host_that_appears_later_ends_the_wait(tmp_path):
    hosts_file = tmp_path / "hosts"
    hosts_file.write_text(hosts_file_lines(("algo-1", "127.0.0.11")))
    waiter = run_waiter(hosts_file, ["algo-1", "algo-2"], timeout_s=60)
    try:
        assert waiter.stderr is not None
        readable, _, _ = select.select([waiter.stderr], [], [], 60)
        assert readable, "the waiter never said it was waiting"
        line = waiter.stderr.readline()  # the waiter says it is waiting for algo-2
        assert "algo-2" in line
        # nss_wrapper reloads a hosts file whose modification time changed (1 s resolution).
        time.sleep(1.1)
        staged = tmp_path / "hosts.new"
        staged.write_text(hosts_file_lines(("algo-1", "127.0.0.11"), ("algo-2", "127.0.0.12")))
        staged.replace(hosts_file)
        assert waiter.wait(timeout=60) == 0
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait(timeout=10)


@needs_nss_wrapper
def test_a_host_that_never_appears_fails_the_wait_by_name(tmp_path):
    hosts_file = tmp_path / "hosts"
    hosts_file.write_text(hosts_file_lines(("algo-1", "127.0.0.11")))
    waiter = run_waiter(hosts_file, ["algo-1", "algo-2"], timeout_s=0.5)
    _, stderr = waiter.communicate(timeout=60)
    assert waiter.returncode == 3
    assert "did not resolve within 0.5 s: algo-2" in stderr
