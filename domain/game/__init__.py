"""The game once: a pure core that decides every round of every variant.

The core applies a variant's rules (``domain.rules``: data) to a round's state and one input,
and returns the consequences; it stores nothing and knows no aggregate. Its shape is a
*decider*::

    decide(state, command) -> Decision (the facts, and the state they leave)
    evolve(state, fact) -> state

The aggregates (``domain.round.Round``, ``domain.boundless.shared.SharedHand``,
``domain.boundless.participation.Participation``) record what it decides, one stored event per
fact, and rebuild their state by folding their events through the same ``evolve``; verification
decides every stored input again and compares (``replays.reexecute``, ``replays.boundless``).

The modules, from the bottom up:

* :mod:`~domain.game.facts`: :class:`~domain.game.facts.Fact` and
  :class:`~domain.game.facts.Decision`, the **one place** every consequence (it names its rule)
  and every input (its actor, request id and client time) is made.
* :mod:`~domain.game.state`: how an immutable state object is replaced.
* :mod:`~domain.game.commands`: the inputs (a bet, a card, a decision, a timer, a
  disconnection, the end of betting, the insurance timer, a supervisor's action, a boundless
  round's steps) and the command each stored input records.
* :mod:`~domain.game.play`: what a hand may do, when the dealer draws, a main hand's outcome.
* :mod:`~domain.game.hands`: hands and their transitions; automatic play (HAND-1, AUTO-1).
* :mod:`~domain.game.wagers`: wagers, the bets a table takes, its limits (D18), DLX-2/D17.
* :mod:`~domain.game.decisions`: a decision's checks and effects (INS-1, EVEN-1, DBL-1,
  SPLIT-1, SURR-1, FUNDS-1/2, DLX-6/7/8).
* :mod:`~domain.game.dealer`: the dealer's check, turn, draws (DEALER-1, H17) and stand.
* :mod:`~domain.game.settlement`: settlement of every wager kind and side bet, refunds,
  reversals (OUT-1..4, D8, INS-1, ERR-1).
* :mod:`~domain.game.phases`: the phases, the state every model of a round has, the guards.
* A classic round (seats or boxes dealt in turn): :mod:`~domain.game.table` (its decider),
  :mod:`~domain.game.table_play` (play, dealer, settlement), :mod:`~domain.game.table_state`
  (its state, ``evolve``, its view).
* A boundless round: :mod:`~domain.game.shared` (the shared hand's decider),
  :mod:`~domain.game.player` (a participation's), :mod:`~domain.game.sequence` (D9).
"""
