"""A pod of the stand-in cluster laid out on this machine: its volumes as folders, its
``/opt/ml`` mounts as that folder tree, and what ``pod_start.py`` runs in it.

The emulated host binds the pod's ``opt_ml`` folder at ``/opt/ml`` (the local backend's hosts);
each volume mount under ``/opt/ml`` is a link there to its volume's folder (with its
``subPath``): an ``emptyDir`` the pod's own, a ``configMap`` its keys as files, a
``persistentVolumeClaim`` the stand-in's shared file system (one folder for every pod, as FSx
is). Mounts elsewhere (``/dev/shm``: the host has its own; the shared volume's own mount point)
are not reproduced.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

OPT_ML = "/opt/ml"
IMAGE_BIN = Path(__file__).parent / "image"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def image_bin(work: Path) -> Path:
    """A folder playing the image's tools: ``hyperpodrun`` (the agent's own main, on this
    machine's Python), first on every pod's PATH."""
    folder = work / "image-bin"
    folder.mkdir(parents=True, exist_ok=True)
    run = folder / "hyperpodrun"
    run.write_text(
        f"#!{sys.executable}\nimport runpy, sys\n"
        f"sys.argv[0] = 'hyperpodrun'\n"
        f"runpy.run_path({str(IMAGE_BIN / 'hyperpodrun_main.py')!r}, run_name='__main__')\n"
    )
    run.chmod(0o755)
    return folder


def _volume_folder(volume: dict[str, Any], pod_dir: Path, shared: Path, store: Any,
                   namespace: str) -> Path:  # fmt: skip
    if "persistentVolumeClaim" in volume:
        return shared
    folder = pod_dir / "volumes" / volume["name"]
    folder.mkdir(parents=True, exist_ok=True)
    if "configMap" in volume:
        config_map = store.get("configmap", namespace, volume["configMap"]["name"])
        if config_map is None:
            raise LookupError(f"ConfigMap {volume['configMap']['name']} not found")
        for key, value in (config_map.get("binaryData") or {}).items():
            (folder / key).write_bytes(base64.b64decode(value))
        for key, value in (config_map.get("data") or {}).items():
            (folder / key).write_text(value)
    return folder


def lay_out(template: dict[str, Any], pod_dir: Path, shared: Path, store: Any,
            namespace: str) -> Path:  # fmt: skip
    """The pod's ``/opt/ml`` folder, its volume mounts linked in."""
    spec = template["spec"]
    folders = {
        volume["name"]: _volume_folder(volume, pod_dir, shared, store, namespace)
        for volume in spec.get("volumes") or []
    }
    root = pod_dir / "opt_ml"
    root.mkdir(parents=True, exist_ok=True)
    for container in [*(spec.get("initContainers") or []), *spec["containers"]]:
        for mount in container.get("volumeMounts") or []:
            path = mount["mountPath"]
            if not path.startswith(OPT_ML + "/"):
                continue
            source = folders[mount["name"]] / mount.get("subPath", "")
            source.mkdir(parents=True, exist_ok=True)
            link = root / path[len(OPT_ML) + 1 :]
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.is_symlink():
                link.symlink_to(source)
    return root


def _container(container: dict[str, Any], tools: Path, pod: str) -> dict[str, Any]:
    env = {"HOME": "/root", "HOSTNAME": pod, "LANG": "C.UTF-8"}
    env.update({item["name"]: item["value"] for item in container.get("env") or []})
    env["PATH"] = ":".join([str(tools), str(Path(sys.executable).parent), SYSTEM_PATH])
    argv = list(container.get("command") or []) + list(container.get("args") or [])
    return {"argv": argv, "env": env, "cwd": container.get("workingDir", "/")}


def pod_file(template: dict[str, Any], pod_dir: Path, tools: Path, pod: str) -> Path:
    """``pod.json``: the init containers and the container as ``pod_start.py`` runs them."""
    spec = template["spec"]
    pod_spec = {
        "init": [_container(c, tools, pod) for c in spec.get("initContainers") or []],
        "main": _container(spec["containers"][0], tools, pod),
    }
    path = pod_dir / "pod.json"
    path.write_text(json.dumps(pod_spec))
    return path
