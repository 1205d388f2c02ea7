"""PostgreSQL with more than one server: multi-host URLs, the session each connection must
land on, and connections that do not outlive a failover.

This module owns what a store URL such as
``postgresql://user@h1:5432,h2:5432/db?target_session_attrs=read-write`` means beyond one
server (``domain.persistence`` parses the rest of the URL and calls :func:`split_hosts`):

* :func:`split_hosts` reads the host list of the authority (``h1:5432,h2,[::1]:5433``) into the
  comma-separated ``host`` and ``port`` values libpq takes; psycopg tries the hosts in order.
* ``target_session_attrs`` (libpq's: ``any``, ``read-write``, ``read-only``, ``primary``,
  ``standby``, ``prefer-standby``) makes each new connection skip a server that is not the
  kind asked for: with ``read-write`` the service connects to whichever host is the primary
  now, so after a failover (the standby promoted) new connections reach the new primary.
* :class:`ClusterPostgresFactory`, the ``eventsourcing`` factory such a URL selects: the
  library's own PostgreSQL factory, whose connection pool also passes
  ``target_session_attrs`` and checks every pooled connection before handing it out
  (``POSTGRES_PRE_PING``), so that a connection to a dead primary is dropped, not used.

A command whose connection died while it committed has an **unknown outcome** (committed or
not: the client cannot tell). The service answers it with an error; the client sends it again
with the same ``Idempotency-Key`` (docs/api.md), and gets the recorded answer if it had
committed, or a first execution if it had not: never two.
"""

from __future__ import annotations

from typing import Any, Final

from eventsourcing.postgres import PostgresFactory

__all__ = [
    "CLUSTER_FACTORY_TOPIC",
    "TARGET_SESSION_ATTRS",
    "TARGET_SESSION_ATTRS_ENV",
    "ClusterPostgresFactory",
    "split_hosts",
]

#: The values libpq accepts for ``target_session_attrs``.
TARGET_SESSION_ATTRS: Final = frozenset(
    {"any", "read-write", "read-only", "primary", "standby", "prefer-standby"}
)
TARGET_SESSION_ATTRS_ENV: Final = "POSTGRES_TARGET_SESSION_ATTRS"
CLUSTER_FACTORY_TOPIC: Final = "domain.pgcluster:ClusterPostgresFactory"


def split_hosts(hostinfo: str) -> tuple[list[str], list[str]]:
    """The hosts and ports of a multi-host authority (the part after ``user@``).

    >>> split_hosts("h1:5432,h2:5433")
    (['h1', 'h2'], ['5432', '5433'])
    >>> split_hosts("h1,[::1]:6000")
    (['h1', '::1'], ['5432', '6000'])
    >>> split_hosts("h1:x")
    Traceback (most recent call last):
    ...
    ValueError: host 'h1:x' has an invalid port
    """
    hosts: list[str] = []
    ports: list[str] = []
    for item in hostinfo.split(","):
        if not item:
            raise ValueError("an empty host in the host list")
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ""
            if rest and not rest.startswith(":"):
                raise ValueError(f"host {item!r} is malformed")
        else:
            host, _, port = item.partition(":")
        if not host:
            raise ValueError(f"host {item!r} names no host")
        if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(f"host {item!r} has an invalid port")
        hosts.append(host)
        ports.append(port or "5432")
    return hosts, ports


class ClusterPostgresFactory(PostgresFactory):
    """``eventsourcing``'s PostgreSQL factory, its pool passing ``target_session_attrs``."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        attrs = self.env.get(TARGET_SESSION_ATTRS_ENV)
        if attrs:
            # the pool connects lazily: every connection it opens, now or after a failover,
            # asks libpq for a server of that kind
            kwargs: dict[str, Any] = self.datastore.pool.kwargs  # type: ignore[assignment]
            kwargs["target_session_attrs"] = attrs
