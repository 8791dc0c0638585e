"""ssh sessions into emulated hosts that play a Deep Learning Container (``listen_ssh``), as the
SDK v3 container harness starts them: SageMaker's MPI drivers write the rank environment to a
worker's /etc/environment before they start its sshd, so mpirun's session on a worker always
sees its SM_* variables. The emulated port 22 answers from the host's start, so a session that
comes early waits for that file instead of starting without them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from smdist.backends.local.hosts.namespaced.cluster import HostCluster
from smdist.backends.local.hosts.namespaced.probe import SYSTEM_PATH, namespace_support

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        namespace_support().mode is None, reason=f"no namespaces: {namespace_support().problem}"
    ),
]

# algo-2's driver is slow to publish (2 s); algo-1's mpirun comes at once.
WORKER = "sleep 2; echo SM_CURRENT_HOST=algo-2 >> /etc/environment; exec sleep 60"
MASTER = "ssh algo-2 'echo seen=$SM_CURRENT_HOST' > /opt/ml/seen"


def test_a_session_into_a_worker_sees_the_environment_its_driver_publishes(tmp_path):
    cluster = HostCluster(
        ["algo-1", "algo-2"], route_out=False, user_namespace=namespace_support().mode == "user"
    )
    started: list[subprocess.Popen] = []
    try:
        cluster.open()
        env = {"PATH": f"{cluster.tools}:{SYSTEM_PATH}"}
        roots = [tmp_path / host for host in cluster.names]
        for index, (root, command) in enumerate(zip(roots, (MASTER, WORKER), strict=True), start=1):
            root.mkdir()
            started.append(
                cluster.start(
                    index, root, ["/bin/sh", "-c", command], env,
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, listen_ssh=True,
                )
            )  # fmt: skip
        master = started[0]
        assert master.wait(timeout=60) == 0, master.stderr.read()
        assert (roots[0] / "seen").read_text() == "seen=algo-2\n"
    finally:
        for process in started:
            process.kill()
            process.wait()
        cluster.close()
    assert not Path(cluster.run).exists()
