"""How fast smdist answers "what will this job run?" compared with importing the SDK.

Prints, in one run:
- the median wall time of a fresh Python process doing ``import smdist`` + ``plan`` of the SMP
  v1 example, against fresh processes importing each SDK line's training API: SDK v3's
  ``from sagemaker.train import ModelTrainer`` and SDK v2's ``import sagemaker.pytorch``, each
  in the environment that has it (this interpreter's, ``.venv``, ``.venv-v2``; or
  ``SMDIST_BENCH_V2_PYTHON`` / ``SMDIST_BENCH_V3_PYTHON``), and the ratios (target <= 0.1).
  smdist is timed in each of those environments too, and each ratio compares the two in the
  same one: an import's cost grows with what the environment holds (pydantic's plugin lookup
  reads every installed distribution's metadata), so smdist timed in a 230-package
  environment against the SDK in a 100-package one would measure the environments;
- in each environment, the floor: a fresh process that imports pydantic and PyYAML and
  validates one model, below which smdist's plan path cannot go, and smdist's own share above it;
- the median in-process time to plan a 256-host job (target < 50 ms).

Run: python bench/bench_plan.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMDIST_CODE = "import smdist; smdist.plan(smdist.load('examples/smp_v1.yaml'))"
# What smdist's plan path needs before any of its own code runs: pydantic, PyYAML, and the first
# pydantic model (whose plugin lookup imports importlib.metadata and reads every installed
# distribution). Both SDK lines pay it too; it bounds how low the ratio can go.
FLOOR_CODE = (
    "import yaml\nfrom pydantic import BaseModel, Field\n"
    "class Floor(BaseModel):\n    a: int = Field(1)\nFloor.model_validate({'a': 2})"
)
SDK_CODE = {  # the SDK's training API, by major version
    "3": "from sagemaker.train import ModelTrainer",
    "2": "import sagemaker.pytorch",
}


def child_environment() -> dict[str, str]:
    # Both sides must load cached bytecode, as an installed package does (pip compiles it at
    # install time). With PYTHONDONTWRITEBYTECODE set, smdist would be compiled from source in
    # every child while the SDK's site-packages bytecode is already on disk.
    env = {**os.environ, "SAGEMAKER_SUPPRESS_V2_WARNING": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_once(code: str, python: str = sys.executable) -> float:
    start = time.perf_counter()
    subprocess.run(
        [python, "-c", code],
        cwd=ROOT,
        env=child_environment(),
        check=True,
        capture_output=True,
        timeout=300,
    )
    return time.perf_counter() - start


def fresh_process_medians(codes: dict[str, tuple[str, str]], repeats: int) -> dict[str, float]:
    """Median wall time per (snippet, interpreter); runs alternate so machine load hits every
    side alike. Names that share a (snippet, interpreter) share one series: the same command
    timed twice in one run would show this machine's noise as a difference."""
    runs = set(codes.values())
    for code, python in runs:
        run_once(code, python)  # warm-up: writes bytecode, fills the page cache
    times: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
    for _ in range(repeats):
        for code, python in times:
            times[(code, python)].append(run_once(code, python))
    return {name: statistics.median(times[run]) for name, run in codes.items()}


def sdk_interpreter(major: str) -> str | None:
    """A Python that has SDK ``major`` installed: this one, the variable's, or the venv's."""
    candidates = [
        os.environ.get(f"SMDIST_BENCH_V{major}_PYTHON"),
        sys.executable,
        str(ROOT / (".venv" if major == "3" else ".venv-v2") / "bin" / "python"),
    ]
    probe = "from importlib import metadata; print(metadata.version('sagemaker'))"
    for python in filter(None, candidates):
        if not Path(python).exists():
            continue
        found = subprocess.run([python, "-c", probe], capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.strip().startswith(f"{major}."):
            return python
    return None


def plan_256_hosts_seconds(repeats: int) -> float:
    sys.path.insert(0, str(ROOT))
    import smdist
    from smdist import Cluster, JobSpec
    from smdist.strategies import SDMP

    spec = JobSpec(
        name="big",
        strategy=SDMP(partitions=2, microbatches=4, processes_per_host=8, ddp=True),
        cluster=Cluster(instance_type="ml.p4d.24xlarge", instance_count=256),
    )
    smdist.plan(spec)  # warm the catalogue cache, as any real caller would have
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        plan = smdist.plan(spec)
        times.append(time.perf_counter() - start)
    assert plan.world_size == 2048
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()

    codes = {"bare": ("pass", sys.executable), "smdist": (SMDIST_CODE, sys.executable)}
    labels = {"3": "import v3's ModelTrainer", "2": "import sagemaker.pytorch"}
    interpreters = {major: sdk_interpreter(major) for major in ("3", "2")}
    for major, python in interpreters.items():
        if python is not None:
            codes[f"sdk{major}"] = (SDK_CODE[major], python)
            codes[f"smdist{major}"] = (SMDIST_CODE, python)
            codes[f"floor{major}"] = (FLOOR_CODE, python)
    medians = fresh_process_medians(codes, args.repeats)
    print(f"fresh process, bare interpreter         : {medians['bare'] * 1000:8.1f} ms")
    print(f"fresh process, import smdist + plan(SMP) : {medians['smdist'] * 1000:8.1f} ms")
    for major, python in interpreters.items():
        if python is None:
            print(f"SDK v{major} not found (SMDIST_BENCH_V{major}_PYTHON): comparison skipped")
            continue
        ours, sdk = medians[f"smdist{major}"], medians[f"sdk{major}"]
        floor = medians[f"floor{major}"]
        print(f"in SDK v{major}'s environment ({Path(python).parent.parent.name}):")
        print(f"  fresh process, import smdist + plan    : {ours * 1000:8.1f} ms")
        print(f"  fresh process, pydantic + PyYAML floor : {floor * 1000:8.1f} ms")
        print(f"  fresh process, {labels[major]:<24}: {sdk * 1000:8.1f} ms")
        print(f"  ratio smdist / SDK v{major}                : {ours / sdk:8.3f}  (target <= 0.1)")
        print(f"  ratio floor / SDK v{major}                 : {floor / sdk:8.3f}")
        print(f"  smdist's own share / SDK v{major}          : {(ours - floor) / sdk:8.3f}")
    big = plan_256_hosts_seconds(args.repeats * 4)
    print(f"plan of a 256-host x 8-process SMP job   : {big * 1000:8.1f} ms  (target < 50 ms)")


if __name__ == "__main__":
    main()
