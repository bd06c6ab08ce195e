"""The codec accelerator's build, the one part of the build pyproject.toml cannot state:
the extension is compiled with the SHA-256 of the source it was built from, which
``kafkagen.runtime.message`` compares with the source beside it at import, so an
accelerator built from other sources is refused instead of silently loaded."""

import hashlib
from pathlib import Path

from setuptools import Extension, setup  # type: ignore[import-untyped]

SOURCE = "runtime/_native.c"
digest = hashlib.sha256((Path(__file__).parent / SOURCE).read_bytes()).hexdigest()

setup(
    ext_modules=[
        Extension(
            "kafkagen.runtime._native",
            sources=[SOURCE],
            extra_compile_args=["-O2"],
            define_macros=[("KAFKAGEN_SOURCE_SHA256", f'"{digest}"')],
            # without a C compiler the install still succeeds: every codec runs in Python
            optional=True,
        )
    ]
)
