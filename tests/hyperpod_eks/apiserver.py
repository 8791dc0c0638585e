"""A Kubernetes API stand-in on 127.0.0.1 that the real ``kubernetes`` client talks to: the paths
of a HyperPod EKS cluster a job uses, and a kubeconfig pointing at it.

Served: ``/version``; ConfigMaps (create, get, delete); HyperPodPyTorchJobs (create, get, list,
delete, ``watch=true`` on the list); pods (list by label, get, delete) and their logs
(``follow``). Every object received is validated first (``validation``: the HyperPod SDK's
models, Kubernetes' schema), and refused with a 422 Status as an API server refuses it. What
runs a job is an operator stand-in (``operator``): told of each job created and deleted, it
makes the pods and writes their logs and the job's conditions through ``Store``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.hyperpod_eks.validation import config_map_errors, job_errors

JOBS = "/apis/sagemaker.amazonaws.com/v1/namespaces/([^/]+)/hyperpodpytorchjobs"
ROUTES = [
    ("job", re.compile(f"^{JOBS}/([^/]+)$")),
    ("jobs", re.compile(f"^{JOBS}$")),
    ("log", re.compile("^/api/v1/namespaces/([^/]+)/pods/([^/]+)/log$")),
    ("pod", re.compile("^/api/v1/namespaces/([^/]+)/pods/([^/]+)$")),
    ("pods", re.compile("^/api/v1/namespaces/([^/]+)/pods$")),
    ("configmap", re.compile("^/api/v1/namespaces/([^/]+)/configmaps/([^/]+)$")),
    ("configmaps", re.compile("^/api/v1/namespaces/([^/]+)/configmaps$")),
]
KINDS = {"job": "HyperPodPyTorchJob", "pod": "Pod", "configmap": "ConfigMap"}


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Store:
    """The cluster's objects by (kind, namespace, name), pod logs, and a change counter."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.logs: dict[tuple[str, str], list[str]] = {}
        self.version = 0
        self.events: list[tuple[int, str, str, dict[str, Any]]] = []  # version, type, kind, obj
        self.refused: list[tuple[str, list[str]]] = []  # what validation turned away

    def put(self, kind: str, body: dict[str, Any], event: str = "MODIFIED") -> dict[str, Any]:
        with self.lock:
            self.version += 1
            meta = body.setdefault("metadata", {})
            meta["resourceVersion"] = str(self.version)
            meta.setdefault("creationTimestamp", now())
            meta.setdefault("uid", f"uid-{self.version}")
            self.objects[(kind, meta["namespace"], meta["name"])] = body
            self.events.append((self.version, event, kind, json.loads(json.dumps(body))))
            self.lock.notify_all()
            return body

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            return self.objects.get((kind, namespace, name))

    def remove(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            gone = self.objects.pop((kind, namespace, name), None)
            if gone is not None:
                self.version += 1
                self.events.append((self.version, "DELETED", kind, gone))
                self.lock.notify_all()
            return gone

    def listed(self, kind: str, namespace: str, selector: dict[str, str]) -> list[dict[str, Any]]:
        with self.lock:
            return [
                body
                for (k, ns, _), body in sorted(self.objects.items())
                if k == kind and ns == namespace
                and all(body["metadata"].get("labels", {}).get(a) == b for a, b in selector.items())
            ]  # fmt: skip

    def log(self, namespace: str, pod: str, line: str) -> None:
        with self.lock:
            self.logs.setdefault((namespace, pod), []).append(line)
            self.lock.notify_all()

    def update_job(self, namespace: str, name: str, **status: Any) -> None:
        """Merge ``status`` into the job's (``condition=TYPE`` appends a condition)."""
        with self.lock:
            job = self.get("job", namespace, name)
            if job is None:
                return
            current = job.setdefault("status", {})
            condition = status.pop("condition", None)
            if condition is not None:
                conditions = current.setdefault("conditions", [])
                for old in conditions:
                    old["status"] = "False"
                conditions.append(
                    {"type": condition, "status": "True", "lastTransitionTime": now(),
                     "message": status.pop("message", "")}
                )  # fmt: skip
            current.update(status)
            self.put("job", job)


class Handler(BaseHTTPRequestHandler):
    server: ApiServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, code: int, body: Any, content: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code: int, reason: str, message: str) -> None:
        self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "reason": reason, "message": message, "code": code})  # fmt: skip

    def _route(self) -> tuple[str, tuple[str, ...], dict[str, list[str]]]:
        url = urlparse(self.path)
        for name, pattern in ROUTES:
            found = pattern.match(url.path)
            if found:
                return name, found.groups(), parse_qs(url.query)
        return "", (), parse_qs(url.query)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if urlparse(self.path).path == "/version":
            self._send(200, {"major": "1", "minor": "33", "gitVersion": "v1.33.0-standin"})
            return
        route, groups, query = self._route()
        store = self.server.store
        if route in ("job", "pod", "configmap"):
            found = store.get(route, *groups)
            if found is None:
                self._status(404, "NotFound", f"{KINDS[route]} {groups[1]} not found")
            else:
                self._send(200, found)
        elif route in ("jobs", "pods"):
            kind = route[:-1]
            selector = dict(
                part.split("=", 1)
                for part in query.get("labelSelector", [""])[0].split(",")
                if part
            )
            if query.get("watch", ["false"])[0].lower() == "true":
                self._watch(kind, groups[0], query)
                return
            items = store.listed(kind, groups[0], selector)
            listing = "PodList" if kind == "pod" else "HyperPodPyTorchJobList"
            self._send(200, {"kind": listing, "apiVersion": "v1", "items": items,
                             "metadata": {"resourceVersion": str(store.version)}})  # fmt: skip
        elif route == "log":
            self._log(*groups, follow=query.get("follow", ["false"])[0].lower() == "true")
        else:
            self._status(404, "NotFound", f"no such path {self.path}")

    def _log(self, namespace: str, pod: str, follow: bool) -> None:
        store = self.server.store
        found = store.get("pod", namespace, pod)
        if found is None:
            self._status(404, "NotFound", f"pod {pod} not found")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Connection", "close")
        self.end_headers()
        sent = 0
        while True:
            with store.lock:
                lines = store.logs.get((namespace, pod), [])[sent:]
                current = store.get("pod", namespace, pod)
                phase = ((current or {}).get("status") or {}).get("phase")
                done = current is None or phase in ("Succeeded", "Failed")
                if not lines and follow and not done:
                    store.lock.wait(0.5)
                    continue
            for line in lines:
                self.wfile.write(line.encode() + b"\n")
            self.wfile.flush()
            sent += len(lines)
            if not follow or (done and not lines):
                break
        self.close_connection = True

    def _watch(self, kind: str, namespace: str, query: dict[str, list[str]]) -> None:
        store = self.server.store
        timeout = float(query.get("timeoutSeconds", ["30"])[0])
        since = int(query.get("resourceVersion", ["0"])[0] or 0)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with store.lock:
                fresh = [e for e in store.events if e[0] > since and e[2] == kind
                         and e[3]["metadata"]["namespace"] == namespace]  # fmt: skip
                if not fresh:
                    store.lock.wait(0.2)
                    continue
            for version, event, _, body in fresh:
                self.wfile.write(json.dumps({"type": event, "object": body}).encode() + b"\n")
                since = version
            self.wfile.flush()
        self.close_connection = True

    def do_POST(self) -> None:  # noqa: N802
        route, groups, _ = self._route()
        body = self._body()
        kind = {"jobs": "job", "configmaps": "configmap"}.get(route)
        if kind is None:
            self._status(405, "MethodNotAllowed", f"cannot create at {self.path}")
            return
        namespace = groups[0]
        body.setdefault("metadata", {}).setdefault("namespace", namespace)
        errors = job_errors(body) if kind == "job" else config_map_errors(body)
        if errors:
            self.server.store.refused.append((kind, errors))
            self._status(422, "Invalid", "; ".join(errors))
            return
        name = body["metadata"]["name"]
        if self.server.store.get(kind, namespace, name) is not None:
            self._status(409, "AlreadyExists", f"{KINDS[kind]} {name} already exists")
            return
        created = self.server.store.put(kind, body, "ADDED")
        self._send(201, created)
        if kind == "job" and self.server.operator is not None:
            self.server.operator.created(json.loads(json.dumps(created)))

    def do_DELETE(self) -> None:  # noqa: N802
        route, groups, query = self._route()
        body = self._body()
        grace = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds", [30])[0])
        if route not in ("job", "pod", "configmap"):
            self._status(405, "MethodNotAllowed", f"cannot delete at {self.path}")
            return
        gone = self.server.store.remove(route, *groups)
        if gone is None:
            self._status(404, "NotFound", f"{KINDS[route]} {groups[1]} not found")
            return
        self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})
        if route == "job" and self.server.operator is not None:
            self.server.operator.deleted(gone, int(grace))


class ApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, operator: Any = None) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.store, self.operator = Store(), operator
        if operator is not None:
            operator.store = self.store
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> ApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()
        self.server_close()

    def kubeconfig(self, path: Path, namespace: str = "training") -> Path:
        """A kubeconfig whose context ``standin`` is this server."""
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "standin",
            "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
            "users": [{"name": "standin", "user": {"token": "stand-in-token"}}],
            "contexts": [{"name": "standin", "context": {"cluster": "standin",
                          "user": "standin", "namespace": namespace}}],
        }  # fmt: skip
        path.write_text(json.dumps(config))
        return path
