"""The engine on the embedded default (SQLite, no server): the claim's
UPDATE ... RETURNING, admission slots, generations and the ORM guards work
there too. Runs in a subprocess so it gets its own settings."""

from __future__ import annotations

from tests.compaction.conftest import run_on_sqlite

SCRIPT = r"""
import django
django.setup()
from django.core.management import call_command
from compaction.bindings.segments import SEGMENTS, conversation_plan
from compaction.engine.claim import job_claim
from compaction.engine.run import job_run
from compaction.models import Attempt, CompactionJob, ImmutableGenerationError, SummaryGeneration
from conversations.documents import validate_document
from conversations.services.ingest import conversation_ingest
from tests.factories import conversation_document

call_command("migrate", verbosity=0)
conv = conversation_ingest(document=validate_document(conversation_document(40)), actor="t").conversation
jobs = conversation_plan(conversation=conv)
first = job_claim(job=jobs[0], worker="w1", model_id=jobs[0].model_id)
second = job_claim(job_id=jobs[0].pk, worker="w2", model_id=jobs[0].model_id)
assert first.attempt.number == 1 and second.refused == "state_running", (first, second)
CompactionJob.objects.filter(pk=jobs[0].pk).update(state="pending", lease_owner="")
outcomes = [job_run(job_id=j.pk) for j in jobs]
assert [o.status for o in outcomes] == ["succeeded", "succeeded"], outcomes
gen = SummaryGeneration.objects.first()
gen.text = "x"
try:
    gen.save()
    raise SystemExit("a generation was changed")
except ImmutableGenerationError:
    pass
# The claim statement alone refuses a duplicated id (json_each on SQLite).
conv2 = conversation_ingest(document=validate_document(conversation_document(30, external_id="c2", prefix="q")),
                            actor="t").conversation
(broken,) = conversation_plan(conversation=conv2)
CompactionJob.objects.filter(pk=broken.pk).update(message_ids=broken.message_ids[:19] + [broken.message_ids[0]])
broken.refresh_from_db()
SEGMENTS.shape_problem = lambda job: ""
assert job_claim(job=broken, worker="w", model_id=broken.model_id).attempt is None

# Admission rows: one global slot; a dead holder's row frees itself after its expiry.
import time
from compaction.engine.admission import slot_acquire, slot_release, slots_in_use
assert slot_acquire(holder="dead", lease_seconds=1) == 0
assert slot_acquire(holder="other", lease_seconds=60) is None and slots_in_use() == 1
time.sleep(1.1)
assert slot_acquire(holder="other", lease_seconds=60) == 0
slot_release(number=0, holder="other")
assert slots_in_use() == 0
print("sqlite-ok", Attempt.objects.count(), SummaryGeneration.objects.count())
"""


def test_the_engine_runs_on_the_embedded_sqlite_default(tmp_path):
    assert "sqlite-ok 3 2" in run_on_sqlite(SCRIPT, tmp_path)
