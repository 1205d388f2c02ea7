"""Storage configuration: the orjson transcoder and the database-URL translation.

This module owns the boundary between the model and the event store:

* :class:`OrjsonTranscoder` turns event state into canonical JSON bytes (keys sorted) and back,
  with ``Decimal``, ``UUID`` and ``datetime`` restored exactly. Its tags are the library's own
  (``decimal_str``, ``uuid_hex``, ``datetime_iso``), so a store written by the stdlib
  ``JSONTranscoder`` reads back unchanged, and the other way round.
* :func:`environment_for` translates a ``ROUNDAUDIT_DATABASE_URL`` value into the environment
  that ``eventsourcing`` reads (SQLite by default, PostgreSQL in production).
* :func:`sqlite_path` tells the caller which file a SQLite URL names, so the caller (never the
  domain) can create its folder.

Nothing here reads ``os.environ`` or touches the file system: the caller passes the URL in and
does the side effects.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Final
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit, urlunsplit
from uuid import UUID, uuid4

import orjson
from eventsourcing.persistence import (
    Transcoder,
    Transcoding,
    TranscodingNotRegisteredError,
)

from domain.group_commit import COMMIT_DELAY_ENV, MAX_WAIT_US
from domain.pgcluster import (
    CLUSTER_FACTORY_TOPIC,
    TARGET_SESSION_ATTRS,
    TARGET_SESSION_ATTRS_ENV,
    split_hosts,
)
from domain.times import iso_text

__all__ = [
    "DEFAULT_DATABASE_URL",
    "TRANSCODER_TOPIC",
    "DatabaseURLError",
    "OrjsonTranscoder",
    "environment_for",
    "redact_url",
    "sqlite_path",
]

DEFAULT_DATABASE_URL: Final = "sqlite:///data/roundaudit.db"

#: Seconds a SQLite writer waits for the database lock before giving up.
SQLITE_LOCK_TIMEOUT_SECONDS: Final = 10
#: Connections the PostgreSQL pool keeps open, and how many more it may open under load.
#: Inserts serialise on a table lock (DESIGN.md), so more writers do not add throughput;
#: the pool is sized for a handful of concurrent readers plus the writer.
POSTGRES_POOL_SIZE: Final = 5
POSTGRES_MAX_OVERFLOW: Final = 10
POSTGRES_CONNECT_TIMEOUT_SECONDS: Final = 10

_TYPE: Final = "_type_"
_DATA: Final = "_data_"
#: Item types the encoding walk leaves to orjson: plain scalars, and the types that orjson
#: hands to ``_default`` (Decimal, datetime). Anything else (containers, UUID, float, other
#: classes) is looked at by the walk.
_ENCODE_AS_IS: Final = frozenset({str, int, bool, type(None), Decimal, datetime})
_CONTAINERS: Final = frozenset({dict, list})
#: Sorted keys for canonical bytes. Datetimes and dataclasses are passed to ``default`` so
#: that they are tagged (datetime) or refused unless registered (dataclass), never written
#: in a form that reads back as something else.
_DUMPS_OPTIONS: Final = (
    orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
)


class DatabaseURLError(ValueError):
    """The database URL is malformed or names something we do not support.

    The message names the problem; it never repeats a password.
    """


# --------------------------------------------------------------------------------------------
# Transcoder
# --------------------------------------------------------------------------------------------

_Encoder = Callable[[Any], Any]
_Decoder = Callable[[Any], Any]


class OrjsonTranscoder(Transcoder):
    """Canonical, lossless JSON for stored events, encoded by orjson.

    * ``Decimal`` -> ``{"_data_": "10.50", "_type_": "decimal_str"}`` (exponent kept, so
      ``Decimal("10.50")`` comes back as ``Decimal("10.50")``, not ``Decimal("10.5")``).
    * ``UUID`` -> ``{"_data_": "<32 hex>", "_type_": "uuid_hex"}``.
    * ``datetime`` -> ``{"_data_": "<ISO 8601>", "_type_": "datetime_iso"}``; the UTC offset
      of an aware datetime is kept (a ``ZoneInfo`` comes back as a fixed-offset ``timezone``
      with the same offset), a naive one stays naive, microseconds are kept.
    * Tuples are written as JSON arrays and **come back as lists** (as with the stdlib
      transcoder). Events should hold lists, not tuples.
    * Keys are sorted (``OPT_SORT_KEYS``), so equal state gives equal bytes.

    Stricter than the stdlib ``JSONTranscoder``, on purpose, because a silent change of type
    in an audit record is worse than a refusal at save time: dict keys must be ``str``
    (``{1: ...}`` raises ``TypeError`` instead of being stored as ``{"1": ...}``), floats must
    be finite (orjson would store NaN as ``null``), and ints must fit in 64 bits.

    Registration: the ``register(Transcoding)`` protocol of ``JSONTranscoder`` is supported for
    extra types, and the three types above are built in. ``Application.construct_transcoder``
    calls ``register_transcodings`` only on ``JSONTranscoder`` instances, so an application
    using this class registers nothing there; to add a type, override
    ``construct_transcoder`` and call :meth:`register` on the result. A registered
    transcoding for a built-in type replaces the built-in one.

    As with the stdlib transcoder, a user dict whose only keys are ``_type_`` and ``_data_``
    is read as a tagged value; do not use those two keys in event payloads. Subclasses of
    ``str``/``int`` (``StrEnum``, ``IntEnum``), enums, and ``dict``/``list``/``tuple``
    subclasses are stored as their plain value and come back as plain ``str``/``int``/
    ``dict``/``list``.

    Speed (measured here, min of 7 runs, small round event / event with 8 nested hands):
    encode 6.7 / 23 us against 9.6 / 28 us for ``JSONTranscoder``, decode 5.5 / 22 us
    against 7.6 / 23 us. Most of what remains is the Python walk that tags UUIDs (orjson
    writes them natively, untagged) and restores tagged values (orjson has no object hook).

    >>> t = OrjsonTranscoder()
    >>> t.encode({"b": Decimal("10.50"), "a": [1, (2, 3)]})
    b'{"a":[1,[2,3]],"b":{"_data_":"10.50","_type_":"decimal_str"}}'
    >>> t.decode(t.encode({"amount": Decimal("10.50")}))
    {'amount': Decimal('10.50')}
    """

    def __init__(self) -> None:
        self._encoders: dict[type, tuple[str, _Encoder]] = {
            UUID: ("uuid_hex", _uuid_hex),
            Decimal: ("decimal_str", str),
            datetime: ("datetime_iso", iso_text),  # isoformat's text (domain.times)
        }
        self._decoders: dict[str, _Decoder] = {
            "uuid_hex": UUID,
            "decimal_str": Decimal,
            "datetime_iso": datetime.fromisoformat,
        }

    def register(self, transcoding: Transcoding) -> None:
        """Add (or replace) the transcoding of ``transcoding.type`` under ``transcoding.name``.

        As in ``JSONTranscoder``, the value ``transcoding.encode`` returns is itself encoded
        (it may contain Decimals, UUIDs, ...), and ``transcoding.decode`` receives it decoded.
        """
        self._encoders[transcoding.type] = (transcoding.name, transcoding.encode)
        self._decoders[transcoding.name] = transcoding.decode

    def encode(self, obj: Any) -> bytes:
        """Canonical UTF-8 JSON bytes for ``obj`` (keys sorted, no whitespace)."""
        # The walk tags UUIDs, checks floats (Decimal, datetime...: _default); bytes copied exact.
        try:
            data = orjson.dumps(self._tag(obj), default=self._default, option=_DUMPS_OPTIONS)
            return memoryview(data).tobytes()
        except TypeError as e:  # orjson.JSONEncodeError is TypeError
            if isinstance(e.__cause__, TranscodingNotRegisteredError):
                raise e.__cause__ from None
            # Dict keys that are not str, or an int beyond 64 bits.
            msg = f"cannot encode event state as JSON: {e}"
            raise TypeError(msg) from e

    def decode(self, data: bytes) -> Any:
        """The object that :meth:`encode` was given (tuples come back as lists)."""
        obj = orjson.loads(data)
        cls = type(obj)
        if cls is dict:
            return self._untag_dict(obj)
        if cls is list:
            return self._untag_list(obj)
        return obj

    def untag(self, obj: dict[str, Any]) -> Any:
        """A dict that ``orjson`` parsed from what :meth:`encode` wrote, its tagged values
        restored (in place, as :meth:`decode` does after parsing; the projections' reader,
        ``projections.recorded``, parses the stored JSON itself).

        >>> t = OrjsonTranscoder()
        >>> t.untag({"a": {"_data_": "1.50", "_type_": "decimal_str"}, "b": [1]})
        {'a': Decimal('1.50'), 'b': [1]}
        """
        return self._untag_dict(obj)

    # Encoding. The walk copies a container only when something inside it changes (it never
    # modifies the caller's objects), and looks inside a container only when the set of its
    # item types, checked in C by ``frozenset.issuperset(map(type, ...))``, says it must.

    def _tag(self, obj: Any) -> Any:
        cls = type(obj)
        if cls is dict:
            return self._tag_dict(obj)
        if cls is list or cls is tuple:
            return self._tag_list(obj)
        if cls is UUID:
            return self._tagged(obj)
        if cls is float:
            _check_finite(obj)
        elif isinstance(obj, dict):  # OrderedDict, defaultdict, ...: stored as a plain dict
            return self._tag_dict(dict(obj))
        elif isinstance(obj, list | tuple):  # namedtuple, list subclasses: stored as a list
            return self._tag_list(list(obj))
        return obj

    def _tag_dict(self, obj: dict[Any, Any]) -> dict[Any, Any]:
        if _ENCODE_AS_IS.issuperset(map(type, obj.values())):
            return obj
        out = obj
        for key, value in obj.items():
            cls = type(value)
            if cls in _ENCODE_AS_IS:
                continue
            new = self._tag(value)
            if new is not value:
                if out is obj:
                    out = dict(obj)
                out[key] = new
        return out

    def _tag_list(self, obj: list[Any] | tuple[Any, ...]) -> list[Any] | tuple[Any, ...]:
        if _ENCODE_AS_IS.issuperset(map(type, obj)):
            return obj
        out: list[Any] | None = None
        for index, value in enumerate(obj):
            if type(value) in _ENCODE_AS_IS:
                continue
            new = self._tag(value)
            if new is not value:
                if out is None:
                    out = list(obj)
                out[index] = new
        return obj if out is None else out

    def _tagged(self, obj: Any) -> dict[str, Any]:
        try:
            name, encode = self._encoders[type(obj)]
        except KeyError:
            msg = (
                f"Object of type {type(obj)} is not serializable. Please define and register "
                "a custom transcoding for this type."
            )
            raise TranscodingNotRegisteredError(msg) from None
        data = encode(obj)  # a str (a timestamp's, Decimal's, UUID's text): nothing to tag
        return {_TYPE: name, _DATA: data if type(data) is str else self._tag(data)}

    _default = _tagged  # orjson's callback (Decimal, datetime, registered types), no call more

    # Decoding works in place on the fresh structure orjson returned. A dict's items are
    # walked at once (an event's state holds its actor and timestamp, its nested dicts are
    # small: a C test of its item types first cost ~2,000 instructions an event more than it
    # saved); a list is walked only when it holds containers.

    def _untag_dict(self, obj: dict[str, Any]) -> Any:
        if len(obj) == 2 and _TYPE in obj and _DATA in obj:
            return self._untagged(obj[_TYPE], obj[_DATA])
        for key, value in obj.items():
            cls = type(value)
            if cls is dict:
                obj[key] = self._untag_dict(value)
            elif cls is list:
                self._untag_list(value)
        return obj

    def _untag_list(self, obj: list[Any]) -> list[Any]:
        if _CONTAINERS.isdisjoint(map(type, obj)):
            return obj
        for index, value in enumerate(obj):
            cls = type(value)
            if cls is dict:
                obj[index] = self._untag_dict(value)
            elif cls is list:
                self._untag_list(value)
        return obj

    def _untagged(self, name: Any, data: Any) -> Any:
        try:
            decode = self._decoders[name]
        except (KeyError, TypeError):
            msg = (
                f"Data serialized with name {name!r} is not deserializable. "
                "Please register a custom transcoding for this type."
            )
            raise TranscodingNotRegisteredError(msg) from None
        cls = type(data)
        if cls is dict:
            data = self._untag_dict(data)
        elif cls is list:
            data = self._untag_list(data)
        return decode(data)


def _check_finite(value: float) -> None:
    if not math.isfinite(value):
        msg = f"cannot store non-finite float {value!r} in JSON (it would come back as null)"
        raise ValueError(msg)


def _uuid_hex(value: UUID) -> str:
    return value.hex


# --------------------------------------------------------------------------------------------
# Database URLs
# --------------------------------------------------------------------------------------------

_SQLITE_SCHEMES: Final = frozenset({"sqlite"})
_POSTGRES_SCHEMES: Final = frozenset({"postgresql", "postgres"})
_MEMORY: Final = ":memory:"
_SCHEMA_RE: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_MEMORY_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SQLITE_PARAMS: Final = frozenset({"timeout", "commit_delay"})
_SQLITE_MEMORY_PARAMS: Final = frozenset({"name", "commit_delay"})
_POSTGRES_PARAMS: Final = frozenset(
    {"schema", "host", "pool_size", "max_overflow", "connect_timeout", "target_session_attrs"}
) | {"commit_delay"}
#: Stable topic of the transcoder (the module path is part of the stored configuration).
TRANSCODER_TOPIC: Final = "domain.persistence:OrjsonTranscoder"


def environment_for(url: str, *, create_table: bool = True) -> dict[str, str]:
    """The ``eventsourcing`` environment for a ``ROUNDAUDIT_DATABASE_URL`` value.

    SQLite: ``sqlite:///relative/path.db`` (relative to the working directory),
    ``sqlite:////absolute/path.db``, or ``sqlite:///:memory:`` for a private in-memory
    database (shared by every connection that uses the same returned environment; pass
    ``?name=NAME`` to choose the name). ``?timeout=SECONDS`` sets the lock timeout. The
    library switches a file database to WAL mode when it first connects. The folder of the
    file must exist: see :func:`sqlite_path`.

    PostgreSQL: ``postgresql://user:password@host:port/dbname`` (or ``postgres://``), with
    optional ``?schema=NAME`` (the schema must exist; lower-case identifier),
    ``?host=/socket/dir`` instead of a host in the authority, ``?pool_size=N``,
    ``?max_overflow=N`` and ``?connect_timeout=SECONDS``. ``POSTGRES_ENABLE_DB_FUNCTIONS`` is
    always ``n`` (DESIGN.md: with it, a reader tailing the log missed events).

    Every store: ``?commit_delay=MICROSECONDS`` (0 to 5000), the group commit's wait for the
    commands in flight (``domain.group_commit``; default ``DEFAULT_WAIT``; 0: none).

    ``create_table=False`` gives ``CREATE_TABLE=n``: create the tables once, then start the
    workers with it (concurrent ``CREATE TABLE`` can fail on PostgreSQL).

    Raises :class:`DatabaseURLError` (a ``ValueError``) for an unknown scheme or a malformed
    URL.

    >>> env = environment_for("sqlite:///data/roundaudit.db")
    >>> env["PERSISTENCE_MODULE"], env["SQLITE_DBNAME"], env["CREATE_TABLE"]
    ('eventsourcing.sqlite', 'data/roundaudit.db', 'y')
    >>> env["TRANSCODER_TOPIC"]
    'domain.persistence:OrjsonTranscoder'
    >>> environment_for("sqlite:////var/lib/roundaudit/events.db")["SQLITE_DBNAME"]
    '/var/lib/roundaudit/events.db'
    >>> environment_for("sqlite:///:memory:?name=demo")["SQLITE_DBNAME"]
    'file:demo?mode=memory&cache=shared'
    >>> env = environment_for(
    ...     "postgresql://audit:s%40cret@db.internal:6543/roundaudit?schema=audit",
    ...     create_table=False,
    ... )
    >>> {k: v for k, v in sorted(env.items()) if k.startswith("POSTGRES_")}
    ... # doctest: +NORMALIZE_WHITESPACE
    {'POSTGRES_CONNECT_TIMEOUT': '10', 'POSTGRES_DBNAME': 'roundaudit',
     'POSTGRES_ENABLE_DB_FUNCTIONS': 'n', 'POSTGRES_HOST': 'db.internal',
     'POSTGRES_MAX_OVERFLOW': '10', 'POSTGRES_PASSWORD': 's@cret', 'POSTGRES_POOL_SIZE': '5',
     'POSTGRES_PORT': '6543', 'POSTGRES_SCHEMA': 'audit', 'POSTGRES_USER': 'audit'}
    >>> env["PERSISTENCE_MODULE"], env["CREATE_TABLE"]
    ('eventsourcing.postgres', 'n')
    >>> try:
    ...     environment_for("mysql://h/db")
    ... except DatabaseURLError as e:
    ...     print(e)
    unsupported database URL scheme 'mysql' in 'mysql://h/db': use sqlite:/// or postgresql://
    """
    parts = _split(url)
    common = {
        "TRANSCODER_TOPIC": TRANSCODER_TOPIC,
        "CREATE_TABLE": "y" if create_table else "n",
    }
    sqlite = parts.scheme in _SQLITE_SCHEMES  # each checks its parameters first:
    env = _sqlite_environment(url) if sqlite else _postgres_environment(url)
    delay = dict(parse_qsl(parts.query)).get("commit_delay")
    if delay is not None:
        common[COMMIT_DELAY_ENV] = _int_param(url, "commit_delay", delay, 0, MAX_WAIT_US)
    return {**env, **common}


def sqlite_path(url: str) -> Path | None:
    """The file a SQLite URL names, or ``None`` (in-memory SQLite, PostgreSQL).

    The caller creates the folder: ``path.parent.mkdir(parents=True, exist_ok=True)``.

    >>> sqlite_path("sqlite:///data/roundaudit.db")
    PosixPath('data/roundaudit.db')
    >>> sqlite_path("sqlite:////srv/audit/events.db")
    PosixPath('/srv/audit/events.db')
    >>> sqlite_path("sqlite:///:memory:") is None
    True
    >>> sqlite_path("postgresql://audit:pw@localhost/roundaudit") is None
    True
    """
    parts = _split(url)
    if parts.scheme not in _SQLITE_SCHEMES:
        return None
    path, _params = _sqlite_target(url)
    return None if path == _MEMORY else Path(path)


def redact_url(url: str) -> str:
    """The URL with its password replaced by ``***``, for logs and error messages.

    >>> redact_url("postgresql://audit:s3cret@db:5432/roundaudit")
    'postgresql://audit:***@db:5432/roundaudit'
    >>> redact_url("sqlite:///data/roundaudit.db")
    'sqlite:///data/roundaudit.db'
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    if "@" not in parts.netloc:
        return url
    userinfo, _, hostinfo = parts.netloc.rpartition("@")
    if ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{hostinfo}"))


