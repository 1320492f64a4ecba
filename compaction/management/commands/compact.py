"""``manage.py compact [--conversation ID] [--wait] [--inline] [--retry-now]``

Plans jobs for every planned range that has none for its current binding
(and, for rolling scopes, asks the trigger for the chain's next hand-off
note, SPEC §7), then enqueues the runnable ones (or, with ``--inline``, runs
them in this process through the same task code). A written hand-off note
plans the next round of its chain; ``--inline`` runs those too and
``--wait`` waits for them. Safe to run several times at once: planning is
idempotent under the binding's unique constraint and claiming is one
conditional UPDATE, so duplicates never make a second attempt.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from django.utils import timezone

from compaction import bindings
from compaction.bindings.handoff import chain_caught_up
from compaction.engine.attempts import attempts_left
from compaction.engine.dispatch import jobs_enqueue
from compaction.models import SETTLED_STATES, CompactionJob, JobState
from conversations.models import Conversation


class Command(BaseCommand):
    help = "Plan compaction jobs and run them (enqueue, --inline, or --wait for the workers)."

    def add_arguments(self, parser):
        parser.add_argument("--conversation", help="a conversation id (or its external id)")
        parser.add_argument("--wait", action="store_true", help="block until the jobs settle, printing outcomes")
        parser.add_argument("--inline", action="store_true", help="run the jobs in this process, no worker needed")
        parser.add_argument("--retry-now", action="store_true",
                            help="also run failed jobs that still have attempts left, without waiting for the retry delay")
        parser.add_argument("--retry-limit", type=int, default=None,
                            help="with --retry-now: retry at most this many failed jobs (oldest first)")
        parser.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits at most")

    def handle(self, *args, conversation=None, wait=False, inline=False, retry_now=False, retry_limit=None,
               timeout=600.0, **options):
        conversations = self._conversations(conversation)
        try:
            runnable_here = bindings.runnable_here()
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        started_at = timezone.now()
        planned = 0
        for conv in conversations:
            planned += len(bindings.conversation_plan(conversation=conv))
        jobs = CompactionJob.objects.filter(conversation__in=conversations) if conversation else CompactionJob.objects.all()
        other = jobs.filter(state__in=(JobState.PENDING, JobState.FAILED)).exclude(runnable_here).count()
        if other:
            self.stderr.write(f"{other} unfinished job(s) are bound to another model than this configuration's "
                              "providers answer as; it cannot run them")
        jobs = jobs.filter(runnable_here)
        self._jobs = jobs
        runnable = list(jobs.filter(state=JobState.PENDING).order_by("conversation_id", "from_pair").values_list("pk", flat=True))
        if retry_now:
            retry = jobs.filter(attempts_left(), state=JobState.FAILED).order_by("updated_at", "pk")
            if retry_limit is not None:
                retry = retry[:retry_limit]
            runnable += list(retry.values_list("pk", flat=True))
        self.stdout.write(f"planned {planned} new job(s); {len(runnable)} to run")
        started = dict(CompactionJob.objects.filter(pk__in=runnable).values_list("pk", "attempts_used"))
        if inline:
            from compaction.tasks import run_job

            done: set[int] = set()
            while runnable:
                for job_id in runnable:
                    result = run_job(job_id, started[job_id])  # the task body, in this process
                    done.add(job_id)
                    self._print_outcome(CompactionJob.objects.get(pk=job_id), note=result.get("detail") or "")
                # What the written generations planned (a rolling chain's next rounds).
                following = self._following(started_at, exclude=done).filter(state=JobState.PENDING)
                started = dict(following.values_list("pk", "attempts_used"))
                runnable = sorted(started)
            return
        jobs_enqueue(runnable)
        if wait:
            self._wait(started, timeout, started_at=started_at)

    def _conversations(self, ident):
        if ident is None:
            return list(Conversation.objects.order_by("pk"))
        found = Conversation.objects.filter(pk=int(ident)) if str(ident).isdigit() else Conversation.objects.none()
        if not found.exists():
            found = Conversation.objects.filter(external_id=ident)
        if found.count() != 1:
            raise CommandError(f"no single conversation with id or external id {ident!r}")
        return list(found)

    def _following(self, started_at, *, exclude):
        """Jobs created since this command started (planned after a written
        generation: a rolling chain's next round) that it has not seen yet."""
        return self._jobs.filter(created_at__gte=started_at).exclude(pk__in=exclude)

    def _wait(self, started: dict[int, int], timeout, *, started_at):
        """Until each job has left pending/running after the attempt it was
        sent for (a retried failed job must show a newer attempt), and the
        jobs their generations planned have settled too."""
        started = dict(started)
        pending = set(started)
        deadline = time.monotonic() + timeout
        while True:
            for job in CompactionJob.objects.filter(pk__in=pending, state__in=SETTLED_STATES).select_related("conversation"):
                if job.state == JobState.FAILED and job.attempts_used <= started[job.pk]:
                    continue
                self._print_outcome(job)
                pending.discard(job.pk)
            for job_id, used in self._following(started_at, exclude=started).values_list("pk", "attempts_used"):
                started[job_id] = -1  # any attempt it makes is one this command waits for
                pending.add(job_id)
            if not pending and chain_caught_up(self._jobs, since=started_at):
                break
            if time.monotonic() > deadline:
                raise CommandError(f"{len(pending)} job(s) did not settle within {timeout:g}s "
                                   "(is a worker running? see README: Compaction engine)")
            time.sleep(0.25)

    def _print_outcome(self, job, note=""):
        conv = job.conversation
        line = f"job {job.pk} {conv.scope}/{conv.external_id} [{job.from_pair}-{job.to_pair}] {job.state}"
        if job.state == JobState.SUCCEEDED:
            gen = getattr(job, "generation", None)
            line += f" generation #{gen.number}" if gen else ""
        elif job.last_failure_code:
            line += f" ({job.last_failure_code}, attempt {job.attempts_used}/{job.max_attempts})"
        elif note:
            line += f" ({note})"
        self.stdout.write(line)
