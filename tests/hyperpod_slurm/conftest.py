"""The test Slurm (``slurm_stand``) every hyperpod-slurm test submits to, started once per
test session and stopped at its end with nothing left running; the tests skip, saying why,
where it cannot run (Slurm not installed, not root, no libnss_wrapper)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_stand import REPO, SlurmStand, end, leftovers, missing_programs

from smdist.backends.hyperpod_slurm.log_lines import LogReader
from smdist.backends.local.hosts.shared.names import nss_wrapper_library

SMDIST = [sys.executable, "-m", "smdist.cli.app"]
HERE = Path(__file__).resolve().parent


def _why_not() -> str | None:
    missing = missing_programs()
    if missing:
        return (
            f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurmctld "
            "slurmd slurm-client (.ci/install-tests does, as root)"
        )
    if os.geteuid() != 0:
        return "the test Slurm's slurmd starts jobs as their user, which needs root"
    if nss_wrapper_library() is None:
        return "libnss_wrapper is missing: the test nodes' names would not resolve"
    return None


class Cluster:
    """The test Slurm, and the smdist command run against it."""

    def __init__(self, stand: SlurmStand, folder: Path) -> None:
        self.stand, self.folder = stand, folder
        # A space and a quote in every job's path: Slurm and bash must both read them as such.
        self.job_root = folder / "fsx" / "it's smdist"
        self.root = folder / "records"

    def smdist(
        self, *args: str, cwd: Path | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        env = {**self.stand.env, "PYTHONPATH": str(REPO)}
        return subprocess.run(
            [*SMDIST, *args], cwd=cwd or self.folder, env=env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip

    def output(self, name: str) -> str:
        """Job ``name``'s complete output lines as ``smdist logs`` labels them (``<node> |
        <text>``), read from its log file in this process: waiting on them costs no ``smdist``
        process per look."""
        lines: list[str] = []
        for log in sorted((self.job_root / name / "logs").glob("*.out")):
            reader = LogReader(lambda offset, path=log: path.read_bytes()[offset:])
            lines += reader.lines()
        return "".join(f"{line}\n" for line in lines)

    def wait_for_output(self, name: str, text: str, timeout: float = 180) -> None:
        """Wait until job ``name``'s labelled output holds ``text``."""
        deadline = time.monotonic() + timeout
        while text not in (output := self.output(name)):
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared in {name}'s log:\n{output}")
            time.sleep(0.5)

    def submit_flags(self, *, processes_per_node: int = 2) -> list[str]:
        """The flags of a submit to the test Slurm: its shared folder, this Python, two
        processes per (CPU) node, a free rendezvous port."""
        from smdist.backends.local.hosts.shared.ports import free_ports

        return [
            "--backend", "hyperpod-slurm", "--job-root", str(self.job_root),
            "--python", sys.executable, "--processes-per-node", str(processes_per_node),
            "--master-port", str(free_ports(1)[0]), "--root", str(self.root), "--poll", "1",
        ]  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here runs jobs (integration), all on one worker: one test Slurm serves them."""
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.xdist_group("hyperpod-slurm"))


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    why = _why_not()
    if why is not None:
        pytest.skip(why)
    folder = tmp_path_factory.mktemp("slurm")
    stand = SlurmStand(folder / "stand", str(nss_wrapper_library()))
    (folder / "stand").mkdir()
    try:
        stand.start()
        yield Cluster(stand, folder)
    finally:
        stand.stop()
        left = leftovers(str(folder))
        end(left)
        assert left == [], f"jobs left processes running: {left}"
