"""The release presets are what each release's own spec files say (re-derived from Maven)."""

from __future__ import annotations

import pytest
from kafkagen.version_presets import TABLE, render, table


@pytest.mark.slow
def test_committed_presets_match_a_fresh_derivation() -> None:
    assert TABLE.read_text("utf-8") == render(table())
