"""A rank script, started by torchrun (RANK, WORLD_SIZE), whose training data is on a shared
file system (FSx for Lustre, EFS), as a SageMaker job mounts one: every rank reads every file
of its ``train`` channel, fits its share of the rows, and records what it could do with its
channels. Plain Python: what its jobs prove is how smdist gives a job its channels and keeps
its TensorBoard logs, not a framework.

- ``train`` (SM_CHANNEL_TRAIN): ``*.txt`` files of rows ``x1 x2 x3 x4 y``; the script tries
  to write there too (a read-only channel refuses it);
- ``shared`` (SM_CHANNEL_SHARED): a read-write file system that every rank reaches; each rank
  writes its share's sums to ``rank-<rank>-<host>.txt`` there, waits until every rank's file
  is there, and fits the model (the mean of y) from all of them, so every rank ends with the
  same weights only if every host sees what the others wrote;
- ``--tensorboard literal``: every rank writes an events file to ``/opt/ml/output/tensorboard``
  itself; ``--tensorboard config``: to the folder SageMaker names as ``LocalPath`` in
  ``$SM_INPUT_CONFIG_DIR/tensorboardoutputconfig.json``.

Each rank writes ``report-<rank>.json`` to SM_OUTPUT_DATA_DIR and prints
``file-system-script rank=R weights=<digest>``.
"""

import argparse
import errno
import hashlib
import json
import os
import time
from pathlib import Path

PEERS_TIMEOUT = 120.0  # seconds the other ranks may take to start, on a loaded machine


def read_rows(channel: Path) -> list[list[float]]:
    rows = []
    for path in sorted(channel.rglob("*.txt")):
        for line in path.read_text().splitlines():
            if line.strip():
                rows.append([float(value) for value in line.split()])
    return rows


def try_to_write(channel: Path, rank: int) -> str:
    try:
        (channel / f"written-by-rank-{rank}.txt").write_text("should not be here")
    except OSError as error:
        return errno.errorcode.get(error.errno or 0, str(error))
    return "written"


def tensorboard_folder(how: str) -> Path | None:
    if how == "literal":
        return Path("/opt/ml/output/tensorboard")
    if how == "config":
        config = Path(os.environ["SM_INPUT_CONFIG_DIR"], "tensorboardoutputconfig.json")
        return Path(json.loads(config.read_text())["LocalPath"])
    return None


def every_ranks_sums(shared: Path, rank: int, host: str, world: int, mine: list) -> list:
    """Write this rank's sums to the shared channel (whole, by a rename), then wait for every
    rank's: the file system is the only thing the ranks share."""
    sums = [sum(row[4] for row in mine), len(mine)]
    partial = shared / f".rank-{rank}-{host}.partial"
    partial.write_text(json.dumps(sums))
    partial.rename(shared / f"rank-{rank}-{host}.txt")
    deadline = time.monotonic() + PEERS_TIMEOUT
    while len(written := sorted(shared.glob("rank-*.txt"))) < world:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(written)} of {world} ranks' sums in {shared}")
        time.sleep(0.1)
    return [json.loads(path.read_text()) for path in written]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tensorboard", choices=["none", "literal", "config"], default="none")
    args = parser.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    host = os.environ["SM_CURRENT_HOST"]
    channel = Path(os.environ["SM_CHANNEL_TRAIN"])
    rows = read_rows(channel)
    shared = Path(os.environ["SM_CHANNEL_SHARED"])
    sums = every_ranks_sums(shared, rank, host, world, rows[rank::world])
    mean = sum(total for total, _ in sums) / sum(count for _, count in sums)
    digest = hashlib.sha256(repr(mean).encode()).hexdigest()[:16]
    report = {
        "host": host,
        "channel": str(channel),
        "rows": len(rows),
        "mean_y": mean,
        "write_to_train": try_to_write(channel, rank),
        "input_data_config": json.loads(os.environ["SM_INPUT_DATA_CONFIG"]),
        "shared_files": sorted(path.name for path in shared.iterdir()),
    }
    board = tensorboard_folder(args.tensorboard)
    if board is not None:
        board.mkdir(parents=True, exist_ok=True)
        (board / f"events.out.tfevents.{rank}.{host}").write_text(digest)
    output = Path(os.environ["SM_OUTPUT_DATA_DIR"])
    output.mkdir(parents=True, exist_ok=True)
    (output / f"report-{rank}.json").write_text(json.dumps(report))
    print(f"file-system-script rank={rank} weights={digest}", flush=True)


if __name__ == "__main__":
    main()
