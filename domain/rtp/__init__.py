"""Return to player: the exact theoretical return of every variant and bet (pure functions).

* :mod:`domain.rtp.dealer`: the dealer's finished hands as counted multisets; outcome
  probabilities for many shoes at once.
* :mod:`domain.rtp.main_game`: the main game's exact finite-shoe return under the
  composition-dependent optimal strategy (CDP1), from a rules object alone.
* :mod:`domain.rtp.side_bets`: every side bet (and insurance) as exact rationals, by
  enumeration of the shoe with the evaluators of ``domain.sidebets``.
* :mod:`domain.rtp.report`: a rules key's report, stored as data in ``domain/rtp/reports/``, and
  the findings it raises (published RTP not reproduced, RTP below the floor).
* :mod:`domain.rtp.interval`: the interval an observed RTP should fall in, from the exact
  variance.

Nothing here stores anything or reads the environment. See docs/rtp.md.
"""
