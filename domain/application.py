"""RoundAudit: the only entry point into the model (an ``eventsourcing`` Application).

Its commands and queries are grouped by what they act on (``domain.services``): players
(wallets, the deluxe table's seats), shoes, and rounds (classic rounds as transactions of the
game core's decisions; boundless rounds by ``domain.boundless.service``). Every command loads
what it needs, lets the aggregates decide, and saves everything it changed in one transaction
(``app.save(round, shoe, table, *wallets)``): a crash can neither lose nor double a movement.

Commands return plain values; unknown ids raise the matching ``NotFound`` domain error; a
concurrent writer's conflict is retried on fresh state a few times before it is reported
(:class:`~domain.errors.ConcurrentUpdate`).

Commands take the ``actor`` to record (the web layer's ``domain.guarded`` passes the one its
API key stands for: ``domain.access.Principal.actor``); without one, each event records its
default (the player, the dealer, the system). API keys are kept by ``keys``
(``domain.keys.KeyRing``); RNG seeds are sealed at rest (``domain.vault``); every transaction
appends its Merkle leaf through the commit hook (``domain.services.base``, ``domain.commits``).
What the table has not shown yet is worked out by :meth:`RoundAudit.round_secrets` and
:meth:`RoundAudit.shoe_secrets` (``domain.services.in_play``, ``domain.disclosure``).
"""

from __future__ import annotations

from eventsourcing.domain import Aggregate

from domain.errors import ConcurrentUpdate
from domain.events import event_json
from domain.money import money_str
from domain.movements import WalletBook
from domain.services.rounds import Rounds


class RoundAudit(Rounds):
    """Commands and queries over rounds, shoes, wallets and tables."""


__all__ = ["Aggregate", "ConcurrentUpdate", "RoundAudit", "WalletBook", "event_json", "money_str"]
