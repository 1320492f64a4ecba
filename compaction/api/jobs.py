"""Operator actions on one job: re-run, grant an attempt, re-plan (SPEC §1,
§5). Each takes a reason and answers with the audit record of the job it
queued; the action itself is ``compaction.actions``'s."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import actions
from .audits import AuditRecordSerializer, audit_record_of
from .permissions import CanOperate
from .plumbing import ERRORS_WRITE, ReasonSerializer, StrictQueryMixin, act, job_or_404, reason_from
from .throttles import WriteRateThrottle


class _JobActionApi(StrictQueryMixin, APIView):
    """An operator action on one job, with a reason; answers with the audit
    record of the job it queued. Subclasses name the action (one of
    ``actions.do_job_*``) and the schema's operation id."""

    permission_classes = [CanOperate]
    throttle_classes = [WriteRateThrottle]
    parser_classes = [JSONParser]
    operation = None  # (job=, actor=, reason=) -> the job queued

    def post(self, request, job_id: int):
        job = job_or_404(request, job_id)
        reason = reason_from(request)
        queued = act(self.operation, job=job, actor=request.user, reason=reason)
        return Response(audit_record_of(job_or_404(request, queued.pk)), status=status.HTTP_202_ACCEPTED)


def _job_action_schema(operation_id: str):
    return extend_schema_view(post=extend_schema(operation_id=operation_id, request=ReasonSerializer,
                                                 responses={202: AuditRecordSerializer, **ERRORS_WRITE}))


@_job_action_schema("rerun_job")
class JobRerunApi(_JobActionApi):
    """Re-run a failed or exhausted job now (the desk's re-run), with a reason.
    A failed job uses the attempt it has left; an exhausted one gets one more."""

    operation = staticmethod(actions.do_job_rerun)


@_job_action_schema("grant_job_attempt")
class JobGrantAttemptApi(_JobActionApi):
    """Grant one more attempt to a failed or exhausted job (its limit rises by
    one) and run it now, with a reason."""

    operation = staticmethod(actions.do_job_grant_attempt)


@_job_action_schema("replan_job")
class JobReplanApi(_JobActionApi):
    """Bind a range whose source changed to its current source: a new job
    for that range only (current prompt version and model), queued; the old
    job and any summary stay as the record. For a stale job, or a succeeded
    one whose source changed since (``source_valid`` false). Answers with
    the new job's record."""

    operation = staticmethod(actions.do_job_replan)
