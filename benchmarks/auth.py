"""What authentication costs a request: the same requests with and without the API key check.

    python -m benchmarks.auth [--requests 2000] [--store sqlite|postgres] [--url URL]

One service (``api.main.create_app``) on a throwaway store, called in-process through
Starlette's ``TestClient`` (no network, so the figures are the service's own cost). Three
requests: ``GET /rules/deluxe`` (no store access: authentication is most visible),
``GET /rounds/{id}`` (a round read from the store) and ``POST /rounds/{id}/bets`` refused by
the rules (a command path that reads round and wallet). Each is timed

* **with** authentication: ``Authorization: Bearer <key>``, the key loaded from the store by
  its id on every request (one query, no cache: a revocation holds at once in every process),
  its secret hashed and compared;
* **baseline**: the very same request in the same run with authentication bypassed (FastAPI's
  ``dependency_overrides`` hands the route the principal directly: everything else, the
  permission checks on the resource included, still runs), on a second service sharing the
  first one's application and store;

alternated request by request, so that both see the same machine. It also times
``KeyRing.authenticate`` alone (the raw lookup). Printed: median and mean microseconds per
request, the difference (the cost of authentication) and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from fastapi.testclient import TestClient

from api.auth import Authenticated
from api.main import create_app
from api.settings import Settings
from domain.application import RoundAudit
from domain.guarded import GuardedAudit
from domain.keys import new_token

ORDER = ["10H", "9S", "6D", "KC", "8D", "2C", "5S", "4H"]


def _authenticators(web: Any) -> list[Authenticated]:
    found: list[Authenticated] = []

    def walk(dependant: Any) -> None:
        for dep in getattr(dependant, "dependencies", []):
            if isinstance(dep.call, Authenticated):
                found.append(dep.call)
            walk(dep)

    for route in web.routes:
        contexts = getattr(route, "effective_route_contexts", None)
        for ctx in contexts() if contexts is not None else []:
            walk(getattr(ctx.original_route, "dependant", None))
    return found


def _time(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def run(requests: int, url: str, say: Callable[[str], None] = print) -> dict[str, float]:
    admin = new_token()
    settings = Settings(database_url=url, admin_key=admin, allowed_hosts=("testserver",))
    keyed_web = create_app(settings)
    results: dict[str, float] = {}
    with TestClient(keyed_web) as c:
        audit: RoundAudit = keyed_web.state.audit
        # the baseline: the same service on the same application, the key check bypassed
        base_web = create_app(settings, app=audit)
        principal = audit.keys.authenticate(admin)
        base_web.dependency_overrides.update(
            {a: (lambda: GuardedAudit(audit, principal)) for a in _authenticators(base_web)}
        )
        with TestClient(base_web) as b:
            auth = {"Authorization": f"Bearer {admin}"}
            c.post("/tables", json={"table_id": "B1", "variant": "multihand", "production": False},
                   headers=auth)  # fmt: skip
            c.post("/wallets", json={"player_id": "p1", "account_type": "test"}, headers=auth)
            rid = c.post(
                "/rounds",
                json={"table_id": "B1", "round_number": 1, "variant": "multihand",
                      "test_order": ORDER},
                headers=auth,
            ).json()["round_id"]  # fmt: skip
            bet = {"player": "p1", "amount": "1.00", "spot": 1}  # no money: refused, unrecorded
            calls: dict[str, Callable[[TestClient, dict[str, str]], Any]] = {
                "GET /rules/deluxe": lambda t, h: t.get("/rules/deluxe", headers=h),
                "GET /rounds/{id}": lambda t, h: t.get(f"/rounds/{rid}", headers=h),
                "POST /rounds/{id}/bets (refused)": lambda t, h: t.post(
                    f"/rounds/{rid}/bets", json=bet, headers=h
                ),
            }
            for fn in calls.values():  # every path answers as expected before it is timed
                assert fn(c, auth).status_code in (200, 409)
                assert fn(b, {}).status_code in (200, 409), fn(b, {}).text
                assert fn(c, {}).status_code == 401
            store = url.split(":", maxsplit=1)[0]
            say(f"authentication cost per request ({requests} of each, {store}, in-process)")
            say(f"{'request':<34} {'baseline':>10} {'with key':>10} {'cost':>9} {'ratio':>7}")
            for name, fn in calls.items():
                base: list[float] = []
                keyed: list[float] = []
                for _ in range(requests):  # alternated: both see the same machine
                    base += _time(lambda fn=fn: fn(b, {}), 1)
                    keyed += _time(lambda fn=fn: fn(c, auth), 1)
                bm, km = statistics.median(base) * 1e6, statistics.median(keyed) * 1e6
                results[name] = km - bm
                say(f"{name:<34} {bm:>8.0f}us {km:>8.0f}us {km - bm:>7.0f}us {km / bm:>6.2f}x")
        raw = _time(lambda: audit.keys.authenticate(admin), requests)
        results["authenticate"] = statistics.median(raw) * 1e6
        say(
            f"KeyRing.authenticate alone (load by id + hash + compare): median "
            f"{results['authenticate']:.0f}us, mean {statistics.mean(raw) * 1e6:.0f}us"
        )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    sys.path.insert(0, ".")
    from benchmarks.boundless import _store

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--url", help="an existing store instead of a throwaway one")
    args = ap.parse_args(argv)
    with _store(args.store, args.url) as url:
        run(args.requests, url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
