"""Several verifiers keeping one state file (``replays.logstate``: the processes of
``roundaudit serve --workers N``, each with its long-lived log, ``long_lived_log``), on SQLite
and PostgreSQL stores: each saves what it read over what another saved since it opened the file
(nothing lost, nothing doubled), one that is behind the file saves nothing and loses nothing,
the checkpoint marks never go down, saves at the same moment from two threads do not corrupt
the file; two verifiers that read different logs into the same file is a ``fork``, never a
silent overwrite; a file replaced by an older copy is refused, never written into."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from test_verifier_state import _record, _same_log

from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.log import MerkleLog
from replays.logstate import StatefulLog, VerifierState, long_lived_log, open_log
from replays.merkle import generate_key
from replays.signer import Signer


def _log(url: str, path: Path) -> tuple[RoundAudit, StatefulLog]:
    app = RoundAudit(env=environment_for(url))
    log = long_lived_log(app, path)
    assert isinstance(log, StatefulLog)
    return app, log


def _kept(log: StatefulLog) -> bool:
    return log.keep(log.state.origin, None)


def _check(url: str, path: Path) -> None:
    """The file holds the store's log as a verifier reading it whole sees it."""
    app = RoundAudit(env=environment_for(url))
    try:
        fresh = MerkleLog(app).refresh()
        kept = open_log(app, path)
        assert isinstance(kept, StatefulLog)
        assert not kept.findings
        _same_log(kept, fresh)
    finally:
        app.close()


def test_two_verifiers_save_into_one_file_each_what_it_read(store_url: str, tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    writer = RoundAudit(env=environment_for(store_url))
    key = generate_key()
    a_app = b_app = None
    try:
        _record(writer)
        a_app, a = _log(store_url, path)
        b_app, b = _log(store_url, path)  # both opened the file at the same size
        opened = VerifierState(path).size
        assert a.size == b.size == opened
        _record(writer, "2")
        Signer(writer, key=key, origin="example.test/log").run_once()
        a.refresh()
        assert _kept(a)
        after_a = VerifierState(path)
        assert after_a.size == a.size > opened
        assert after_a.checkpoint == 1
        _record(writer, "3")
        b.refresh()  # b read the leaves a saved, and more
        assert _kept(b)  # written over a's: the same leaves again, then its own
        assert not b.findings
        assert VerifierState(path).size == b.size > a.size
        _check(store_url, path)
        _record(writer, "4")
        Signer(writer, key=key, origin="example.test/log").run_once()
        b.refresh()
        assert _kept(b)
        file = VerifierState(path)
        assert (file.size, file.checkpoint) == (b.size, 2)
        # a is behind the file: it saves nothing, finds nothing, and lowers no mark
        assert not _kept(a)
        assert not a.findings
        again = VerifierState(path)
        assert (again.size, again.root, again.checkpoint) == (file.size, file.root, 2)
        a.refresh()  # caught up: it saves again, the same log
        assert a.size == b.size
        _check(store_url, path)
    finally:
        for app in (writer, a_app, b_app):
            if app is not None:
                app.close()


def test_saves_of_two_verifiers_at_the_same_moment_keep_the_file_whole(
    store_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "state.sqlite"
    writer = RoundAudit(env=environment_for(store_url))
    opened: list[RoundAudit] = []
    try:
        _record(writer)
        logs = []
        for _ in range(2):
            app, log = _log(store_url, path)
            opened.append(app)
            logs.append(log)
        errors: list[BaseException] = []
        for n in range(4):
            _record(writer, f"x{n}")
            gate = threading.Barrier(len(logs))

            def save(log: StatefulLog, gate: threading.Barrier = gate) -> None:
                try:
                    log.refresh()
                    gate.wait()
                    _kept(log)
                except BaseException as exc:  # reported below
                    errors.append(exc)

            threads = [threading.Thread(target=save, args=(log,)) for log in logs]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors, errors
            assert not any(log.findings for log in logs)
            assert VerifierState(path).size == logs[0].size == logs[1].size
        _check(store_url, path)
    finally:
        for app in (writer, *opened):
            app.close()


def test_two_verifiers_that_read_different_logs_into_one_file_is_a_fork(tmp_path: Path) -> None:
    """Two stores with the same first leaves (one copied from the other), each grown in its
    own way: the verifier that saves second finds that the file's tree is not its log's."""
    first, second = tmp_path / "one.db", tmp_path / "two.db"
    one, two = f"sqlite:///{first}", f"sqlite:///{second}"
    path = tmp_path / "state.sqlite"
    app = RoundAudit(env=environment_for(one))
    try:
        _record(app)
    finally:
        app.close()
    shutil.copy(first, second)
    a_app, a = _log(one, path)
    b_app, b = _log(two, path)
    try:
        kept = VerifierState(path)
        for url, table in ((one, "a"), (two, "b")):
            grow = RoundAudit(env=environment_for(url))
            try:
                _record(grow, table)
            finally:
                grow.close()
        a.refresh()
        assert _kept(a)
        saved = VerifierState(path)
        b.refresh()
        assert not _kept(b)
        assert [f[0] for f in b.findings] == ["fork"]
        assert "saved by another verifier" in b.findings[0][2]
        now = VerifierState(path)
        assert (now.size, now.root) == (saved.size, saved.root)  # a's save is kept
        assert now.size > kept.size
    finally:
        a_app.close()
        b_app.close()


def test_a_state_file_replaced_by_a_shorter_one_is_refused_not_extended(
    store_url: str, tmp_path: Path
) -> None:
    """No verifier's save shortens the file: one found shorter than when this verifier opened
    it (replaced by an older copy) is refused, never written into with a gap."""
    import pytest

    from replays.logstate import StateError

    path = tmp_path / "state.sqlite"
    older = tmp_path / "older.sqlite"
    writer = RoundAudit(env=environment_for(store_url))
    try:
        _record(writer)
        app, log = _log(store_url, path)
        try:
            shutil.copy(path, older)
            _record(writer, "2")
            log.refresh()
            assert _kept(log)
            shutil.copy(older, path)  # the file replaced by the copy made before that save
            _record(writer, "3")
            log.refresh()
            with pytest.raises(StateError, match="fewer than"):
                _kept(log)
        finally:
            app.close()
    finally:
        writer.close()
