"""boundless at scale: one shared hand per round, one participation per player.

* :mod:`domain.boundless.hands`: a player's hands as a pure function of the shared initial
  cards, the shared sequence and their own decision log (D9).
* :mod:`domain.boundless.shared`: the ``SharedHand`` aggregate (cards, phases, dealer; BDL-2,
  BDL-3, D10).
* :mod:`domain.boundless.participation`: the ``Participation`` aggregate, one per (round,
  player): bets, decisions, hands, settlement (BDL-1, BDL-AVAIL, side bets, AUTO-1, FUNDS-2).
* :mod:`domain.boundless.engine`: the round in memory and what each participation waits for.
* :mod:`domain.boundless.service`: persistence, the round index kept from the notification
  log, batching and wallets, behind ``RoundAudit``'s public commands.
* :mod:`domain.boundless.verify`: verification by re-execution.
"""
