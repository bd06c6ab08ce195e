"""Short fault campaigns with real clients (librdkafka), on kafkagen and on Apache Kafka,
checked by the history checker. The long ones are a documented command (docs/chaos.md)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from broker_helpers import BrokerProcess
from kafkagen.chaos.campaign import SERVE_CONFIGS, Campaign, ControlFaults, ProcessFaults
from kafkagen.chaos.checker import Report, check

# A campaign that stops moving fails here, not at the end of the whole run.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SEED = 20261128


def _assert_valid_and_busy(campaign: Campaign, report: Report) -> None:
    assert campaign.errors == []
    assert report.valid, report.render()
    stats = report.stats
    assert stats["acknowledged writes"] > 5_000, report.render()
    assert stats["txn ok"] > 20 and stats["txn fail"] > 0
    assert stats["poll ok"] > 50 and stats["commit ok"] > 0
    assert stats["final ok"] == 2
    assert len(campaign.faults_done) >= 3


def test_a_campaign_on_kafkagen_loses_nothing() -> None:
    with BrokerProcess(*SERVE_CONFIGS, brokers=3, control=True) as b:
        campaign = Campaign(b.bootstrap, duration=40, seed=SEED)
        kinds = ("isolate_broker", "partition_cluster", "pause_broker", "stop_broker")
        campaign.faults = ControlFaults(b.control_url, range(3), campaign.topics, kinds=kinds)
        history = campaign.run()
    _assert_valid_and_busy(campaign, check(history))
    kinds = {f.split(" ")[0] for f in campaign.faults_done}
    assert {"isolate", "partition"} <= kinds, campaign.faults_done


def test_the_same_campaign_on_kafka() -> None:
    from kafkagen.reference import KafkaReference

    with KafkaReference(nodes=3) as kafka:
        campaign = Campaign(kafka.bootstrap, duration=40, seed=SEED)
        campaign.faults = ProcessFaults(kafka.pids, kafka.restart)
        history = campaign.run()
    _assert_valid_and_busy(campaign, check(history))


def test_the_command_with_random_requests_beside_the_clients(tmp_path: Path) -> None:
    out = tmp_path / "history.jsonl"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkagen",
            "chaos",
            "--duration",
            "20",
            "--no-faults",
            "--partitions",
            "4",
            "--transactional",
            "3",
            "--requests",
            "3000",
            "--history",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "campaign: kafkagen serve --brokers 3" in run.stdout
    assert "valid: no anomalies" in run.stdout
    outcomes = dict(
        re.findall(r"^    (answered|closed|silent|hang|bad answer) +([\d,]+)$", run.stdout, re.M)
    )
    assert int(outcomes["answered"].replace(",", "")) > 100
    assert int(outcomes["closed"].replace(",", "")) > 0  # corrupted frames end connections
    assert outcomes["hang"] == "0" and outcomes["bad answer"] == "0"
    assert re.search(r"broker process: resident memory \d+ MiB before", run.stdout)
    check_again = subprocess.run(
        [sys.executable, "-m", "kafkagen.chaos.checker", str(out)], capture_output=True, text=True
    )
    assert check_again.returncode == 0


def test_the_command_with_a_log_dir_runs_through_the_writer_threads(tmp_path: Path) -> None:
    """The campaign against brokers that write their logs (stopped, paused, cut off and
    restarted meanwhile): nothing acknowledged is lost from the files' side either."""
    log_dir = tmp_path / "logs"
    command = [sys.executable, "-m", "kafkagen", "chaos", "--log-dir", str(log_dir)]
    run = subprocess.run(
        [*command, "--duration", "30", "--seed", "3"], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"campaign: kafkagen serve --brokers 3 --log-dir {log_dir}" in run.stdout
    assert "valid: no anomalies" in run.stdout
    written = int(re.search(r"acknowledged writes: ([\d,]+)", run.stdout)[1].replace(",", ""))
    assert written > 5_000
    segments = list(log_dir.glob("broker-*/chaos-in-*/*.log"))
    assert segments and sum(p.stat().st_size for p in segments) > written * 10
    # A directory already used is refused, not mixed into.
    again = subprocess.run([*command, "--duration", "1"], capture_output=True, text=True)
    assert again.returncode == 2
    assert f"--log-dir {log_dir}: must be empty or new" in again.stderr


def test_the_nemesis_records_a_failed_control_call_and_goes_on() -> None:
    """A control API that drops every call (as an overloaded or dying process may): each
    fault is recorded as failed with its error, and the campaign keeps its course."""
    stop = threading.Event()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.1)

        def drop_every_call() -> None:
            while not stop.is_set():
                try:
                    server.accept()[0].close()
                except TimeoutError:
                    pass

        dropping = threading.Thread(target=drop_every_call)
        dropping.start()
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        faults = ControlFaults(url, [0, 1, 2], Campaign.topic_names("c"))
        campaign = Campaign(
            "127.0.0.1:9", fault_every=(0.05, 0.1), fault_length=(0.05, 0.1), faults=faults
        )
        campaign.start = time.monotonic()
        campaign.deadline = campaign.start + 2.0
        try:
            campaign._nemesis()
        finally:
            stop.set()
            dropping.join()
    faults_seen = [o for o in campaign.recorder.history().completed if o.f == "fault"]
    failed = [o for o in faults_seen if o.type == "fail"]
    assert len(failed) >= 5 and all(o.value["error"] for o in failed)
    # Moving a leader says itself when it was refused; nothing else took effect.
    assert all(w.endswith("refused") for w in campaign.faults_done)
