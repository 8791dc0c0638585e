"""Packing a job's code: how much of it is the secret scan, on the first pack and on a re-pack.

Builds a ~50 MB source_dir in a temporary directory (about 2,000 small Python files in 40
packages, three 10 MB binary files, and a few credential files that must be left out), then
times, with a fresh verdict cache:

- the manifest (walk + ignore rules + secret names + content scan): cold, then cached, then with
  the cache turned off;
- ``content_digest`` of the bundle (what a SageMaker re-submit computes to learn whether the
  code is already uploaded) and ``pack`` (bundle + deterministic tar.gz), first and again.

Files written less than ``secret_scan._RACY_SECONDS`` ago are never cached (their mtime could
still move within one timestamp tick), so the script waits that long after building the tree.
Prints figures only; nothing is asserted.

    python bench/bench_pack.py [--megabytes 50] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

WORDS = "def class return import self value data model train loss for in if else".split()


def build_tree(root: Path, megabytes: int) -> int:
    rng = random.Random(0)
    binary = min(30, megabytes * 3 // 5)
    text_target = (megabytes - binary) * 1_000_000
    written = 0
    index = 0
    while written < text_target:
        lines: list[str] = []
        size = rng.randint(2_000, 18_000)
        while sum(map(len, lines)) < size:
            words = " ".join(rng.choice(WORDS) for _ in range(8))
            lines.append(f"    {words} = {rng.random()!r}\n")
        path = root / f"pkg{index % 40}" / f"mod{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(lines))
        written += path.stat().st_size
        index += 1
    for i in range(3):
        blob = root / f"weights{i}.bin"
        blob.write_bytes(os.urandom(binary * 1_000_000 // 3))
        written += blob.stat().st_size
    (root / "train.py").write_text("print('train')\n")
    (root / ".netrc").write_text("machine example.com login u password p\n")
    (root / ".aws").mkdir()
    (root / ".aws/credentials").write_text("[default]\n")
    (root / "settings.txt").symlink_to(".netrc")
    return written


def timed(function, repeats: int = 1) -> tuple[float, object]:
    times = []
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def job_plan(source_dir: Path):
    from smdist.planning.plan import plan
    from smdist.spec.job import JobSpec

    return plan(
        JobSpec.from_dict(
            {
                "name": "bench-pack",
                "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun"},
                "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
                "code": {
                    "source_dir": str(source_dir),
                    "entry_point": "train.py",
                    "framework_version": "2.3.0",
                    "py_version": "py311",
                    "image_uri": "111122223333.dkr.ecr.us-west-2.amazonaws.com/train:1",
                },
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="smdist-bench-pack-") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")  # a fresh verdict cache
        from smdist.checks import secrets as secret_scan
        from smdist.packaging import bundle as packaging
        from smdist.packaging.manifest import build

        source = Path(tmp) / "src"
        source.mkdir()
        size = build_tree(source, args.megabytes)
        built = time.time()
        files = sum(len(names) for _, _, names in os.walk(source))
        print(f"tree: {files} files, {size / 1e6:.1f} MB")
        time.sleep(max(0.0, secret_scan._RACY_SECONDS + 0.1 - (time.time() - built)))

        cold, found = timed(lambda: build(source))
        warm, _ = timed(lambda: build(source), args.repeats)
        uncached, _ = timed(lambda: build(source, use_cache=False), max(1, args.repeats // 2))
        print(f"left out: {len(found.left_out)} ({', '.join(found.secrets)})")
        print(f"manifest, cold cache (scans every byte): {cold:.3f} s")
        print(f"manifest, re-pack (cached verdicts):     {warm:.3f} s")
        print(f"manifest, cache off:                     {uncached:.3f} s")

        plan = job_plan(source)
        digest_time, _ = timed(
            lambda: packaging.content_digest(packaging.bundle(plan)), args.repeats
        )
        print(f"re-submit check (bundle + content_digest): {digest_time:.3f} s")
        out = Path(tmp) / "out"
        pack_time, package = timed(lambda: packaging.pack(plan, out), max(1, args.repeats // 2))
        print(f"pack (bundle + tar.gz), cached scan:       {pack_time:.3f} s")
        print(f"tarball: {package.size / 1e6:.1f} MB, {len(package.files)} files")
        print(
            f"scan / pack: cold {cold / (pack_time - warm + cold):.0%} of a first pack,"
            f" cached {warm / pack_time:.0%} of a re-pack,"
            f" {warm / digest_time:.0%} of a re-submit check"
        )


if __name__ == "__main__":
    main()
