"""The application services: what ``RoundAudit`` (``domain.application``) is made of.

* :mod:`domain.services.base`: configuration, the store's recorder with the commit hook (the
  Merkle leaf of every transaction), loading and saving with retries, the vault of sealed RNG
  seeds, the API keys; the id and number checks every command makes.
* :mod:`domain.services.in_play`: which rounds draw from a shoe and are not finished, and what
  they hide (``domain.disclosure``).
* :mod:`domain.services.players`: wallets (the cashier) and the deluxe table's seats.
* :mod:`domain.services.shoes`: shoes: open (RNG, live, test), burn, cut card, retire (not
  while a round in play draws from it).
* :mod:`domain.services.rounds`: the classic round's commands, each one transaction of round,
  shoe, table and wallets; a boundless round's id sends them to the boundless service
  (``domain.boundless.service``).

Each command loads what it needs, has the aggregate decide (the game core decides a round's),
and saves everything it changed in one transaction.
"""
