"""roundaudit domain model: cards, shoes, scoring, money, rules, rounds and wallets.

Nothing here imports the web layer or reads the process environment: configuration comes in
as arguments (see DESIGN.md).
"""
