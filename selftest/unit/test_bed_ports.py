"""The bed's servers get ports no outgoing connection takes by itself (testbed/ports.py): CI once
saw kube-scheduler die on "address already in use" after the apiserver's connection to etcd took
the port picked for it from the ephemeral range."""
from __future__ import annotations

import socket

from testbed import ports


def test_ports_lie_below_the_ephemeral_range_and_are_never_given_twice():
    low = ports.ephemeral_low()
    given = [ports.free_port() for _ in range(50)]
    assert len(set(given)) == len(given), f"a port was handed out twice: {given}"
    assert all(ports.LOWEST <= p < low for p in given), f"outside [{ports.LOWEST}, {low}): {given}"


def test_a_port_something_listens_on_is_passed_over(monkeypatch):
    with socket.socket() as taken:
        taken.bind((ports.LOOPBACK, 0))
        taken.listen()
        busy = taken.getsockname()[1]
        free = next(p for p in range(20001, 30000) if ports._is_free(p))
        draws = iter([busy, busy])
        monkeypatch.setattr(ports.random, "randint", lambda a, b: next(draws, free))
        monkeypatch.setattr(ports, "ephemeral_low", lambda: 65000)
        monkeypatch.setattr(ports, "_given", set())
        assert ports.free_port() == free


def test_a_range_that_leaves_no_room_below_it_falls_back_to_the_kernel(monkeypatch):
    def no_draw(a, b):
        raise AssertionError(f"drew a port from [{a}, {b}], which leaves no room")
    monkeypatch.setattr(ports, "ephemeral_low", lambda: 10500)
    monkeypatch.setattr(ports.random, "randint", no_draw)
    port = ports.free_port()
    with socket.socket() as s:
        s.bind((ports.LOOPBACK, port))  # free: nothing listens on it
