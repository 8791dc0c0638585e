"""The TensorFlow entry points on an image whose TensorFlow (>= 2.16) ships Keras 3 and no
tf-keras, as the 2.16+ training images do: the entry point installs the matching tf-keras
without dependencies into the user's cache, once per host however many processes start, then
trains on it; where pip cannot reach a package index it fails with the fixes, leaving nothing.

This Python has tf-keras installed; each run hides that copy (a ``sitecustomize`` that keeps
the path finder from finding ``tf_keras`` in site-packages) and gives pip a local index: a
wheel of the same tf-keras (``PIP_NO_INDEX`` and ``PIP_FIND_LINKS``, pip's own settings, as
a job would set ``PIP_INDEX_URL`` for a mirror).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from multiprocess_runs import (
    ENTRY_POINTS,
    PYTHON,
    clean_environ,
    describe,
    sagemaker_host,
    start,
    wait_all,
)

from smdist.backends.local.hosts.shared.ports import free_ports

pytestmark = [pytest.mark.integration, pytest.mark.tf]

REPO = Path(__file__).resolve().parents[2]
HOSTS = ["algo-1", "algo-2"]
TIMEOUT = 300
INSTALLING = "installing tf-keras~="

HIDE_INSTALLED_TF_KERAS = """
import importlib.machinery, os, sys, sysconfig

_HIDDEN = {os.path.realpath(sysconfig.get_paths()["purelib"])}


class _PathFinderWithoutTheImagesTfKeras(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname == "tf_keras" and path is None:
            path = [p for p in sys.path if os.path.realpath(p or ".") not in _HIDDEN]
        return super().find_spec(fullname, path, target)


sys.meta_path[:] = [
    _PathFinderWithoutTheImagesTfKeras if finder is importlib.machinery.PathFinder else finder
    for finder in sys.meta_path
]
"""


def tf_keras_wheel(directory: Path) -> Path:
    """A wheel of the tf-keras installed here (pip installs it as it would PyPI's)."""
    dist = importlib.metadata.distribution("tf_keras")
    info = f"tf_keras-{dist.version}.dist-info"
    files = [
        f
        for f in dist.files or []
        if str(f).startswith("tf_keras/") and "__pycache__" not in str(f)
    ]
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"tf_keras-{dist.version}-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        contents = {str(f): f.locate().read_bytes() for f in files}
        for name in ("METADATA", "WHEEL"):
            contents[f"{info}/{name}"] = dist.read_text(name).encode()
        for name, data in contents.items():
            archive.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            records.append(f"{name},sha256={digest.decode()},{len(data)}")
        archive.writestr(f"{info}/RECORD", "\n".join([*records, f"{info}/RECORD,,"]) + "\n")
    return wheel


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("wheels")
    tf_keras_wheel(directory)
    return directory


def image_without_tf_keras(tmp_path: Path, links: Path) -> dict[str, str]:
    """The settings of a process on a Keras-3-only image with a local package index."""
    hider = tmp_path / "image"
    hider.mkdir(exist_ok=True)
    (hider / "sitecustomize.py").write_text(HIDE_INSTALLED_TF_KERAS)
    return {
        "PYTHONPATH": f"{hider}:{REPO}",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(links),
    }


def keras_in_use(environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    probe = (
        "from smdist.runtime import tf_training\n"
        "tf = tf_training.import_tensorflow()\n"
        "import tf_keras\n"
        "print(tf.keras.__name__, tf_keras.__file__)\n"
    )
    return subprocess.run(
        [PYTHON, "-c", probe], env=clean_environ(environ), capture_output=True, text=True,
        timeout=TIMEOUT,
    )  # fmt: skip


def test_the_hidden_tf_keras_is_hidden(tmp_path, wheels):
    """The stand-in image holds: without an install, tf.keras would be Keras 3."""
    environ = image_without_tf_keras(tmp_path, wheels)
    hidden = "import importlib.util; print(importlib.util.find_spec('tf_keras'))"
    done = subprocess.run(
        [PYTHON, "-c", hidden], env=clean_environ(environ), capture_output=True, text=True
    )
    assert done.stdout.strip() == "None", done.stderr


def test_two_hosts_install_tf_keras_once_then_train_and_the_next_run_reuses_it(tmp_path, wheels):
    image = image_without_tf_keras(tmp_path, wheels)
    ports = free_ports(len(HOSTS))
    runs = []
    for index, host in enumerate(HOSTS):
        environ = {**sagemaker_host(tmp_path / host / "opt" / "ml", HOSTS, host), **image}
        environ["TF_CONFIG"] = json.dumps(
            {
                "cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
                "task": {"type": "worker", "index": index},
            }
        )
        command = [
            PYTHON, str(ENTRY_POINTS / "tensorflow_mwms.py"), "--samples", "256",
            "--batch_size", "16", "--epochs", "1", "--model_dir", "s3://bucket/job/model",
        ]  # fmt: skip
        runs.append(start(command, tmp_path / f"{host}.log", clean_environ(environ)))
    assert wait_all(runs, TIMEOUT) == [0, 0], describe(runs)

    # Both processes share one cache (as a host's processes do): one installs, one waits.
    said = [line for run in runs for line in run.output.splitlines() if INSTALLING in line]
    assert len(said) == 1, describe(runs)
    assert "TensorFlow 2." in said[0] and "ships Keras 3" in said[0]
    folders = sorted((tmp_path / "cache" / "smdist" / "tf-keras").iterdir())
    names = [folder.name for folder in folders]
    version = importlib.metadata.version("tf_keras")
    minor = ".".join(version.split(".")[:2])
    assert names == [f".{minor}.0.lock", f"{minor}.0"], names  # no half-installed folder
    assert (tmp_path / "algo-1" / "opt" / "ml" / "model" / "1" / "saved_model.pb").is_file()

    # The next run finds it: no pip (its index is gone), tf.keras is the cached tf-keras.
    again = keras_in_use({**image, "PIP_FIND_LINKS": str(tmp_path / "no-wheels")})
    assert again.returncode == 0, again.stderr
    assert INSTALLING not in again.stderr
    name, location = again.stdout.split()
    assert name.startswith("tf_keras")
    assert Path(location).is_relative_to(folders[1])


def test_without_a_package_index_the_entry_point_fails_naming_the_fixes(tmp_path):
    image = image_without_tf_keras(tmp_path, tmp_path / "no-wheels")
    done = keras_in_use(image)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: pip could not install tf-keras~=2."), done.stderr
    for fix in ("PIP_INDEX_URL", "network isolation", "code.image_uri", "TensorFlow <= 2.15"):
        assert fix in last
    cache = tmp_path / "cache" / "smdist" / "tf-keras"
    assert [p.name for p in cache.iterdir()] == [p.name for p in cache.glob(".*.lock")]
