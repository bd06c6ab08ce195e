"""``kafkagen bench profile`` profiles a real server under real clients."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkagen.bench import profile


@pytest.mark.slow
def test_the_records_of_produced_batches_are_read_in_c(tmp_path: Path) -> None:
    said: list[str] = []
    python = profile.profile_once(2_000, True, tmp_path, said.append)
    shipped = profile.profile_once(2_000, False, tmp_path, said.append)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["serve-native.prof", "serve-python.prof"]
    for run in (python, shipped):
        requests, cpu = run.place("api_00_produce.py", "handle")
        assert requests >= 2 and cpu > 0  # at least one Produce request per acks setting
        assert run.place("api_01_fetch.py", "handle")[0] >= 1
        assert 0 < cpu < run.total
        assert all(rate > 0 for rate in run.rates.values())
    # Each produced record goes through the Python reader once, or never when shipped.
    assert python.place("records.py", "_parse_records")[0] >= 4_000
    assert shipped.place("records.py", "_parse_records")[0] == 0
    assert shipped.place("records.py", "validate_batch_for_append")[0] >= 2
    text = "\n".join(profile.report(shipped, 5))
    assert "batch validation" in text and "us/record" in text
