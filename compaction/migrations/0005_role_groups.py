"""The Django groups that carry the roles of SPEC §1."""

from django.db import migrations

ROLES = ("support", "operator", "integrator")


def create_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)


class Migration(migrations.Migration):
    dependencies = [("compaction", "0004_prompt_versions"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(create_groups, migrations.RunPython.noop)]
