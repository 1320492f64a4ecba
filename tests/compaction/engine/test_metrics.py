"""Prometheus metrics at /metrics and the structured events (issue 3 §9)."""

from __future__ import annotations

import logging

from compaction.bindings.segments import conversation_plan
from compaction.engine.run import job_run
from compaction.engine.metrics import compaction_event
from tests.compaction.conftest import RecordingProvider, ingest
from tests.factories import conversation_document


def test_events_carry_range_attempt_code_tokens_and_latency(db, caplog):
    received = []

    def listener(sender, event, fields, **kw):
        received.append((event, fields))

    compaction_event.connect(listener)
    try:
        conv = ingest(conversation_document(30))
        (job,) = conversation_plan(conversation=conv)
        with caplog.at_level(logging.INFO, logger="compaction.events"):
            job_run(job_id=job.pk, provider=RecordingProvider(result={"text": "", "finish_reason": "length"}))
            job_run(job_id=job.pk, provider=RecordingProvider())
    finally:
        compaction_event.disconnect(listener)
    assert [e for e, _ in received] == ["compacting", "compaction_failed", "compacting", "compacted"]
    failed = received[1][1]
    assert (failed["conversation"], failed["range"], failed["attempt"], failed["failure_code"]) == (
        conv.pk, [0, 9], 1, "finish_reason")
    done = received[3][1]
    assert done["input_tokens"] > 0 and done["output_tokens"] > 0 and done["latency_ms"] is not None
    lines = [r.getMessage() for r in caplog.records if r.name == "compaction.events"]
    assert any(line.startswith("compaction_failed ") and 'failure_code="finish_reason"' in line for line in lines)


def test_metrics_endpoint_serves_counters_histograms_and_job_states(db, client):
    conv = ingest(conversation_document(30))
    (job,) = conversation_plan(conversation=conv)
    job_run(job_id=job.pk, provider=RecordingProvider())
    response = client.get("/metrics")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'compaction_attempts_total{failure_code="",outcome="succeeded"}' in body
    assert "compaction_provider_latency_seconds_bucket" in body
    assert "compaction_job_overhead_seconds_count" in body
    assert 'compaction_jobs{state="succeeded"} 1.0' in body
