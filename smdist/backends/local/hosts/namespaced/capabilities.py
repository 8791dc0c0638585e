"""The capabilities a Docker container's processes get by default, for the user's processes in an
emulated host.

A SageMaker training container runs with Docker's default set: without ``CAP_SYS_ADMIN`` a
script cannot remount a read-only channel writable or bind-mount over ``/opt/ml``; without
``CAP_NET_ADMIN`` it cannot change its network. An emulated host's own setup needs more (it
mounts, configures ``eth0``), so once that is done ``drop_to_container_set`` leaves the process
Docker's set only, in its bounding set too: root's ``execve`` recomputes the permitted set from
the bounding and inheritable sets, so nothing it executes gets the others back. The inheritable
and ambient sets end empty, as current Docker leaves them.

As a script, ``python -S -E capabilities.py COMMAND...`` drops them, then execs the command:
how an ssh session enters a host (``nsenter`` starts it with every capability).

Standard library only: it runs before any of the job's code, without site-packages.
"""

from __future__ import annotations

import ctypes
import os
import sys

# Docker's default capability set (moby's ``DefaultCapabilities``): name -> number.
CONTAINER_SET = {
    "CHOWN": 0, "DAC_OVERRIDE": 1, "FOWNER": 3, "FSETID": 4, "KILL": 5, "SETGID": 6,
    "SETUID": 7, "SETPCAP": 8, "NET_BIND_SERVICE": 10, "NET_RAW": 13, "SYS_CHROOT": 18,
    "MKNOD": 27, "AUDIT_WRITE": 29, "SETFCAP": 31,
}  # fmt: skip
CONTAINER_MASK = sum(1 << number for number in CONTAINER_SET.values())
PR_CAPBSET_READ, PR_CAPBSET_DROP = 23, 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_VERSION_3 = 0x20080522  # 64-bit sets, as two 32-bit words
_MAX_PROBED = 63


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                        ctypes.c_ulong]  # fmt: skip


def _failed(what: str) -> OSError:
    error = ctypes.get_errno()
    return OSError(error, f"{what}: {os.strerror(error)}")


def _prctl(option: int, value: int, argument: int = 0) -> int:
    return _LIBC.prctl(option, value, argument, 0, 0)


def _last_capability() -> int:
    """The kernel's highest capability number."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as known:
            return int(known.read())
    except (OSError, ValueError):  # no /proc: ask the kernel, number by number
        number = 0
        while number < _MAX_PROBED and _prctl(PR_CAPBSET_READ, number + 1) >= 0:
            number += 1
        return number


def _drop_bounding_set() -> None:
    for number in range(_last_capability() + 1):
        if CONTAINER_MASK >> number & 1 or _prctl(PR_CAPBSET_READ, number) != 1:
            continue
        if _prctl(PR_CAPBSET_DROP, number) != 0:
            raise _failed(f"dropping capability {number} from the bounding set")


def _restrict_sets() -> None:
    """Effective and permitted: what they hold of Docker's set; inheritable: nothing."""
    header, data = _Header(_VERSION_3, 0), (_Data * 2)()
    if _LIBC.capget(ctypes.byref(header), data) != 0:
        raise _failed("capget")
    for word, part in enumerate(data):
        kept = CONTAINER_MASK >> (32 * word) & 0xFFFFFFFF
        part.effective &= kept
        part.permitted &= kept
        part.inheritable = 0
    if _LIBC.capset(ctypes.byref(header), data) != 0:
        raise _failed("capset")


def drop_to_container_set() -> None:
    """Leave this process (and whatever it executes) Docker's default capabilities only."""
    _drop_bounding_set()  # first: it takes CAP_SETPCAP, which the sets keep anyway
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)  # EINVAL before Linux 4.3: none to clear
    _restrict_sets()


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: capabilities.py COMMAND...", file=sys.stderr)
        return 2
    try:
        drop_to_container_set()
    except OSError as error:
        print(f"emulated host: {error}", file=sys.stderr)
        return 126
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        print(f"emulated host: cannot run {argv[0]!r}: {error}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
