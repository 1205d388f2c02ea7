"""The doctests of the seal's pure helpers: the leaf format, the C2SP notes, the legacy chain
and tree, the verifier's summary line and aggregate names."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

from domain import commit_leaf
from replays import chain, merkle, note, verify


@pytest.mark.parametrize("module", [commit_leaf, note, chain, merkle, verify])
def test_doctests_pass(module: ModuleType) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
