"""The one place the bed picks a loopback port for a server it starts.

A port from ``bind(0)`` lies in the kernel's ephemeral range, the range it also draws the source
port of every outgoing connection from. Between picking a port and the server binding it (seconds,
while etcd and the apiserver start) a connection, say the apiserver's to etcd, may take it as its
source port; kube-scheduler then dies with "bind: address already in use" (seen in CI). So ports
are drawn at random below that range, where the kernel never picks one by itself, each is bound
once to see it is free, and none is handed out twice by one process.
"""
from __future__ import annotations

import random
import socket
from pathlib import Path

LOOPBACK = "127.0.0.1"
LOWEST = 10000  # well above the ports of well-known services
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_given: set[int] = set()


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default where it cannot be read)."""
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port nothing listens on, that no outgoing connection will take by itself."""
    high = ephemeral_low() - 1
    if high - LOWEST >= 1000:
        for _ in range(500):
            port = random.randint(LOWEST, high)
            if port not in _given and _is_free(port):
                _given.add(port)
                return port
    with socket.socket() as s:  # a host whose ephemeral range leaves no room below it
        s.bind((LOOPBACK, 0))
        port = s.getsockname()[1]
    _given.add(port)
    return port
