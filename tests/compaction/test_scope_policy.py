"""A scope's policy (SPEC §7): segments by default, or rolling hand-off
notes with the eight thresholds of seed 002 §12 — set with
``manage.py scope_policy`` or in the admin, validated with one rule (an
error names the field), recorded in the activity log with before and
after."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from compaction.actions import ActionRefused, AuditAction, do_scope_policy_set
from compaction.handoff.trigger import DEFAULT_THRESHOLDS, RollingThresholds
from compaction.models import AuditEvent, HandoffCheck, PromptVersion, ScopePolicy
from compaction.policies import is_rolling, rolling_scopes, thresholds_for
from tests.factories import admin_client, run_command

pytestmark = pytest.mark.django_db

COMMAND_LINE = ["scope_policy", "acme", "--policy", "rolling", "--recent-turns", "4", "--min-new-token-count", "5000",
                "--context-window-tokens", "32000", "--trigger-ratio", "0.8", "--min-new-message-count", "6",
                "--min-compact-message-count", "8", "--max-compaction-batch-messages", "120",
                "--max-rounds-per-request", "12"]


def test_a_scope_without_a_policy_follows_segments_with_the_default_thresholds():
    assert not is_rolling("acme") and rolling_scopes() == set()
    assert thresholds_for("acme") == DEFAULT_THRESHOLDS == RollingThresholds()


def test_the_command_sets_the_policy_and_all_eight_thresholds():
    out, err, failed = run_command(*COMMAND_LINE)
    assert failed is None, err
    row = ScopePolicy.objects.get(scope="acme")
    assert row.thresholds() == RollingThresholds(recent_turns=4, min_new_token_count=5000, context_window_tokens=32000,
                                                 trigger_ratio=0.8, min_new_message_count=6,
                                                 min_compact_message_count=8, max_compaction_batch_messages=120,
                                                 max_rounds_per_request=12)
    assert is_rolling("acme") and "acme: rolling (changed)" in out and "trigger_ratio = 0.8" in out


def test_thresholds_not_given_keep_their_stored_values():
    run_command(*COMMAND_LINE)
    out, err, failed = run_command("scope_policy", "acme", "--policy", "segments")
    assert failed is None
    row = ScopePolicy.objects.get(scope="acme")
    assert row.policy == "segments" and row.recent_turns == 4 and row.max_rounds_per_request == 12


@pytest.mark.parametrize("args, field", [
    (["--trigger-ratio", "0"], "trigger_ratio"),
    (["--trigger-ratio", "1.5"], "trigger_ratio"),
    (["--trigger-ratio", "-0.2"], "trigger_ratio"),
    (["--recent-turns", "-1"], "recent_turns"),
    (["--min-new-token-count", "-5"], "min_new_token_count"),
    (["--context-window-tokens", "0"], "context_window_tokens"),
    (["--min-new-message-count", "-3"], "min_new_message_count"),
    (["--min-compact-message-count", "-1"], "min_compact_message_count"),
    (["--max-compaction-batch-messages", "1"], "max_compaction_batch_messages"),
    (["--max-compaction-batch-messages", "8"], "max_compaction_batch_messages"),  # under min_compact (10)
    (["--max-rounds-per-request", "0"], "max_rounds_per_request"),
])
def test_a_threshold_that_cannot_be_used_is_refused_with_the_field_named_and_nothing_changes(args, field):
    out, err, failed = run_command("scope_policy", "acme", "--policy", "rolling", *args)
    assert failed is not None and str(failed).startswith(f"{field}:"), failed
    assert not ScopePolicy.objects.filter(scope="acme").exists()
    assert not AuditEvent.objects.filter(action=AuditAction.SCOPE_POLICY_SET).exists()


def test_an_unknown_policy_is_refused():
    out, err, failed = run_command("scope_policy", "acme", "--policy", "sometimes")
    assert failed is not None and "invalid choice" in str(failed)


def test_every_change_is_in_the_activity_log_with_before_and_after():
    run_command("scope_policy", "acme", "--policy", "rolling")
    run_command("scope_policy", "acme", "--policy", "rolling", "--recent-turns", "3")
    first, second = AuditEvent.objects.filter(action=AuditAction.SCOPE_POLICY_SET).order_by("pk")
    assert (first.target_type, first.target_id, first.scope, first.before) == ("scope", "acme", "acme", None)
    assert first.after == {"policy": "rolling", **DEFAULT_THRESHOLDS.as_dict()}
    assert second.before == first.after
    assert second.after == {**first.after, "recent_turns": 3}
    assert second.actor_label == "manage.py scope_policy" and second.reason


def test_setting_what_is_already_set_writes_nothing():
    run_command(*COMMAND_LINE)
    out, _, _ = run_command(*COMMAND_LINE)
    assert "(unchanged)" in out
    assert AuditEvent.objects.filter(action=AuditAction.SCOPE_POLICY_SET).count() == 1


def test_a_change_has_the_scopes_rolling_conversations_asked_again():
    from tests.compaction.bindings.rolling import ingest, rolling_document

    do_scope_policy_set(scope="acme", actor="t", reason="r", policy="rolling")
    conversation = ingest(rolling_document(20, scope="acme"))
    HandoffCheck.objects.create(conversation=conversation, pair_count=20, decision="below_thresholds")
    do_scope_policy_set(scope="acme", actor="t", reason="r", min_new_token_count=10)
    assert not HandoffCheck.objects.filter(conversation=conversation).exists()


def test_the_action_requires_a_reason_and_names_unknown_thresholds():
    with pytest.raises(ActionRefused) as refused:
        do_scope_policy_set(scope="acme", actor="t", reason=" ", policy="rolling")
    assert refused.value.code == "reason_required"
    with pytest.raises(ActionRefused) as refused:
        do_scope_policy_set(scope="acme", actor="t", reason="r", recent_turn=3)
    assert refused.value.message.startswith("recent_turn:")


def admin_form(**changes):
    values = {"scope": "acme", "policy": "rolling", **DEFAULT_THRESHOLDS.as_dict()}
    values.update(changes)
    return values


def test_the_admin_sets_a_policy_through_the_action_so_it_is_logged():
    client, user = admin_client()
    response = client.post("/admin/compaction/scopepolicy/add/", admin_form(recent_turns=2))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert ScopePolicy.objects.get(scope="acme").recent_turns == 2
    event = AuditEvent.objects.get(action=AuditAction.SCOPE_POLICY_SET)
    assert event.actor == user and event.after["recent_turns"] == 2


@pytest.mark.parametrize("field, value", [("trigger_ratio", "1.2"), ("max_rounds_per_request", "0"),
                                          ("max_compaction_batch_messages", "4")])
def test_the_admin_refuses_a_threshold_that_cannot_be_used_on_its_field(field, value):
    client, _ = admin_client()
    response = client.post("/admin/compaction/scopepolicy/add/", admin_form(**{field: value}))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert field in errors, errors
    assert not ScopePolicy.objects.exists() and not AuditEvent.objects.exists()


def test_the_admin_lists_policies_and_does_not_delete_them():
    client, _ = admin_client()
    do_scope_policy_set(scope="acme", actor="t", reason="r", policy="rolling")
    page = client.get("/admin/compaction/scopepolicy/")
    assert page.status_code == 200 and b"acme" in page.content
    row = ScopePolicy.objects.get(scope="acme")
    assert client.post(f"/admin/compaction/scopepolicy/{row.pk}/delete/", {"post": "yes"}).status_code == 403


def test_the_handoff_prompt_version_is_stored_frozen_text_of_the_prompt_module():
    import importlib

    from compaction.handoff import prompt

    migration = importlib.import_module("compaction.migrations.0014_handoff_prompt_version")
    row = PromptVersion.objects.get(name="handoff@1")
    assert row.system_template == migration.SYSTEM_TEMPLATE == prompt.SYSTEM_TEMPLATE
    assert row.user_template == migration.USER_TEMPLATE == prompt.USER_TEMPLATE
    assert (row.family, row.version, row.includes_user_text, row.accepted_for_projection, row.is_current) == (
        "handoff", 1, True, True, True)
    assert {k: v for k, v in migration.VERSION.items() if k in prompt.PROMPT_VERSION_SPEC} == \
        prompt.PROMPT_VERSION_SPEC


def test_call_command_takes_the_exact_spec_command_line():
    call_command(*COMMAND_LINE)
    assert ScopePolicy.objects.get(scope="acme").max_compaction_batch_messages == 120
