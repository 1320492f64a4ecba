"""``manage.py scope_policy SCOPE --policy rolling|segments [--recent-turns N]
[--min-new-token-count N] [--context-window-tokens N] [--trigger-ratio X]
[--min-new-message-count N] [--min-compact-message-count N]
[--max-compaction-batch-messages N] [--max-rounds-per-request N]`` (SPEC §7).

Thin: ``actions.do_scope_policy_set`` validates (one home: the trigger's
``RollingThresholds``; an error names the field) and writes the change with
its before and after to the activity log. Thresholds not given keep their
stored values (the seed 002 §12 defaults for a new scope).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from compaction.actions import ActionRefused, do_scope_policy_set
from compaction.handoff.trigger import RollingThresholds
from compaction.models import Policy, ScopePolicy

ACTOR = "manage.py scope_policy"


class Command(BaseCommand):
    help = "Set a scope's compaction policy (segments, the default, or rolling hand-off notes) and its thresholds."

    def add_arguments(self, parser):
        parser.add_argument("scope")
        parser.add_argument("--policy", required=True, choices=Policy.values)
        for name in RollingThresholds.field_names():
            kind = float if name == "trigger_ratio" else int
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, default=None,
                                metavar="X" if kind is float else "N")

    def handle(self, *args, scope, policy, **options):
        thresholds = {name: options[name] for name in RollingThresholds.field_names() if options.get(name) is not None}
        before = ScopePolicy.objects.filter(scope=scope).first()
        try:
            row = do_scope_policy_set(scope=scope, actor=ACTOR, reason=f"set with {ACTOR}", policy=policy,
                                      **thresholds)
        except ActionRefused as exc:
            raise CommandError(exc.message) from exc
        changed = before is None or before.snapshot() != row.snapshot()
        self.stdout.write(f"{row.scope}: {row.policy} ({'changed' if changed else 'unchanged'})")
        for name, value in row.threshold_values().items():
            self.stdout.write(f"  {name} = {value}")
