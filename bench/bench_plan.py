"""How fast smdist answers "what will this job run?" compared with importing the SDK.

Prints, in one run:
- the median wall time of a fresh Python process doing ``import smdist`` + ``plan`` of the SMP
  v1 example, against a fresh process importing the installed SDK's training API (SDK v3:
  ``from sagemaker.train import ModelTrainer``, in ``.venv``; SDK v2: ``import
  sagemaker.pytorch``, in ``.venv-v2``), and their ratio (target <= 0.1);
- the median in-process time to plan a 256-host job (target < 50 ms).

Run: python bench/bench_plan.py [--repeats N]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMDIST_CODE = "import smdist; smdist.plan(smdist.load('examples/smp_v1.yaml'))"
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


def run_once(code: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=child_environment(),
        check=True,
        capture_output=True,
        timeout=300,
    )
    return time.perf_counter() - start


def fresh_process_medians(codes: dict[str, str], repeats: int) -> dict[str, float]:
    """Median wall time per snippet; runs alternate so machine load hits every side alike."""
    for code in codes.values():
        run_once(code)  # warm-up: writes bytecode, fills the page cache
    times: dict[str, list[float]] = {name: [] for name in codes}
    for _ in range(repeats):
        for name, code in codes.items():
            times[name].append(run_once(code))
    return {name: statistics.median(values) for name, values in times.items()}


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

    codes = {"bare": "pass", "smdist": SMDIST_CODE}
    have_sdk = importlib.util.find_spec("sagemaker") is not None
    if have_sdk:
        from importlib import metadata

        major = metadata.version("sagemaker").split(".")[0]
        codes["sdk"] = SDK_CODE.get(major, SDK_CODE["3"])
    medians = fresh_process_medians(codes, args.repeats)
    ours = medians["smdist"]
    print(f"fresh process, bare interpreter         : {medians['bare'] * 1000:8.1f} ms")
    print(f"fresh process, import smdist + plan(SMP) : {ours * 1000:8.1f} ms")
    if have_sdk:
        sdk = medians["sdk"]
        label = "import sagemaker.pytorch" if major == "2" else "import v3's ModelTrainer"
        print(f"fresh process, {label:<26}: {sdk * 1000:8.1f} ms")
        print(f"ratio smdist / sagemaker                 : {ours / sdk:8.3f}  (target <= 0.1)")
    else:
        print("sagemaker not installed (pip install 'smdist[sagemaker]'): SDK comparison skipped")
    big = plan_256_hosts_seconds(args.repeats * 4)
    print(f"plan of a 256-host x 8-process SMP job   : {big * 1000:8.1f} ms  (target < 50 ms)")


if __name__ == "__main__":
    main()
