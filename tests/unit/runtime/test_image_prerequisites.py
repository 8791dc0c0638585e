"""What an MPI launcher needs from the image, checked by smdist's v3 driver before it waits."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from smdist.contract.image_prerequisites import absent_optional, missing_prerequisites
from smdist.runtime import v3_driver_mpi


def fake_path(tmp_path: Path, *programs: str) -> str:
    """A PATH of one directory holding an executable stand-in for each of ``programs``."""
    directory = tmp_path / "bin"
    directory.mkdir(exist_ok=True)
    for name in programs:
        program = directory / name
        program.write_text("#!/bin/sh\nexit 0\n")
        program.chmod(0o755)
    return str(directory)


@pytest.fixture
def no_sshd(tmp_path) -> str:
    return str(tmp_path / "absent" / "sshd")


@pytest.fixture
def closed_port() -> int:
    """A free port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def listening_port():
    """A port something listens on, as an sshd already started would."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def whats(missing) -> list[str]:
    return [item.what for item in missing]


@pytest.mark.parametrize("launcher", ["mpirun", "smddp"])
def test_an_image_with_mpirun_and_sshd_lacks_nothing(launcher, tmp_path, closed_port):
    sshd = Path(fake_path(tmp_path, "mpirun", "sshd")) / "sshd"
    found = missing_prerequisites(
        launcher, first_host=True, host_count=2, path=fake_path(tmp_path),
        sshd=str(sshd), ssh_port=closed_port,
    )  # fmt: skip
    assert found == []


def test_mpirun_missing_on_the_first_host_says_how_to_add_it(tmp_path, listening_port, no_sshd):
    path = fake_path(tmp_path, "python3")
    (missing,) = missing_prerequisites(
        "mpirun", first_host=True, host_count=2, path=path, sshd=no_sshd, ssh_port=listening_port
    )
    assert missing.what == "mpirun"
    assert f"mpirun is not in this image (PATH={path})" in missing.message
    assert "Open MPI" in missing.message and "openmpi-bin" in missing.message


def test_a_non_executable_mpirun_does_not_count(tmp_path, listening_port, no_sshd):
    path = fake_path(tmp_path)
    (Path(path) / "mpirun").write_text("not a program\n")
    found = missing_prerequisites(
        "smddp", first_host=True, host_count=1, path=path, sshd=no_sshd, ssh_port=listening_port
    )
    assert whats(found) == ["mpirun"]


def test_only_the_first_host_needs_mpirun(tmp_path, listening_port, no_sshd):
    found = missing_prerequisites(
        "mpirun", first_host=False, host_count=2, path=fake_path(tmp_path),
        sshd=no_sshd, ssh_port=listening_port,
    )  # fmt: skip
    assert found == []


def test_no_sshd_and_nothing_on_the_ssh_port_is_missing_on_every_host(
    tmp_path, closed_port, no_sshd
):
    path = fake_path(tmp_path, "mpirun")
    for first in (True, False):
        (missing,) = missing_prerequisites(
            "mpirun", first_host=first, host_count=2, path=path, sshd=no_sshd, ssh_port=closed_port
        )
        assert missing.what == "sshd"
        assert no_sshd in missing.message and f"port {closed_port}" in missing.message
        assert "openssh-server" in missing.message


def test_something_listening_on_the_ssh_port_stands_for_sshd(tmp_path, listening_port, no_sshd):
    found = missing_prerequisites(
        "mpirun", first_host=False, host_count=4, path=fake_path(tmp_path),
        sshd=no_sshd, ssh_port=listening_port,
    )  # fmt: skip
    assert found == []


def test_a_single_host_job_needs_no_ssh_server(tmp_path, closed_port, no_sshd):
    found = missing_prerequisites(
        "mpirun", first_host=True, host_count=1, path=fake_path(tmp_path, "mpirun"),
        sshd=no_sshd, ssh_port=closed_port,
    )  # fmt: skip
    assert found == []


def test_both_missing_are_both_named(tmp_path, closed_port, no_sshd):
    found = missing_prerequisites(
        "smddp", first_host=True, host_count=2, path=fake_path(tmp_path),
        sshd=no_sshd, ssh_port=closed_port,
    )  # fmt: skip
    assert whats(found) == ["mpirun", "sshd"]


@pytest.mark.parametrize("launcher", ["program", "tf_config"])
def test_other_launchers_need_nothing_of_the_image(launcher, tmp_path, closed_port, no_sshd):
    found = missing_prerequisites(
        launcher, first_host=True, host_count=2, path=fake_path(tmp_path),
        sshd=no_sshd, ssh_port=closed_port,
    )  # fmt: skip
    assert found == []


def test_smddprun_and_mpi4py_stay_optional_but_are_named_when_absent(tmp_path, monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert absent_optional("smddp", fake_path(tmp_path)) == ["smddprun", "mpi4py"]
    assert absent_optional("smddp", fake_path(tmp_path, "smddprun")) == ["mpi4py"]
    assert absent_optional("mpirun", fake_path(tmp_path)) == []


def test_the_driver_writes_the_failure_file_and_prints_the_same_line(
    tmp_path, monkeypatch, capsys, closed_port
):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)  # no mpi4py
    monkeypatch.setattr(v3_driver_mpi, "SSHD", str(tmp_path / "absent" / "sshd"))
    monkeypatch.setattr(v3_driver_mpi, "SSH_PORT", closed_port)
    env = {"PATH": fake_path(tmp_path, "smddprun")}
    output = tmp_path / "opt_ml" / "output"
    code = v3_driver_mpi.check_image("smddp", ["algo-1", "algo-2"], "algo-1", env, output)
    assert code == 1
    failure = (output / "failure").read_text().splitlines()
    assert len(failure) == 2
    assert "mpirun is not in this image" in failure[0]
    assert "no ssh server in this image" in failure[1]
    printed = capsys.readouterr().out
    assert all(line in printed for line in failure)
    assert printed.splitlines()[0] == "smdist driver: smddp runs without mpi4py (not in this image)"


def test_the_driver_goes_on_when_the_image_has_what_it_needs(tmp_path, listening_port, monkeypatch):
    monkeypatch.setattr(v3_driver_mpi, "SSHD", str(tmp_path / "absent" / "sshd"))
    monkeypatch.setattr(v3_driver_mpi, "SSH_PORT", listening_port)
    env = {"PATH": fake_path(tmp_path, "mpirun")}
    output = tmp_path / "output"
    assert v3_driver_mpi.check_image("mpirun", ["algo-1", "algo-2"], "algo-1", env, output) == 0
    assert not (output / "failure").exists()
