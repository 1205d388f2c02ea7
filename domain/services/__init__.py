"""The application services: what ``RoundAudit`` (``domain.application``) is made of.

* :mod:`domain.services.base`: configuration, loading and saving with retries, the vault of
  sealed RNG seeds; the id and number checks every command makes.
* :mod:`domain.services.players`: wallets (the cashier) and the deluxe table's seats.
* :mod:`domain.services.shoes`: shoes: open (RNG, live, test), burn, cut card, retire.
* :mod:`domain.services.rounds`: the classic round's commands, each one transaction of round,
  shoe, table and wallets; a boundless round's id sends them to the boundless service
  (``domain.boundless.service``).

Each command loads what it needs, has the aggregate decide (the game core decides a round's),
and saves everything it changed in one transaction.
"""
