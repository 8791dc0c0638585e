"""Wait, within a bound, until every host of the job resolves before starting a rendezvous.

SageMaker starts the hosts of a job at slightly different times and their names (algo-1,
algo-2, ...) can take a moment to appear in DNS. A rendezvous started before that fails with an
unhelpful connection error or, worse, hangs. Waiting here, with a limit, turns that into either
a clean start or an error naming the hosts that never appeared.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Sequence

logger = logging.getLogger("smdist.runtime.hosts")

DEFAULT_TIMEOUT_S = 300.0
DEFAULT_INTERVAL_S = 1.0


class HostsUnresolvedError(TimeoutError):
    """Some hosts did not resolve before the time limit."""

    def __init__(self, hosts: Sequence[str], timeout_s: float) -> None:
        self.hosts = list(hosts)
        self.timeout_s = timeout_s
        super().__init__(
            f"These hosts did not resolve within {timeout_s:g} s: {', '.join(self.hosts)}. "
            "Check that every host of the job started and that the names are right; a slow "
            "network may need a longer SMDIST_HOSTS_TIMEOUT_S."
        )


def resolves(host: str) -> bool:
    try:
        socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    return True


def wait_for_hosts(
    hosts: Sequence[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = DEFAULT_INTERVAL_S,
) -> None:
    """Return once every host resolves; raise HostsUnresolvedError after ``timeout_s``.

    Each lookup is the system resolver's, whose own timeout adds to the bound at most once.
    """
    if timeout_s < 0 or interval_s <= 0:
        raise ValueError(
            f"timeout_s={timeout_s!r}, interval_s={interval_s!r}: expected timeout_s >= 0 and "
            "interval_s > 0."
        )
    deadline = time.monotonic() + timeout_s
    pending = list(dict.fromkeys(hosts))
    announced = False
    while True:
        pending = [host for host in pending if not resolves(host)]
        if not pending:
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise HostsUnresolvedError(pending, timeout_s)
        if not announced:
            logger.info("waiting up to %g s for hosts to resolve: %s", timeout_s, pending)
            announced = True
        time.sleep(min(interval_s, remaining))
