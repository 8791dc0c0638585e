"""How long the strict job-file loader takes to accept a job, and to refuse hostile files.

Prints the median in-process CPU time of ``smdist.yaml_text.parse_untrusted`` against plain
libyaml (``yaml.load`` with ``CSafeLoader``) for every example job, then the time to refuse an
alias bomb (8 levels x 10), nesting 100,000 levels deep and a 10,000-item list; each target is
under a second (the alias bomb used to take 15 s before validation refused it).

Run: python bench/bench_loader.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from smdist.yaml_text import StrictYamlError, parse_untrusted

ROOT = Path(__file__).resolve().parent.parent


def cpu_median(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        try:
            action()
        except StrictYamlError:
            pass
        times.append(time.process_time() - start)
    return statistics.median(times)


def hostile() -> dict[str, str]:
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * 10) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    return {
        "alias bomb, 8 levels x 10": "\n".join(lines),
        "nesting 100,000 deep": "x: " + "[" * 100_000 + "]" * 100_000,
        "list of 10,001 items": "x: [" + ", ".join(["1"] * 10_001) + "]",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    repeats = parser.parse_args().repeats
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for example in sorted((ROOT / "examples").glob("*.yaml")):
        text = example.read_bytes()
        strict = cpu_median(lambda t=text: parse_untrusted(t), repeats)
        plain = cpu_median(lambda t=text: yaml.load(t, Loader=loader), repeats)  # noqa: S506
        print(f"accept {example.name:34}: {strict * 1e3:6.2f} ms (plain libyaml {plain * 1e3:.2f})")
    for name, text in hostile().items():
        refused = cpu_median(lambda t=text: parse_untrusted(t), repeats)
        print(f"refuse {name:34}: {refused * 1e3:6.2f} ms  (target < 1000 ms)")


if __name__ == "__main__":
    main()
