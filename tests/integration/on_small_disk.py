"""Run a command with a small tmpfs at a folder, as a full disk is, then keep what it left.

Start it in a mount namespace of its own (``unshare --mount --propagation private``), so the
tmpfs is this command's alone and goes with it; what the command left on it is copied to a
folder outside first, for the test to read:

    python on_small_disk.py SIZE FOLDER KEEP -- COMMAND...

Every value is an argument, never a shell line. Exits with the command's exit status (128 + N
when a signal N ended it); SIGTERM and SIGINT are passed on to it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys


def main(argv: list[str]) -> int:
    size, folder, keep, separator, *command = argv
    if separator != "--" or not command:
        raise SystemExit(__doc__)
    os.makedirs(folder, exist_ok=True)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", folder]
    subprocess.run(mount, check=True)
    child = subprocess.Popen(command)
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda received, _: child.send_signal(received))
    code = child.wait()
    shutil.copytree(folder, keep, symlinks=True)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
