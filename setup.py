"""The build of the two compiled extensions, the one part of the build pyproject.toml
cannot state: each is compiled with the SHA-256 of the sources it was built from, which
the Python side compares with the sources beside it at import, so an extension built
from other sources is refused instead of silently loaded.

- ``kafkagen.runtime._native``: the codec accelerator under the generated codecs;
- ``kafkagen.fuzz._builders``: the fuzz's random-message builders, which walk the
  accelerator's compiled tables (declared in ``runtime/_native.h``).
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup  # type: ignore[import-untyped]

HERE = Path(__file__).parent
HEADER = "runtime/_native.h"


def extension(name: str, source: str) -> Extension:
    digest = hashlib.sha256()
    for path in (source, HEADER):
        digest.update((HERE / path).read_bytes())
    return Extension(
        name,
        sources=[source],
        depends=[HEADER],
        include_dirs=["runtime"],
        extra_compile_args=["-O2"],
        define_macros=[("KAFKAGEN_SOURCE_SHA256", f'"{digest.hexdigest()}"')],
        # without a C compiler the install still succeeds: everything runs in Python
        optional=True,
    )


setup(
    ext_modules=[
        extension("kafkagen.runtime._native", "runtime/_native.c"),
        extension("kafkagen.fuzz._builders", "tools/fuzz/_builders.c"),
    ]
)
