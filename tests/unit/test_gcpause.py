"""util/gcpause.py: the collector is off while a command starts, and on again after it, with
what exists frozen; also after an error, and untouched when it was off already."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from patchbench.util import gcpause


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    yield
    gc.unfreeze()  # what a test froze goes back to the collector of the test process
    gc.enable()


def test_off_while_starting_then_on_with_what_exists_frozen() -> None:
    gc.unfreeze()
    assert gc.isenabled()
    with gcpause.starting():
        assert not gc.isenabled()
        kept = [object() for _ in range(10)]
    assert gc.isenabled()
    assert gc.get_freeze_count() > len(kept)


def test_on_again_after_an_error() -> None:
    with pytest.raises(KeyError), gcpause.starting():
        raise KeyError("x")
    assert gc.isenabled()


def test_nested_or_already_off_it_changes_nothing() -> None:
    gc.unfreeze()
    gc.disable()
    with gcpause.starting():
        assert not gc.isenabled()
    assert not gc.isenabled() and gc.get_freeze_count() == 0
    gc.enable()
    with gcpause.starting():
        with gcpause.starting():
            pass
        assert not gc.isenabled()  # the inner one leaves the outer one's pause alone
    assert gc.isenabled()
