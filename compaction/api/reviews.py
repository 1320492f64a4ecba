"""``POST /api/v1/reviews/``: a verdict on a job's summary (SPEC §1, §11).
The verdict is bound to the job's generation (the summary it judged); a job
without one answers ``409 no_summary``. The note is the reason and follows
the one rule of ``actions.note_checked`` (required, trimmed, at most
``REASON_MAX_CHARS`` characters), as on the desk."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import actions
from ..models import Verdict
from .permissions import CanReview
from ..actions import REASON_MAX_CHARS
from ..keyset import MAX_ID
from .plumbing import (ERRORS_WRITE, ApiError, StrictCharField, StrictIntegerField,
                       StrictQueryMixin, act, job_or_404)
from .throttles import WriteRateThrottle


class ReviewSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    job = serializers.IntegerField()
    generation = serializers.IntegerField(help_text="the generation (summary) judged")
    verdict = serializers.ChoiceField(choices=Verdict.values)
    reviewer = serializers.CharField()
    note = serializers.CharField()
    created_at = serializers.DateTimeField()
    cited_findings = serializers.ListField(child=serializers.IntegerField(),
                                           help_text="the drift findings of the note this verdict cites")


TOO_LONG = f"{actions.NOTE} is at most {REASON_MAX_CHARS} characters"


class ReviewInputSerializer(serializers.Serializer):
    job = StrictIntegerField(min_value=1, max_value=MAX_ID, help_text="the job's id")
    verdict = serializers.ChoiceField(choices=Verdict.values)
    note = StrictCharField(required=False, allow_blank=True, max_length=REASON_MAX_CHARS,
                           error_messages={"max_length": TOO_LONG},
                           help_text="why this verdict, shown beside the summary; this or `reason` is required "
                                     f"(trimmed, at most {REASON_MAX_CHARS} characters)")
    reason = StrictCharField(required=False, allow_blank=True, max_length=REASON_MAX_CHARS,
                             error_messages={"max_length": TOO_LONG},
                             help_text="the same as `note` (the name the other actions use); give one of them")
    cited_findings = serializers.ListField(
        child=StrictIntegerField(min_value=1, max_value=MAX_ID), required=False, max_length=1000,
        help_text="ids of drift findings of the judged hand-off note (SPEC §8) the verdict cites")

    def validate(self, data):
        # One of the two names, never both: the schema can say that (oneOf),
        # not "both, when they agree".
        if "note" in data and "reason" in data:
            raise serializers.ValidationError({"reason": ["give the note once: as `note` or as `reason`"]})
        data["note"] = data.get("note", data.get("reason", "")).strip()
        return data


class ReviewCreateApi(StrictQueryMixin, APIView):
    """Record a verdict on a job's summary, bound to its generation. The note
    is the reason and is required; the newest verdict that stands is the
    summary's current one (a summary replaced by a newer generation, or whose
    source changed after its verdict, is unreviewed again). `409 no_summary`
    when the job has no summary; `409 superseded` when another job's summary
    counts for the range now."""

    permission_classes = [CanReview]
    throttle_classes = [WriteRateThrottle]
    parser_classes = [JSONParser]

    @extend_schema(operation_id="create_review", request=ReviewInputSerializer,
                   responses={201: ReviewSerializer, **ERRORS_WRITE})
    def post(self, request):
        serializer = ReviewInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            # The action checks it too; here first, so a body without one is a 400 before any lookup.
            actions.note_checked(data["note"])
        except actions.ActionRefused as exc:
            raise ApiError(code=exc.code, message=f"reason: {exc.message}",
                           errors={"note": [exc.message], "reason": [exc.message]}) from None
        job = job_or_404(request, data["job"])
        review = act(actions.do_review_record, job=job, reviewer=request.user, verdict=data["verdict"],
                     note=data["note"], cited_findings=data.get("cited_findings", ()))
        body = {
            "id": review.pk,
            "job": review.job_id,
            "generation": review.generation_id,
            "verdict": review.verdict,
            "reviewer": request.user.get_username(),
            "note": review.note,
            "created_at": review.created_at,
            "cited_findings": sorted(review.cited_findings.values_list("pk", flat=True)),
        }
        return Response(ReviewSerializer(body).data, status=status.HTTP_201_CREATED)
