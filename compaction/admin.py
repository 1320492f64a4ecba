from django.contrib import admin

from .actions import do_scope_policy_set
from .models import PromptVersion, ScopePolicy
from .models.policies import THRESHOLD_FIELDS


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


@admin.register(ScopePolicy)
class ScopePolicyAdmin(admin.ModelAdmin):
    """Administrators choose each scope's policy and thresholds (SPEC §7).
    The form validates them with the trigger's own rules (an error names
    the field); saving goes through ``actions.do_scope_policy_set``, so the
    change is in the activity log with its before and after. A scope
    without a row follows segments; set it back instead of deleting it."""

    list_display = ("scope", "policy", *THRESHOLD_FIELDS, "updated_at")
    list_filter = ("policy",)
    search_fields = ("scope",)
    readonly_fields = ("updated_at",)

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        return fields + ["scope"] if obj is not None else fields

    def save_model(self, request, obj, form, change):
        saved = do_scope_policy_set(scope=obj.scope, actor=request.user, reason="changed in the Django admin",
                                    policy=obj.policy, **obj.threshold_values())
        obj.pk = saved.pk

    def has_delete_permission(self, request, obj=None):
        return False