def _split(url: str) -> SplitResult:
    if not isinstance(url, str) or not url.strip():
        msg = "database URL is empty: expected sqlite:///path.db or postgresql://..."
        raise DatabaseURLError(msg)
    if url != url.strip():
        msg = f"database URL {redact_url(url)!r} has leading or trailing whitespace"
        raise DatabaseURLError(msg)
    try:
        parts = urlsplit(url)
    except ValueError as e:
        msg = f"malformed database URL {redact_url(url)!r}: {e}"
        raise DatabaseURLError(msg) from None
    scheme = parts.scheme.lower()
    if scheme not in _SQLITE_SCHEMES | _POSTGRES_SCHEMES:
        shown = scheme or "(none)"
        msg = (
            f"unsupported database URL scheme {shown!r} in {redact_url(url)!r}: "
            "use sqlite:/// or postgresql://"
        )
        raise DatabaseURLError(msg)
    if parts.fragment:
        msg = f"database URL {redact_url(url)!r} must not have a #fragment"
        raise DatabaseURLError(msg)
    return parts._replace(scheme=scheme)


def _query(url: str, query: str, allowed: frozenset[str]) -> dict[str, str]:
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        msg = f"malformed query string in database URL {redact_url(url)!r}"
        raise DatabaseURLError(msg) from None
    params: dict[str, str] = {}
    for key, value in pairs:
        if key not in allowed:
            expected = ", ".join(sorted(allowed)) or "none"
            msg = (
                f"unknown parameter {key!r} in database URL {redact_url(url)!r} "
                f"(allowed: {expected})"
            )
            raise DatabaseURLError(msg)
        if key in params:
            msg = f"parameter {key!r} given twice in database URL {redact_url(url)!r}"
            raise DatabaseURLError(msg)
        params[key] = value
    return params


