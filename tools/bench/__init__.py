"""Benchmarks behind ``kafkagen bench``: figures and ratios measured in one run, not tests.

- ``codecs``: the generated codecs against kio and kafka-python (``workloads`` holds the
  messages they encode and decode);
- ``purgatory``: the request purgatory against an asyncio ``call_later`` baseline;
- ``fuzz``: the fuzz job's message loop, plain and on local Spark;
- ``kafka``: ``kafkagen serve`` against Apache Kafka on the same machine;
- ``profile``: where ``kafkagen serve`` spends its CPU on produced and fetched bytes.
"""
