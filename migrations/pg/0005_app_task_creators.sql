-- Hand-written, as migrations/0014_app_task_creators.sql: a task the GitHub app's webhooks made in
-- an organization other than the one owning the app becomes the app's (created_by, source without
-- integrationId, the actor of its events that named the owner's integration), found through
-- inbound_keys' primary key rather than a scan of tasks; without an app nothing matches, and a
-- second run finds nothing left. The actor is written as the server writes it (JSON.stringify).
WITH "app" AS (
  SELECT a."slug", a."integration_id", i."org_id" FROM "codehost_apps" a JOIN "integrations" i ON i."id" = a."integration_id" WHERE a."id" = 'app'
), "moved" AS (
  SELECT t."id" FROM "app" JOIN "inbound_keys" k ON k."integration_id" = "app"."integration_id" JOIN "tasks" t ON t."id" = k."task_id"
   WHERE t."created_by_type" = 'integration' AND t."created_by_id" = "app"."integration_id" AND t."org_id" <> "app"."org_id"
)
UPDATE "task_events" SET "actor" = (SELECT '{"type":"app","id":' || to_json("slug")::text || '}' FROM "app")
 WHERE "task_id" IN (SELECT "id" FROM "moved")
   AND "actor"::jsonb @> (SELECT jsonb_build_object('type', 'integration', 'id', "integration_id") FROM "app");
--> statement-breakpoint
WITH "app" AS (
  SELECT a."slug", a."integration_id", i."org_id" FROM "codehost_apps" a JOIN "integrations" i ON i."id" = a."integration_id" WHERE a."id" = 'app'
), "moved" AS (
  SELECT t."id" FROM "app" JOIN "inbound_keys" k ON k."integration_id" = "app"."integration_id" JOIN "tasks" t ON t."id" = k."task_id"
   WHERE t."created_by_type" = 'integration' AND t."created_by_id" = "app"."integration_id" AND t."org_id" <> "app"."org_id"
)
UPDATE "tasks" SET "created_by_type" = 'app', "created_by_id" = (SELECT "slug" FROM "app"), "source" = ("source"::jsonb - 'integrationId')::text
 WHERE "id" IN (SELECT "id" FROM "moved");
