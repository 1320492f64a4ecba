"""Load the demo conversations and demo users (SPEC §8: ``seed_demo``).

Thin: the conversations and how they are loaded live in
``conversations.demo``, the demo users in ``compaction.access``; this
command picks the options and prints what happened.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from compaction.access import demo_users_ensure
from compaction.actions import do_scope_policy_set
from compaction.models import Policy
from conversations.demo import ROLLING_POLICIES, demo_scopes
from conversations.demo.loader import demo_conversations_load


class Command(BaseCommand):
    help = (
        "Load seven demo conversations (Chinese, English, mixed; 40-130 pairs each) through the real ingest "
        "path (the scopes device-repair and airline-support set to the rolling hand-off policy), plus the demo users admin, operator, support and integrator (with an API token). Idempotent: "
        "running it again changes nothing. One answer near the end of the insurance conversation is always "
        "sent twice (original, then edited) so the desk shows a message revision. "
        "--edit-after-compaction additionally sends the edited version of an answer inside the FIRST planned "
        "segment of cn-fund-research (pair 2) and one inside the second hand-off generation of cn-airpods-repair "
        "(pair 19); run it after `compact` to see that segment's summary turn stale and that chain break and be "
        "re-planned. "
        "Plain seed_demo never sends that edit and never undoes it."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--edit-after-compaction",
            action="store_true",
            help="also ingest the later version of pair 2's answer in cn-fund-research (first planned segment), "
                 "so a summary made before it becomes stale",
        )
        parser.add_argument(
            "--allow-demo-users",
            action="store_true",
            help="create the demo users (publicly known passwords) even when DJANGO_DEBUG is off",
        )
        parser.add_argument(
            "--base-url",
            default="http://127.0.0.1:8000",
            help="where the desk is served, for the printed curl example (./scripts/demo passes its PORT)",
        )

    def handle(self, *args, **options):
        for scope, thresholds in ROLLING_POLICIES.items():
            # Before the conversations, so their ingest already plans by the policy.
            policy = do_scope_policy_set(scope=scope, actor="seed_demo", reason="the demo's rolling scopes",
                                         policy=Policy.ROLLING, **thresholds)
            self.stdout.write(f"scope {policy.scope}: {policy.policy} hand-off notes")
        loaded = demo_conversations_load(edit_after_compaction=options["edit_after_compaction"])
        total_pairs = total_segments = 0
        for item in loaded:
            conv = item.result.conversation
            if item.result.created:
                verb = "created"
            elif item.result.changed or item.edits_applied:
                verb = "updated"
            else:
                verb = "unchanged"
            edits = f", {item.edits_applied} edit(s) applied" if item.edits_applied else ""
            self.stdout.write(
                f"{verb:9} {conv.scope}/{conv.external_id}: {conv.pair_count} pairs, "
                f"{conv.segment_count} planned segments, {conv.message_count} messages{edits}"
            )
            total_pairs += conv.pair_count
            total_segments += conv.segment_count
        self.stdout.write(
            f"{len(loaded)} conversations, {total_pairs} pairs, {total_segments} planned segments"
        )

        if not (settings.DEBUG or options["allow_demo_users"]):
            self.stdout.write(
                "Demo users NOT created: their passwords are printed in the README and this output, so they are "
                "only made when DJANGO_DEBUG is on or --allow-demo-users is given."
            )
            return
        tokens = []
        for demo in demo_users_ensure(scopes=demo_scopes()):
            user = demo.user
            role = "staff" if user.is_staff else ", ".join(user.groups.values_list("name", flat=True))
            state = "created" if demo.created else "exists (password left as it is)"
            line = f"user {user.username} / {demo.password} ({role}): {state}"
            if demo.token:
                line += f"; API token: {demo.token}"
                tokens.append((user.username, demo.token))
            self.stdout.write(line)
        self.stdout.write(f"demo users may see scopes: {', '.join(demo_scopes())}")
        # Last, so it is what stays on screen (./scripts/demo reads it for its banner).
        for username, token in tokens:
            self.stdout.write(f"{username} API token: {token}")
            self.stdout.write(f"  curl -H 'Authorization: Token {token}' {options['base_url'].rstrip('/')}/api/v1/conversations/")
