"""A scripted operator for the API stand-in: it makes a job's pods as the HyperPod training
operator names and labels them (``<job>-pod-<i>``, ``HPJob=<job>``), writes lines to their logs
and moves the job through its conditions (Created, Running, then Completed or Failed), without
running anything. Deleting a job ends its pods after the grace period it was given."""

from __future__ import annotations

import threading
import time
from typing import Any


class ScriptedOperator:
    def __init__(self, lines: int = 3, seconds: float = 0.5, fail: bool = False) -> None:
        self.lines, self.seconds, self.fail = lines, seconds, fail
        self.store: Any = None
        self.graces: dict[str, int] = {}
        self.stopped: set[str] = set()

    def created(self, job: dict[str, Any]) -> None:
        threading.Thread(target=self._run, args=(job,), daemon=True).start()

    def deleted(self, job: dict[str, Any], grace: int) -> None:
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        self.graces[name] = grace
        self.stopped.add(name)
        for pod in self.store.listed("pod", namespace, {"HPJob": name}):
            self.store.log(namespace, pod["metadata"]["name"], "SIGTERM received")
            self.store.remove("pod", namespace, pod["metadata"]["name"])

    def _pods(self, job: dict[str, Any]) -> list[dict[str, Any]]:
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        replica = job["spec"]["replicaSpecs"][0]
        made = []
        for index in range(replica["replicas"]):
            pod = {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-{replica['name']}-{index}", "namespace": namespace,
                             "labels": {"HPJob": name}},
                "spec": {**replica["template"]["spec"], "nodeName": f"node-{index}"},
                "status": {"phase": "Running"},
            }  # fmt: skip
            made.append(self.store.put("pod", pod, "ADDED"))
        return made

    def _run(self, job: dict[str, Any]) -> None:
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        self.store.update_job(namespace, name, condition="Created")
        pods = self._pods(job)
        self.store.update_job(namespace, name, condition="Running")
        for step in range(self.lines):
            time.sleep(self.seconds)
            if name in self.stopped:
                return
            for pod in pods:
                self.store.log(namespace, pod["metadata"]["name"], f"step {step}")
        phase = "Failed" if self.fail else "Succeeded"
        for pod in pods:
            pod["status"]["phase"] = phase
            self.store.put("pod", pod)
        ending = "Failed" if self.fail else "Completed"
        self.store.update_job(namespace, name, condition=ending, message=f"job {ending.lower()}")
