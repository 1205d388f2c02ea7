"""RoundAudit's foundation: configuration, loading with a plain projector, retries on a
concurrent writer's conflict, and the vault of sealed RNG seeds.

Seeds of RNG shoes are kept in a sealed table of their own (``stored_sealed_seeds``), outside
the notification log, until the shoe is retired and the seed revealed as an event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import Environment, EnvType

from domain.errors import DomainError, InvalidRequest, ShoeNotFound
from domain.shoe import Shoe
from domain.store import project, retry

T = TypeVar("T")
Json = dict[str, Any]
_SEED_TOPIC = "roundaudit:sealed-seed"
MAX_NUMBER = 2**62
MAX_DECKS = 16


class AuditBase(Application[UUID]):
    """The store under every command group of ``RoundAudit``."""

    name = "RoundAudit"
    # A bounded cache of aggregates, fast-forwarded from the store on every get (so another
    # process's writes are seen) and deep-copied for each command (so a refused command leaves
    # it untouched). Long-lived aggregates (a deluxe Table across thousands of rounds) then
    # cost only their new events to load, not their whole history; a round's state is
    # immutable, so its copy shares it.
    env: ClassVar[dict[str, str]] = {"AGGREGATE_CACHE_MAXSIZE": "1000"}

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """Configuration comes only from the ``env`` passed in (never ``os.environ``), so a
        stray ``ROUNDAUDIT_*`` variable cannot switch the store or its safety settings."""
        merged = dict(type(self).env)
        if env is not None:
            merged.update(env)
        return Environment(name, merged)

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env=dict(env) if env is not None else None)
        self._seeds = self.factory.aggregate_recorder(purpose="sealed_seeds")

    # ------------------------------------------------------------------ plumbing
    def _get(self, cls: type[T], ident: UUID, missing: type[DomainError], what: str) -> T:
        try:
            agg: object = self.repository.get(ident, projector_func=project)
        except AggregateNotFoundError:
            raise missing(f"{what} not found") from None
        if not isinstance(agg, cls):
            raise missing(f"{what} not found")
        return agg

    def _retry(self, fn: Callable[[], T]) -> T:
        return retry(fn)

    # ------------------------------------------------------------- sealed seeds
    def _seal(self, shoe_id: UUID, seed: bytes) -> None:
        self._seeds.insert_events(
            [
                StoredEvent(
                    originator_id=shoe_id, originator_version=1, topic=_SEED_TOPIC, state=seed
                )
            ]
        )

    def _sealed_seed(self, shoe: Shoe) -> bytes | None:
        if shoe.kind != "rng":
            return None
        found = self._seeds.select_events(shoe.id)
        if not found:
            raise ShoeNotFound(f"the sealed seed of shoe {shoe.id} is missing from the vault")
        return found[0].state

    def shoe(self, shoe_id: str | UUID) -> Shoe:
        return self._get(Shoe, uuid_of(shoe_id, ShoeNotFound), ShoeNotFound, f"shoe {shoe_id}")


def usable_id(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip()) and ":" not in value and len(value) <= 200


def check_id(value: object, field: str) -> None:
    if not usable_id(value):
        raise InvalidRequest(
            f"{field} {value!r} is not usable: a non-empty string of at most 200 characters "
            "without ':'"
        )


def check_number(value: object, field: str, high: int = MAX_NUMBER) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise InvalidRequest(f"{field} must be a whole number from 1 to {high}, got {value!r}")


def uuid_of(value: str | UUID, missing: type[DomainError]) -> UUID:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        raise missing(f"{value!r} is not a valid id (a UUID)") from None


__all__ = [
    "MAX_DECKS",
    "MAX_NUMBER",
    "AuditBase",
    "check_id",
    "check_number",
    "usable_id",
    "uuid_of",
]
