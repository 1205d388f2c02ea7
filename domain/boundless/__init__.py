"""boundless at scale: one shared hand per round, one participation per player.

The rules of a boundless round are the game core's (``domain.game.shared``: the shared hand's
decider; ``domain.game.player``: a participation's; ``domain.game.sequence``: D9). This package
holds what records and drives them:

* :mod:`domain.boundless.shared`: the ``SharedHand`` aggregate (cards, phases, dealer; BDL-2,
  BDL-3, D10).
* :mod:`domain.boundless.participation`: the ``Participation`` aggregate, one per (round,
  player): bets, decisions, hands, settlement (BDL-1, BDL-AVAIL, side bets, AUTO-1, FUNDS-2).
* :mod:`domain.boundless.engine`: the round in memory and what each participation waits for.
* :mod:`domain.boundless.service`: persistence, the round index kept from the notification
  log (:mod:`domain.boundless.index`), batching, behind ``RoundAudit``'s public commands.
* :mod:`domain.boundless.wallets`: the players' wallets a round keeps, and how each is first
  read (brought forward from what this process already knew).

Verification by re-execution of a boundless round is :mod:`replays.boundless`.
"""