def _int_param(url: str, name: str, value: str, minimum: int, maximum: int = 2**63) -> str:
    if not (value.isascii() and value.isdigit()) or not minimum <= int(value) <= maximum:
        limit = f" and <= {maximum}" if maximum < 2**63 else ""
        msg = (
            f"parameter {name!r} must be an integer >= {minimum}{limit}, not {value!r}, "
            f"in database URL {redact_url(url)!r}"
        )
        raise DatabaseURLError(msg)
    return str(int(value))


def _sqlite_target(url: str) -> tuple[str, dict[str, str]]:
    """(path or ':memory:', query parameters) of a sqlite URL."""
    parts = _split(url)
    if parts.netloc:
        msg = (
            f"SQLite URL {url!r} has a host {parts.netloc!r}: write sqlite:///relative.db "
            "or sqlite:////absolute.db (three or four slashes)"
        )
        raise DatabaseURLError(msg)
    if not parts.path.startswith("/") or len(parts.path) < 2:
        msg = f"SQLite URL {url!r} names no file: write sqlite:///relative/path.db"
        raise DatabaseURLError(msg)
    path = unquote(parts.path[1:])
    if "\x00" in path:
        msg = f"SQLite URL {url!r} contains a NUL character"
        raise DatabaseURLError(msg)
    if path.endswith("/"):
        msg = f"SQLite URL {url!r} names a folder, not a file"
        raise DatabaseURLError(msg)
    if path.startswith("file:"):
        msg = f"SQLite URL {url!r}: give a path, not a file: URI"
        raise DatabaseURLError(msg)
    allowed = _SQLITE_MEMORY_PARAMS if path == _MEMORY else _SQLITE_PARAMS
    return path, _query(url, parts.query, allowed)


