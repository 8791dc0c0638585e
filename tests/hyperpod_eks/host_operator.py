"""An operator stand-in that runs a HyperPodPyTorchJob as the HyperPod training operator does:
each replica a pod, each pod an emulated host (the local backend's ``HostCluster``: its own
``/opt/ml``, hostname, ``eth0``), running the pod's init containers and then its container's
command verbatim, which starts the real ``hyperpodrun``; the operator then posts each agent its
rank (``POST /start`` on port 8080: rank, nnodes, faultCount, master_addr, master_port),
follows ``GET /status`` until every agent has completed, and ends them (``POST /shutdown``).

A pod that fails (its agent reports it, or its process ends non-zero) restarts the job: every
pod is ended and started again, and posted its rank with the fault count raised, up to the job's
``runPolicy.jobMaxRetryCount``; the job resumes from what its pods left on the shared volume.
Deleting the job ends its pods: SIGTERM, SIGKILL after the grace period. The agents are reached
through a relay on one more host of the job's network (``image/relay.py``). Needs root.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from smdist.backends.local.hosts.namespaced.cluster import HostCluster
from smdist.backends.local.hosts.namespaced.switch import _ip, host_address
from tests.hyperpod_eks.pod_layout import IMAGE_BIN, image_bin, lay_out, pod_file

AGENT_PORT = 8080
MASTER_PORT = 23456


def _signal_session(session: int, number: int) -> None:
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and int((entry / "stat").read_text().rpartition(")")[2].split()[3]) == session
            ):
                os.kill(int(entry.name), number)
        except (OSError, ValueError, IndexError):
            pass


class HostOperator:
    def __init__(self, work: Path, shared: Path, *, user_namespace: bool = False,
                 timeout: float = 300.0) -> None:  # fmt: skip
        self.work, self.shared, self.timeout = work, shared, timeout
        self.user_namespace = user_namespace
        self.store: Any = None
        self.stopped: set[str] = set()
        self.processes: dict[str, list[subprocess.Popen]] = {}
        self.graces: dict[str, int] = {}
        self.threads: list[threading.Thread] = []
        self._numbers = itertools.count()

    # ---- what the API stand-in tells it ------------------------------------------------------
    def created(self, job: dict[str, Any]) -> None:
        thread = threading.Thread(target=self._run, args=(job,), daemon=True)
        self.threads.append(thread)
        thread.start()

    def deleted(self, job: dict[str, Any], grace: int) -> None:
        name = job["metadata"]["name"]
        self.graces[name] = grace
        self.stopped.add(name)
        self._end(self.processes.get(name, []), grace)

    def join(self, seconds: float) -> None:
        for thread in self.threads:
            thread.join(seconds)

    # ---- the agents, through the relay ---------------------------------------------------------
    def _ask(self, relay: Path, method: str, url: str, body: Any = None) -> dict[str, Any]:
        number = next(self._numbers)
        request = relay / f"request-{number}.json"
        (relay / "part").write_text(json.dumps({"method": method, "url": url, "body": body}))
        (relay / "part").replace(request)
        answer = relay / f"response-{number}.json"
        deadline = time.monotonic() + 15
        while not answer.exists():
            if time.monotonic() > deadline:
                return {"status": 0, "body": "the relay did not answer"}
            time.sleep(0.05)
        found = json.loads(answer.read_text())
        answer.unlink()
        return found

    def _agent_states(self, relay: Path, count: int) -> list[str]:
        states = []
        for index in range(1, count + 1):
            said = self._ask(relay, "GET", f"http://{host_address(index)}:{AGENT_PORT}/status")
            try:
                states.append(json.loads(said["body"]).get("status", "") if said["status"] else "")
            except ValueError:
                states.append("")
        return states

    # ---- pods ----------------------------------------------------------------------------------
    def _read(self, namespace: str, pod: str, process: subprocess.Popen) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.store.log(namespace, pod, line.decode(errors="replace").rstrip("\n"))

    def _put_pods(self, job: dict[str, Any], pods: list[str], phase: str, restarts: int) -> None:
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        template = job["spec"]["replicaSpecs"][0]["template"]
        for index, pod in enumerate(pods):
            self.store.put("pod", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod, "namespace": namespace,
                             "labels": {**template.get("metadata", {}).get("labels", {}),
                                        "HPJob": name}},
                "spec": {**template["spec"], "nodeName": f"node-{index}"},
                "status": {"phase": phase, "podIP": host_address(index + 1),
                           "containerStatuses": [{"name": "pytorch", "restartCount": restarts,
                                                  "ready": phase == "Running", "image": "",
                                                  "imageID": ""}]},
            })  # fmt: skip

    def _start_pods(self, cluster: HostCluster, job: dict[str, Any], pods: list[str],
                    roots: list[Path], files: list[Path]) -> list[subprocess.Popen]:  # fmt: skip
        namespace = job["metadata"]["namespace"]
        started = []
        for index, pod in enumerate(pods, start=1):  # a pod started again: a host anew
            shutil.rmtree(cluster.run / pod, ignore_errors=True)
            self._unplug(cluster, index)
        for index, (pod, root, spec) in enumerate(zip(pods, roots, files, strict=True), start=1):
            argv = [sys.executable, str(IMAGE_BIN / "pod_start.py"), str(spec)]
            process = cluster.start(
                index, root, argv, {"PATH": os.environ.get("PATH", "")}, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, cable=False,
            )  # fmt: skip
            threading.Thread(target=self._read, args=(namespace, pod, process), daemon=True).start()
            started.append(process)
        cluster.cable_all(list(enumerate(started, start=1)))
        return started

    @staticmethod
    def _unplug(cluster: HostCluster, index: int) -> None:
        """Remove the bridge's port of a host that ended (a network namespace goes away after
        its processes, its links with it; the port's name is the host's index)."""
        switch = cluster.switch
        assert switch is not None
        try:
            _ip(["link", "del", f"veth{index}"], inside=switch.pid, user=switch.user_namespace)
        except RuntimeError:  # already gone
            pass

    def _end(self, processes: list[subprocess.Popen], grace: float) -> None:
        for process in processes:
            _signal_session(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while any(p.poll() is None for p in processes) and time.monotonic() < deadline:
            time.sleep(0.1)
        for process in processes:
            _signal_session(process.pid, signal.SIGKILL)
            process.wait()

    # ---- one job -------------------------------------------------------------------------------
    def _attempt(self, job: dict[str, Any], relay: Path, processes: list, fault: int) -> str:
        """Rendezvous and follow one start of the job's pods: completed, failed or stopped."""
        name, count = job["metadata"]["name"], len(processes)
        namespace = job["metadata"]["namespace"]
        posted: set[int] = set()
        said_running = False
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if name in self.stopped:
                return "stopped"
            if any(p.poll() not in (None, 0) for p in processes):
                return "failed"
            states = self._agent_states(relay, count)
            for index, state in enumerate(states):
                if state == "ready" and index not in posted:
                    body = {"rank": index, "nnodes": count, "faultCount": fault,
                            "master_addr": host_address(1), "master_port": MASTER_PORT}  # fmt: skip
                    url = f"http://{host_address(index + 1)}:{AGENT_PORT}/start"
                    if self._ask(relay, "POST", url, body)["status"] == 200:
                        posted.add(index)
            if len(posted) == count and not said_running:
                said_running = True
                self.store.update_job(
                    namespace,
                    name,
                    condition="Running",
                    masterAddr=host_address(1),
                    masterPort=str(MASTER_PORT),
                )
            if "failed" in states:
                return "failed"
            if states and all(state == "completed" for state in states):
                for index in range(1, count + 1):
                    self._ask(relay, "POST", f"http://{host_address(index)}:{AGENT_PORT}/shutdown")
                return "completed"
            time.sleep(0.5)
        return "failed"

    def _run(self, job: dict[str, Any]) -> None:
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        replica = job["spec"]["replicaSpecs"][0]
        retries = (job["spec"].get("runPolicy") or {}).get("jobMaxRetryCount") or 0
        pods = [f"{name}-{replica['name']}-{index}" for index in range(replica["replicas"])]
        folder = self.work / name
        tools = image_bin(self.work)
        roots = [lay_out(replica["template"], folder / pod, self.shared, self.store, namespace)
                 for pod in pods]  # fmt: skip
        files = [pod_file(replica["template"], folder / pod, tools, pod) for pod in pods]
        relay = folder / "relay"
        relay.mkdir(parents=True, exist_ok=True)
        (folder / "operator").mkdir(exist_ok=True)
        cluster = HostCluster([*pods, f"{name[:40]}-operator"], route_out=False,
                              user_namespace=self.user_namespace, label=name[:20],
                              lend=[self.work, self.shared])  # fmt: skip
        try:
            cluster.open()
            self.store.update_job(namespace, name, condition="Created")
            helper = cluster.start(
                len(pods) + 1, folder / "operator", [sys.executable,
                str(IMAGE_BIN / "relay.py"), str(relay)], {"PATH": os.environ.get("PATH", "")},
                stdout=(folder / "relay.log").open("wb"), stderr=subprocess.STDOUT,
            )  # fmt: skip
            self._follow(job, cluster, pods, roots, files, relay, retries)
            self._end([helper], 1)
        finally:
            cluster.close()

    def _follow(self, job: dict[str, Any], cluster: HostCluster, pods: list[str],
                roots: list[Path], files: list[Path], relay: Path,
                retries: int) -> None:  # fmt: skip
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        for fault in range(retries + 1):
            self._put_pods(job, pods, "Running", fault)
            processes = self._start_pods(cluster, job, pods, roots, files)
            self.processes[name] = processes
            outcome = self._attempt(job, relay, processes, fault)
            if outcome == "stopped":
                return
            if outcome == "completed":  # the agents end once told to shut down
                deadline = time.monotonic() + 30
                while any(p.poll() is None for p in processes) and time.monotonic() < deadline:
                    time.sleep(0.2)
            self._end(processes, 1)
            if outcome == "completed":
                self._put_pods(job, pods, "Succeeded", fault)
                self.store.update_job(namespace, name, condition="Completed",
                                      message="every pod's agent completed")  # fmt: skip
                return
            if fault < retries:
                self.store.update_job(namespace, name, condition="Restarting",
                                      restartCount=fault + 1, message="a pod failed")  # fmt: skip
        self._put_pods(job, pods, "Failed", retries)
        self.store.update_job(namespace, name, condition="Failed",
                              message=f"a pod failed after {retries} restart(s)")  # fmt: skip
