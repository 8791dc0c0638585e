"""tf-keras for TensorFlow >= 2.16 images that ship Keras 3 alone (the 2.16+ training images).

The TensorFlow entry points need Keras 2 (see ``tf_training``). TensorFlow's Keras 2 is the
``tf-keras`` package, which declares a dependency on the ``tensorflow`` distribution: on a CPU
image, whose TensorFlow is ``tensorflow-cpu``, a plain ``pip install tf-keras`` (a
requirements.txt) downloads all of ``tensorflow`` again. So before TensorFlow is imported
(it wires ``tf.keras`` to tf-keras at import, when it can find it) the entry point installs
the tf-keras of the installed TensorFlow's minor version without dependencies, into a
per-user cache folder that it puts on ``sys.path``; the image's packages are untouched.

pip's own settings apply (``PIP_INDEX_URL`` for a mirror). Every process of a host may start
at once: a file lock lets one install while the others wait, and the folder appears complete
or not at all (installed beside it, then renamed). Standard library only: shipped with jobs.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

FIRST_KERAS_3_MINOR = 16  # TensorFlow 2.16 made Keras 3 its tf.keras
# The names TensorFlow's builds are published under (pip normalizes - and _).
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tf-nightly")
PIP_TIMEOUT_SECONDS = 600


def tensorflow_version() -> str | None:
    """The installed TensorFlow's version, read without importing it; None when absent."""
    for name in TENSORFLOW_DISTRIBUTIONS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def tf_keras_requirement(version: str) -> str | None:
    """``tf-keras~=2.21.0`` for TensorFlow 2.21.x; None where TensorFlow carries Keras 2."""
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return None
    if (major, minor) < (2, FIRST_KERAS_3_MINOR):
        return None
    return f"tf-keras~={major}.{minor}.0"


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    """This user's cache folder for smdist's runtime (XDG's, else ~/.cache)."""
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "smdist" / "tf-keras"


def ensure_tf_keras(environ: Mapping[str, str] = os.environ, say=None) -> Path | None:
    """Make ``tf_keras`` importable before TensorFlow is; returns the folder added to sys.path,
    None when nothing was needed. Raises RuntimeError naming the fixes when pip cannot."""
    if importlib.util.find_spec("tf_keras") is not None:
        return None
    version = tensorflow_version()
    requirement = tf_keras_requirement(version) if version else None
    if requirement is None:
        return None
    import fcntl  # here: validate imports this module for its version rule, on any system

    folder = cache_root(environ) / requirement.rpartition("~=")[2]
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process of the host installs, the others wait
        if not (folder / "tf_keras").is_dir():
            if say is not None:
                say(f"TensorFlow {version} ships Keras 3: installing {requirement} (Keras 2)")
            _install(requirement, folder)
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    return folder


def _install(requirement: str, folder: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        done = subprocess.run(
            [
                sys.executable, "-m", "pip", "install", "--no-deps", "--no-input",
                "--disable-pip-version-check", "--quiet", "--target", str(staging), requirement,
            ],
            capture_output=True, text=True, timeout=PIP_TIMEOUT_SECONDS,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(_cannot(requirement, str(error))) from None
    if done.returncode != 0 or not (staging / "tf_keras").is_dir():
        shutil.rmtree(staging, ignore_errors=True)
        said = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise RuntimeError(_cannot(requirement, said))
    shutil.rmtree(folder, ignore_errors=True)  # a folder left without tf_keras in it
    os.replace(staging, folder)


def _cannot(requirement: str, said: str) -> str:
    return (
        f"pip could not install {requirement} (Keras 2, which smdist's TensorFlow entry points "
        f"need on TensorFlow >= 2.{FIRST_KERAS_3_MINOR}): {said}. Give the job access to PyPI "
        "or a mirror (PIP_INDEX_URL in its environment; network isolation and subnets "
        "without a NAT gateway cut it off), use an image that has tf-keras (code.image_uri), "
        "or TensorFlow <= 2.15"
    )