def _sqlite_environment(url: str) -> dict[str, str]:
    path, params = _sqlite_target(url)
    if path == _MEMORY:
        name = params.get("name") or f"roundaudit-{uuid4().hex}"
        if not _MEMORY_NAME_RE.fullmatch(name):
            msg = f"in-memory SQLite name {name!r} must match {_MEMORY_NAME_RE.pattern}"
            raise DatabaseURLError(msg)
        db_name = f"file:{name}?mode=memory&cache=shared"
        timeout = str(SQLITE_LOCK_TIMEOUT_SECONDS)
    else:
        db_name = path
        timeout = str(SQLITE_LOCK_TIMEOUT_SECONDS)
        if "timeout" in params:
            timeout = _int_param(url, "timeout", params["timeout"], 1)
    return {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": db_name,
        "SQLITE_LOCK_TIMEOUT": timeout,
    }


def _postgres_environment(url: str) -> dict[str, str]:
    parts = _split(url)
    shown = redact_url(url)
    params = _query(url, parts.query, _POSTGRES_PARAMS)
    userinfo, at, hostinfo = parts.netloc.rpartition("@")
    hosts: list[str] | None = None
    if "," in hostinfo:  # several servers (domain.pgcluster)
        try:
            hosts, ports = split_hosts(hostinfo)
        except ValueError as e:
            msg = f"PostgreSQL URL {shown!r}: {e}"
            raise DatabaseURLError(msg) from None
        parts = parts._replace(netloc=f"{userinfo}{at}{hostinfo.split(',')[0]}")
    try:
        port = parts.port
    except ValueError:
        msg = f"PostgreSQL URL {shown!r} has an invalid port"
        raise DatabaseURLError(msg) from None
    host = unquote(parts.hostname or "") or params.get("host", "")
    if parts.hostname and "host" in params:
        msg = f"PostgreSQL URL {shown!r} gives the host twice (authority and ?host=)"
        raise DatabaseURLError(msg)
    if not host:
        msg = f"PostgreSQL URL {shown!r} names no host: postgresql://user:pw@host:5432/db"
        raise DatabaseURLError(msg)
    user = unquote(parts.username or "")
    if not user:
        msg = f"PostgreSQL URL {shown!r} names no user: postgresql://user:pw@host:5432/db"
        raise DatabaseURLError(msg)
    dbname = unquote(parts.path[1:]) if parts.path.startswith("/") else ""
    if not dbname or "/" in dbname:
        msg = (
            f"PostgreSQL URL {shown!r} must name exactly one database: "
            "postgresql://user:pw@host:5432/dbname"
        )
        raise DatabaseURLError(msg)
    env = {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": dbname,
        "POSTGRES_HOST": host,
        "POSTGRES_PORT": str(port or 5432),
        "POSTGRES_USER": user,
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        "POSTGRES_POOL_SIZE": str(POSTGRES_POOL_SIZE),
        "POSTGRES_MAX_OVERFLOW": str(POSTGRES_MAX_OVERFLOW),
        "POSTGRES_CONNECT_TIMEOUT": str(POSTGRES_CONNECT_TIMEOUT_SECONDS),
        "POSTGRES_ENABLE_DB_FUNCTIONS": "n",
    }
    for param, key, minimum in (
        ("pool_size", "POSTGRES_POOL_SIZE", 1),
        ("max_overflow", "POSTGRES_MAX_OVERFLOW", 0),
        ("connect_timeout", "POSTGRES_CONNECT_TIMEOUT", 1),
    ):
        if param in params:
            env[key] = _int_param(url, param, params[param], minimum)
    if hosts is not None:
        env["POSTGRES_HOST"], env["POSTGRES_PORT"] = ",".join(hosts), ",".join(ports)
    attrs = params.get("target_session_attrs")
    if attrs is not None and attrs not in TARGET_SESSION_ATTRS:
        msg = (
            f"parameter 'target_session_attrs' must be one of "
            f"{', '.join(sorted(TARGET_SESSION_ATTRS))}, not {attrs!r}, in {shown!r}"
        )
        raise DatabaseURLError(msg)
    if hosts is not None or attrs is not None:
        env["PERSISTENCE_MODULE"] = CLUSTER_FACTORY_TOPIC
        env["POSTGRES_PRE_PING"] = "y"  # a pooled connection to a dead server is dropped
        if attrs is not None:
            env[TARGET_SESSION_ATTRS_ENV] = attrs
    if "schema" in params:
        schema = params["schema"]
        if not _SCHEMA_RE.fullmatch(schema):
            msg = (
                f"PostgreSQL schema {schema!r} in {shown!r} must be a lower-case identifier "
                "(letters, digits, underscore; at most 63 characters)"
            )
            raise DatabaseURLError(msg)
        env["POSTGRES_SCHEMA"] = schema
    return env
