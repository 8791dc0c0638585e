"""A pod's start inside its emulated host: its init containers in order, then its container's
command in place of this process (``exec``: the command is the pod's main process, as a
container's is, and gets the SIGTERM that stops the pod).

Usage: ``python pod_start.py <pod.json>``: ``{"init": [...], "main": {...}}``, each container as
``{"argv": [...], "env": {...}, "cwd": "..."}``. Standard library only.
"""

import json
import os
import subprocess
import sys


def main() -> int:
    with open(sys.argv[1]) as handle:
        pod = json.load(handle)
    for container in pod["init"]:
        code = subprocess.call(container["argv"], env=container["env"], cwd=container["cwd"])
        if code != 0:
            print(f"init container {container['argv'][0]} exited {code}", flush=True)
            return code
    main_container = pod["main"]
    os.chdir(main_container["cwd"])
    os.execvpe(main_container["argv"][0], main_container["argv"], main_container["env"])
    return 127


if __name__ == "__main__":
    sys.exit(main())
