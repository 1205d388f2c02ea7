"""The application's event store: the library's ``EventStore`` whose ``put`` makes its
records the short way.

This module owns :class:`LeanEventStore`, the event store of every ``RoundAudit``
(``AuditBase.construct_event_store``), and :func:`frozen`, which makes an instance of one of
the library's frozen dataclasses from its fields (also the recorder's events built as stored,
``domain.recorder``, and a boundless round's stored events, ``domain.boundless.streams``).

The library's ``put`` turns each domain event into a ``StoredEvent`` (``Mapper.
to_stored_event``), has the recorder insert them, then returns a ``Recording`` of each event
with its ``Notification``: three frozen dataclasses an event, each ``__init__`` setting its
fields one by one through ``object.__setattr__`` (about 3.8 us an event measured alone, of
which these three objects' making is 2.7 us; a european round saves about 34 events).
:class:`LeanEventStore` makes the same three objects as the library makes the ones it reads
(its ``__dict__`` set at once: :func:`frozen`), and the stored state by the very same steps
as ``to_stored_event`` (the event's ``__dict__`` without its id and version, the class
version when above 1, the mapper's transcoder). Equal objects of the same classes, the same
bytes stored (``tests/integration/test_event_store.py``). A mapper with a compressor or a
cipher, or of another class than the library's ``Mapper``, goes the library's way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import EventStore, Mapper, Notification, Recording, StoredEvent
from eventsourcing.utils import get_topic

__all__ = ["LeanEventStore", "frozen"]

F = TypeVar("F")
_new = object.__new__
_set = object.__setattr__
#: Each event class's topic and class version, as ``put`` writes them (``get_topic`` and the
#: class's ``class_version``, read once a class: both are fixed once the class is defined).
_CLASSES: dict[type, tuple[str, int]] = {}


def frozen(cls: type[F], fields: dict[str, Any]) -> F:
    """An instance of ``cls``, a frozen dataclass without slots, whose fields are ``fields``
    (every field, by name, nothing else: the caller's duty), made without its ``__init__``,
    as ``copy`` or ``pickle`` make one; ``fields`` becomes its ``__dict__``.

    >>> s = frozen(StoredEvent, {"originator_id": "a", "originator_version": 1,
    ...                          "topic": "t", "state": b"{}"})
    >>> s == StoredEvent("a", 1, "t", b"{}")
    True
    """
    made: F = _new(cls)
    _set(made, "__dict__", fields)
    return made


class LeanEventStore(EventStore[UUID]):
    """The library's ``EventStore`` whose ``put`` makes its stored events, notifications and
    recordings as :func:`frozen` does (inline; see the module docstring)."""

    def put(
        self, domain_events: Sequence[DomainEventProtocol[UUID]], **kwargs: Any
    ) -> list[Recording[UUID]]:
        """Store ``domain_events`` as the library's ``put`` does, returning equal
        recordings."""
        mapper = self.mapper
        if type(mapper) is not Mapper or mapper.compressor or mapper.cipher:
            return super().put(domain_events, **kwargs)
        encode = mapper.transcoder.encode
        classes = _CLASSES
        stored: list[StoredEvent] = []
        for event in domain_events:
            cls = type(event)
            named = classes.get(cls)
            if named is None:
                named = classes[cls] = (get_topic(cls), getattr(cls, "class_version", 1))
            state = dict(event.__dict__)
            originator_id = state.pop("originator_id")
            originator_version = state.pop("originator_version")
            if named[1] > 1:
                state["class_version"] = named[1]
            made = _new(StoredEvent)  # frozen(), inline: three an event
            _set(
                made,
                "__dict__",
                {
                    "originator_id": originator_id,
                    "originator_version": originator_version,
                    "topic": named[0],
                    "state": encode(state),
                },
            )
            stored.append(made)
        ids = self.recorder.insert_events(stored, **kwargs)
        if not ids:
            return []
        assert len(ids) == len(stored)
        recordings: list[Recording[UUID]] = []
        for event, s, n in zip(domain_events, stored, ids, strict=True):
            notification = _new(Notification)
            _set(notification, "__dict__", {**s.__dict__, "id": n})
            recording = _new(Recording)
            _set(recording, "__dict__", {"domain_event": event, "notification": notification})
            recordings.append(recording)
        return recordings
