"""The random-request generator's bounded name pool (`send_random_requests(names=N)`)."""

from __future__ import annotations

import random

from kafkagen.chaos.requests import _name_pool, _PooledGen
from kafkagen.fuzz.builders import builder
from kafkagen.generated import message_type


def test_pooled_requests_name_only_pool_topics_groups_and_transactions() -> None:
    """Every id a pooled request carries is one of the pool's strings, whichever builder
    (compiled or Python) the API has: that is what bounds a long run's broker state."""
    pool = _name_pool(3, 16)
    assert len(set(pool)) > 8  # random strings, not one repeated
    gen = _PooledGen(random.Random(5), pool)
    seen: set[str] = set()
    for _ in range(200):
        gen.reset()
        create = builder(message_type(19, "request"))(gen, 5)  # CreateTopics
        join = builder(message_type(11, "request"))(gen, 9)  # JoinGroup
        init = builder(message_type(22, "request"))(gen, 5)  # InitProducerId
        ids = [t.name for t in create.topics] + [join.group_id, join.member_id]
        if init.transactional_id is not None:
            ids.append(init.transactional_id)
        assert set(ids) <= set(pool)
        seen.update(ids)
    assert len(seen) > len(pool) // 2  # the whole pool is in use, not one name
