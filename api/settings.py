"""Web-service settings: the one place of the service (besides ``cli/``) that reads the environment.

* ``ROUNDAUDIT_DATABASE_URL``: where events are stored (default
  :data:`domain.persistence.DEFAULT_DATABASE_URL`, a SQLite file under ``data/``); see
  :func:`domain.persistence.environment_for` for the accepted forms.
* ``ROUNDAUDIT_PRODUCTION``: ``1``/``true``/``yes`` on a production deployment (default ``0``).
  In production the health check names the kind of store only, never its URL.

:func:`load_settings` also creates the folder of a SQLite file, because the domain never
touches the file system.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from domain.persistence import DEFAULT_DATABASE_URL, sqlite_path

DATABASE_URL_ENV = "ROUNDAUDIT_DATABASE_URL"
PRODUCTION_ENV = "ROUNDAUDIT_PRODUCTION"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


class SettingsError(ValueError):
    """An environment variable has a value the service cannot use."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What the web service needs to start."""

    database_url: str = DEFAULT_DATABASE_URL
    production: bool = False


def _flag(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SettingsError(f"{name}={value!r} is not a flag: use 1/0, true/false, yes/no")


def ensure_sqlite_folder(database_url: str) -> None:
    """Create the folder of the SQLite file ``database_url`` names (nothing for other stores)."""
    path = sqlite_path(database_url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from ``environ`` (default ``os.environ``); creates the SQLite folder if needed."""
    env = os.environ if environ is None else environ
    url = env.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL
    settings = Settings(
        database_url=url,
        production=_flag(PRODUCTION_ENV, env.get(PRODUCTION_ENV, "0")),
    )
    ensure_sqlite_folder(settings.database_url)
    return settings


__all__ = [
    "DATABASE_URL_ENV",
    "PRODUCTION_ENV",
    "Settings",
    "SettingsError",
    "ensure_sqlite_folder",
    "load_settings",
]
