"""Benchmark: the window in which an edit of a stored event could go unseen.

Run on demand (not part of the test suite)::

    python -m benchmarks.seal_window --store sqlite [--seconds 20] [--interval 1]
    python -m benchmarks.seal_window --store postgres [--url postgresql://...]

A transaction's events are committed to the log in the transaction itself; what an insider who
controls the database (and the signing key) could still rewrite unseen is a transaction that
no **witnessed** checkpoint covers yet. That window is measured here as it runs in production:
the checkpoint signer as a worker in its own process (``roundaudit seal --follow INTERVAL``)
sending every checkpoint to a witness in its own process (``roundaudit witness serve``), while
this process commits transactions (wallet deposits) at random moments. For each transaction:
the time from its commit to the moment a checkpoint covering its leaf, cosigned by the
witness, is stored. Printed: the interval, the number of transactions, and the median, 95th
percentile and maximum of that window (expected: at most the interval plus signing and the
witness's round trip).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.log import MerkleLog
from replays.merkle import load_private_key
from replays.note import operator_key, verify, witness_key

ROOT = Path(__file__).resolve().parents[1]
ORIGIN = "casino.example/roundaudit/window-benchmark"
WITNESS = "witness.example/window-benchmark"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _store(store: str, url: str | None) -> Iterator[str]:
    if store == "sqlite":
        with tempfile.TemporaryDirectory(prefix="roundaudit-window-") as d:
            yield "sqlite:///" + quote(str(Path(d) / "events.db"))
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from pg import ThrowawayCluster, find_bindir, fresh_database  # type: ignore[import-not-found]

    if url is not None:
        with fresh_database(url, prefix="bench_") as db:
            yield db
        return
    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL server binaries: pass --url postgresql://...")
    with ThrowawayCluster(bindir) as admin, fresh_database(admin, prefix="bench_") as db:
        yield db


def _start(args: list[str], port: int | None = None) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [sys.executable, "-m", "cli.main", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if port is not None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                return p
            time.sleep(0.05)
        p.kill()
        raise SystemExit(f"the witness did not start: {p.communicate()}")
    return p


def _stop(p: subprocess.Popen[str]) -> None:
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=60)


def run(store: str, url: str | None, seconds: float, interval: float) -> list[str]:
    with (
        tempfile.TemporaryDirectory(prefix="roundaudit-window-keys-") as keys,
        _store(store, url) as db,
    ):
        key_file = Path(keys) / "operator.pem"
        key, _ = load_private_key(key_file, create=True)
        wkey, _ = load_private_key(Path(keys) / "witness" / "witness-key.pem", create=True)
        wvkey = witness_key(WITNESS, wkey.public_key())
        port = _port()
        vkey = operator_key(ORIGIN, key.public_key()).vkey()
        witness = _start(
            ["witness", "serve", "--state", f"{keys}/witness", "--name", WITNESS, "--log", vkey,
             "--port", str(port)],
            port,
        )  # fmt: skip
        app = RoundAudit(env=environment_for(db))
        app.open_wallet("window")
        signer = _start(
            ["--database-url", db, "seal", "--signing-key", str(key_file), "--origin", ORIGIN,
             "--witness", f"{wvkey.vkey()}@http://127.0.0.1:{port}", "--follow", str(interval)]
        )  # fmt: skip
        seen: dict[int, float] = {}  # checkpoint size -> when it was first stored, cosigned
        stop = threading.Event()

        def watch() -> None:
            reader = RoundAudit(env={**environment_for(db), "CREATE_TABLE": "n"})
            log = MerkleLog(reader)
            done = 0
            while not stop.is_set():
                log._checkpoints = None
                cps = log.checkpoints()
                now = time.monotonic()
                for cp in cps[done:]:
                    if cp.note is not None and verify(cp.note, wvkey) == "valid":
                        seen.setdefault(cp.size, now)
                done = len(cps)
                time.sleep(0.01)
            reader.close()

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        commits: list[tuple[int, float]] = []  # (log size after the commit, when)
        rng = random.Random(14)  # when to commit, not a card
        end = time.monotonic() + seconds
        try:
            i = 0
            while time.monotonic() < end:
                time.sleep(rng.uniform(0.05, 0.6))
                app.deposit("window", "1.00", transaction_id=f"w{i}")
                commits.append((int(app.recorder.max_notification_id() or 0), time.monotonic()))
                i += 1
            deadline = time.monotonic() + 10 * interval + 10
            log = MerkleLog(app)
            while time.monotonic() < deadline:
                size = log.refresh().size
                if any(s >= size for s in seen):
                    break
                time.sleep(0.05)
        finally:
            stop.set()
            watcher.join(timeout=10)
            _stop(signer)
            _stop(witness)
        log = MerkleLog(app).refresh()
        leaf_of = {}  # notification id -> leaf index
        for index, e in log.iter_entries():
            leaf_of[e.notification_id] = index
        app.close()
        windows = []
        for nid, when in commits:
            index = leaf_of[nid]
            covering = [t for size, t in seen.items() if size > index]
            if covering:
                windows.append(min(covering) - when)
        if not windows:
            return ["no transaction was covered by a witnessed checkpoint"]
        windows.sort()
        p95 = windows[max(0, int(len(windows) * 0.95) - 1)]
        return [
            f"store: {store}; signer interval {interval:g} s; witness on loopback",
            f"{len(commits)} transactions, {len(windows)} covered by a witnessed checkpoint",
            f"window from commit to a witnessed checkpoint: median {statistics.median(windows):.3f}"
            f" s, 95th percentile {p95:.3f} s, max {windows[-1]:.3f} s",
        ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--url", help="PostgreSQL: a server to create a throwaway database in")
    ap.add_argument("--seconds", type=float, default=20.0, help="how long to commit")
    ap.add_argument("--interval", type=float, default=1.0, help="the signer's interval")
    args = ap.parse_args(argv)
    print("\n".join(run(args.store, args.url, args.seconds, args.interval)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
