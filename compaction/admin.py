from django.contrib import admin

from .models import PromptVersion


@admin.register(PromptVersion)
class PromptVersionAdmin(admin.ModelAdmin):
    """Administrators manage prompt versions (SPEC §1). A version used by a
    job is frozen: its templates cannot change (a changed prompt is a new
    version)."""

    list_display = ("name", "accepted_for_projection", "is_current", "frozen_at")
    readonly_fields = ("frozen_at", "created_at")

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.frozen_at is not None:
            fields += ["name", "family", "version", "system_template", "user_template", "includes_user_text"]
        return fields

    def has_delete_permission(self, request, obj=None):
        return obj is None or (obj.frozen_at is None and not obj.jobs.exists())
