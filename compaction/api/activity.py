"""``GET /api/v1/activity/``: the log of every human action, newest first."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView

from .. import activity
from .filters import ActivityFilter
from .permissions import CanRead
from ..keyset import ID, TIME, Keyset
from .plumbing import ERRORS_READ, PAGE_PARAMS, KeysetPagination, ListSchema, StrictFilterBackend, StrictQueryMixin


class ActivitySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    actor = serializers.CharField(allow_null=True, help_text="username; null for the system")
    actor_label = serializers.CharField(allow_blank=True)
    action = serializers.CharField()
    target_type = serializers.CharField()
    target_id = serializers.CharField()
    scope = serializers.CharField(allow_blank=True)
    conversation = serializers.IntegerField(allow_null=True)
    job = serializers.IntegerField(allow_null=True)
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    reason = serializers.CharField(allow_blank=True)


class ActivityPageSerializer(serializers.Serializer):
    next = serializers.URLField(allow_null=True)
    next_cursor = serializers.CharField(allow_null=True)
    results = ActivitySerializer(many=True)


# The log is read from the newest event.
ACTIVITY = Keyset("activity", ("-created_at", "-id"), (TIME, ID))


class ActivityListApi(StrictQueryMixin, GenericAPIView):
    """The log of every manual action (AuditEvent), newest first."""

    permission_classes = [CanRead]
    filter_backends = [StrictFilterBackend]
    filterset_class = ActivityFilter
    allowed_query_params = KeysetPagination.query_params
    schema = ListSchema()

    def get_queryset(self):
        return activity.activity_events(user=self.request.user).select_related("actor")

    @extend_schema(operation_id="list_activity", parameters=PAGE_PARAMS,
                   responses={200: ActivityPageSerializer, **ERRORS_READ})
    def get(self, request):
        paginator = KeysetPagination(ACTIVITY)
        events = paginator.paginate(self.filter_queryset(self.get_queryset()), request)
        return paginator.response([activity.activity_record(e) for e in events])
