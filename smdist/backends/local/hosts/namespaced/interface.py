"""A host's side of its network, made from inside the host by ioctl(2): its address on
``eth0``, both links up and the default route, without an ``ip`` process (and ``nsenter``) per
host. Standard library only: ``enter.py`` imports it before any of the job's code runs.
"""

from __future__ import annotations

import ctypes
import fcntl
import socket
import struct

SIOCADDRT, SIOCSIFADDR, SIOCSIFNETMASK = 0x890B, 0x8916, 0x891C
SIOCGIFFLAGS, SIOCSIFFLAGS = 0x8913, 0x8914
IFF_UP = 0x1
RTF_UP, RTF_GATEWAY = 0x1, 0x2


class _SockAddr(ctypes.Structure):
    _fields_ = [("family", ctypes.c_ushort), ("data", ctypes.c_char * 14)]


class _RouteEntry(ctypes.Structure):
    """``struct rtentry`` of <net/route.h>; ctypes lays it out as the C compiler does."""

    _fields_ = [
        ("pad1", ctypes.c_ulong),
        ("dst", _SockAddr),
        ("gateway", _SockAddr),
        ("genmask", _SockAddr),
        ("flags", ctypes.c_ushort),
        ("pad2", ctypes.c_short),
        ("pad3", ctypes.c_ulong),
        ("pad4", ctypes.c_void_p),
        ("metric", ctypes.c_short),
        ("dev", ctypes.c_char_p),
        ("mtu", ctypes.c_ulong),
        ("window", ctypes.c_ulong),
        ("irtt", ctypes.c_ushort),
    ]


def _inet(address: str) -> bytes:
    """``struct sockaddr_in`` for ``address`` (port 0)."""
    return struct.pack("HH4s8x", socket.AF_INET, 0, socket.inet_aton(address))


def _request(name: str, data: bytes = b"") -> bytes:
    """``struct ifreq``: the interface's name, then its union."""
    return struct.pack("16s24s", name.encode(), data)


def _netmask(prefix: int) -> str:
    return socket.inet_ntoa(struct.pack("!I", (0xFFFFFFFF << (32 - prefix)) & 0xFFFFFFFF))


def link_up(control: socket.socket, name: str) -> None:
    flags = struct.unpack_from("16sH", fcntl.ioctl(control, SIOCGIFFLAGS, _request(name)))[1]
    fcntl.ioctl(control, SIOCSIFFLAGS, _request(name, struct.pack("H", flags | IFF_UP)))


def configure(name: str, address: str, prefix: int, gateway: str | None) -> None:
    """``name`` gets ``address``/``prefix`` and is up, ``lo`` too; ``gateway``: the default
    route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        fcntl.ioctl(control, SIOCSIFADDR, _request(name, _inet(address)))
        fcntl.ioctl(control, SIOCSIFNETMASK, _request(name, _inet(_netmask(prefix))))
        link_up(control, name)
        link_up(control, "lo")
        if gateway is not None:
            route = _RouteEntry(flags=RTF_UP | RTF_GATEWAY)
            route.dst = _SockAddr.from_buffer_copy(_inet("0.0.0.0"))
            route.genmask = _SockAddr.from_buffer_copy(_inet("0.0.0.0"))
            route.gateway = _SockAddr.from_buffer_copy(_inet(gateway))
            fcntl.ioctl(control, SIOCADDRT, bytes(route))


__all__ = ["configure"]
