"""The host-name fix SageMaker's PyTorch images apply before training, for smdist's v3 driver.

Inside a SageMaker training container ``gethostname()`` answers the same name on every host,
so NCCL and MPI take a cluster for one machine. Two fixes exist, both ``LD_PRELOAD`` libraries:

- the PyTorch DLCs' entry script (``start_with_right_hostname.sh``) compiles ``/changehostname.c``
  with the host's ``current_host`` and preloads it for the whole job;
- the training toolkit's MPI runners export ``LD_PRELOAD`` of its ``gethostname`` extension
  (which reads ``resourceconfig.json``) to every rank.

SDK v3 starts the container with ``/bin/bash`` as its entry point, so the first never runs and
the toolkit is not started; smdist's driver does both itself, where the image has them.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

DLC_SOURCE = Path("/changehostname.c")
PLACEHOLDER = "PLACEHOLDER_HOSTNAME"
BUILD_DIR = Path("/tmp/smdist-hostname")
_HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")


def toolkit_shim() -> str | None:
    """The toolkit's ``gethostname`` extension, the MPI runners' ``LD_PRELOAD``, if installed."""
    spec = importlib.util.find_spec("gethostname")
    origin = spec.origin if spec else None
    return origin if origin and origin.endswith(".so") else None


def build_dlc_shim(
    current_host: str, source: Path | None = None, build_dir: Path | None = None
) -> str | None:
    """The DLC's ``libchangehostname.so`` for ``current_host``, compiled as its entry script
    does; None where the image has no source or no compiler (or the name is not a host name)."""
    source = DLC_SOURCE if source is None else source
    build_dir = BUILD_DIR if build_dir is None else build_dir
    gcc = shutil.which("gcc")
    if not source.is_file() or gcc is None or not _HOST_NAME.match(current_host):
        return None
    build_dir.mkdir(parents=True, exist_ok=True)
    c_file, obj, library = (build_dir / n for n in ("changehostname.c", "changehostname.o",
                                                    "libchangehostname.so"))  # fmt: skip
    # The entry script substitutes jq's output, a quoted JSON string: a C string literal here.
    c_file.write_text(source.read_text().replace(PLACEHOLDER, f'"{current_host}"'))
    steps = [
        [gcc, "-o", str(obj), "-c", "-fPIC", "-Wall", str(c_file)],
        [gcc, "-o", str(library), "-shared", "-export-dynamic", str(obj), "-ldl"],
    ]
    for step in steps:
        if subprocess.run(step, capture_output=True, check=False).returncode != 0:
            return None
    return str(library)


def preload(library: str, existing: str = "") -> str:
    """``LD_PRELOAD`` with ``library`` first, whatever was preloaded kept after it."""
    return ":".join(part for part in (library, existing) if part)
