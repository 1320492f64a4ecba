-- The application's database role (README: Database roles). Run as the
-- owner role after every `migrate`:
--   psql "$OWNER_DATABASE_URL" -v app=compaction_app -f compaction/config/app_role.sql
-- The application may read and write its rows, never change the schema,
-- never TRUNCATE anything, never UPDATE or DELETE a summary generation, and
-- never DELETE a prompt version (it may UPDATE one: a worker freezes a version
-- on its first use, and the frozen-prompt trigger refuses any other change).
-- The immutability triggers guard rows; TRUNCATE would pass them by, so the
-- role is not given it.
GRANT USAGE ON SCHEMA public TO :"app";
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO :"app";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO :"app";
REVOKE TRUNCATE ON ALL TABLES IN SCHEMA public FROM :"app";
REVOKE UPDATE, DELETE ON compaction_summarygeneration FROM :"app";
REVOKE DELETE ON compaction_promptversion FROM :"app";
