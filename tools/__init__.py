"""kafkagen: Kafka wire codecs generated from JSON message specs, a broker runtime and a
Spark compatibility fuzz.

The package root holds the command line (``kafkagen`` / ``python -m kafkagen``); the
subpackages are ``kafkagen.generator``, ``kafkagen.generated``, ``kafkagen.runtime``.
"""

__version__ = "0.1.0"
