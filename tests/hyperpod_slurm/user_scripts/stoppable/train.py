"""A long run that a stop ends: on SIGTERM it says at which step and exits 143, as a training
script that checkpoints on SIGTERM does; with ``IGNORE_SIGTERM=1`` it ignores SIGTERM, so that
only Slurm's cancel (SIGKILL after its KillWait) ends it.

Standard library only: what smdist's stop does on Slurm is what it proves, not torch."""

import os
import signal
import sys
import time

step = 0


def stop(*_: object) -> None:
    if os.environ.get("IGNORE_SIGTERM") == "1":
        print("SIGTERM ignored", flush=True)
        return
    print(f"stopped by SIGTERM at step={step}", flush=True)
    sys.exit(143)


signal.signal(signal.SIGTERM, stop)
print("running", flush=True)
while step < 100000:
    step += 1
    time.sleep(0.5)
