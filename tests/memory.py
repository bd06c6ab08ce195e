"""Memory growth of a repeated piece of work, for the accelerator's leak tests."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable


def growth(run: Callable[[], None], rounds: int) -> int:
    """Bytes still allocated after ``rounds`` more calls of ``run`` than after one,
    counted from a warm start (caches filled by a first call)."""
    run()
    tracemalloc.start()
    try:
        run()
        first = tracemalloc.get_traced_memory()[0]
        for _ in range(rounds):
            run()
        return tracemalloc.get_traced_memory()[0] - first
    finally:
        tracemalloc.stop()
