from django.contrib import admin

from .models import Conversation, ScopeGrant, TokenScope


@admin.register(ScopeGrant)
class ScopeGrantAdmin(admin.ModelAdmin):
    list_display = ("user", "scope")
    list_filter = ("scope",)
    search_fields = ("user__username", "scope")


@admin.register(TokenScope)
class TokenScopeAdmin(admin.ModelAdmin):
    list_display = ("token", "scopes")


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    """Read-only here: conversations change only through ingest."""

    list_display = ("scope", "external_id", "title", "pair_count", "updated_at")
    list_filter = ("scope",)
    search_fields = ("external_id",)
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
