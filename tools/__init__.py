"""kafkagen: Kafka wire codecs generated from JSON message specs, a broker runtime and a
Spark compatibility fuzz.

The codecs and what uses them: ``kafkagen.generator`` (specs to code),
``kafkagen.generated`` (the built-in package), ``kafkagen.runtime`` (wire primitives, the
broker, the client). The command line (``kafkagen`` / ``python -m kafkagen``) is
``kafkagen.cli``; its larger jobs are ``kafkagen.fuzz``, ``kafkagen.conformance`` and
``kafkagen.bench``. Kafka itself, as a judge and a reference: ``kafkagen.oracle`` (Kafka's
own codec classes behind a batch interface, with its Java source), ``kafkagen.reference``
(an Apache Kafka broker), ``kafkagen.maven`` (jars from Maven Central),
``kafkagen.presets_from_jars`` (what each release's broker advertised). Client programs in
other languages: ``kafkagen.client_programs``. The pytest plugin: ``kafkagen.pytest_plugin``.
"""

__version__ = "0.1.0"
