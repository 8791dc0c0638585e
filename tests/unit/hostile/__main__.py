"""``python -m hostile`` (from tests/unit): every case once, failures grouped by what is missing.

The pytest run says which cases fail; this says how many of each kind, which is what a person
fixing the checks wants to read first. ``--cli`` also runs the CLI sample.
"""

from __future__ import annotations

import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from hostile import ACCEPTED, REFUSED
from hostile.build import EXAMPLES_DIR, make_workspace
from hostile.harness import Isolated, run_cli, warm_up
from hostile.verdict import accepted_faults, cli_refused_faults, refused_faults


def _job(data: bytes) -> tuple[Path, tempfile.TemporaryDirectory]:
    directory = tempfile.TemporaryDirectory(prefix="smdist-hostile-")
    root = Path(directory.name)
    make_workspace(root)
    job = root / "job.yaml"
    job.write_bytes(data)
    return job, directory


def main(argv: list[str]) -> int:
    warm_up(EXAMPLES_DIR / "pytorch_ddp.yaml")
    isolated = Isolated()
    failures: dict[str, list[str]] = defaultdict(list)
    for case in REFUSED:
        job, directory = _job(case.job_bytes())
        with directory:
            for fault in refused_faults(case, isolated.validate(job)):
                failures[f"refused/{case.group}"].append(f"{case.id}: {fault}")
            if "--cli" in argv:
                for fault in cli_refused_faults(
                    case, run_cli("validate", str(job), cwd=job.parent)
                ):
                    failures[f"cli/{case.group}"].append(f"{case.id}: {fault}")
    for accepted in ACCEPTED:
        job, directory = _job(accepted.data)
        with directory:
            for fault in accepted_faults(accepted, isolated.validate(job)):
                failures["accepted"].append(f"{accepted.id}: {fault}")
    isolated.close()
    total = len(REFUSED) + len(ACCEPTED)
    failed = sum(len(v) for v in failures.values())
    for group, lines in sorted(failures.items()):
        print(f"## {group} ({len(lines)})")
        for line in lines:
            print("  " + line.replace("\n", "\\n"))
    print(f"{total} cases, {failed} faults")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
