-- Hand-written: a task the GitHub app's webhooks made in an organization other than the one owning
-- the app was, before this version, created by the owner's integration (created_by, source's
-- integrationId and the actor of its events), an id its organization cannot see; it becomes the
-- app's, as such tasks are now made (inbound.ts). The app's tasks are found through inbound_keys,
-- whose primary key holds, under the integration's id, a key of every task a delivery made (each
-- GitHub task has its item's), so a large tasks table is not scanned. Without an app row nothing
-- matches, and a second run finds nothing left to rewrite. The events go first: the tasks' own
-- rows are what marks them as still to do.
WITH `app` AS (
  SELECT a.`slug`, a.`integration_id`, i.`org_id` FROM `codehost_apps` a JOIN `integrations` i ON i.`id` = a.`integration_id` WHERE a.`id` = 'app'
), `moved` AS (
  SELECT t.`id` FROM `app` JOIN `inbound_keys` k ON k.`integration_id` = `app`.`integration_id` JOIN `tasks` t ON t.`id` = k.`task_id`
   WHERE t.`created_by_type` = 'integration' AND t.`created_by_id` = `app`.`integration_id` AND t.`org_id` <> `app`.`org_id`
)
UPDATE `task_events` SET `actor` = (SELECT json_object('type', 'app', 'id', `slug`) FROM `app`)
 WHERE `task_id` IN (SELECT `id` FROM `moved`)
   AND json_extract(`actor`, '$.type') = 'integration' AND json_extract(`actor`, '$.id') = (SELECT `integration_id` FROM `app`);
--> statement-breakpoint
WITH `app` AS (
  SELECT a.`slug`, a.`integration_id`, i.`org_id` FROM `codehost_apps` a JOIN `integrations` i ON i.`id` = a.`integration_id` WHERE a.`id` = 'app'
), `moved` AS (
  SELECT t.`id` FROM `app` JOIN `inbound_keys` k ON k.`integration_id` = `app`.`integration_id` JOIN `tasks` t ON t.`id` = k.`task_id`
   WHERE t.`created_by_type` = 'integration' AND t.`created_by_id` = `app`.`integration_id` AND t.`org_id` <> `app`.`org_id`
)
UPDATE `tasks` SET `created_by_type` = 'app', `created_by_id` = (SELECT `slug` FROM `app`), `source` = json_remove(`source`, '$.integrationId')
 WHERE `id` IN (SELECT `id` FROM `moved`);
