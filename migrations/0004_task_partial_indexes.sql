DROP INDEX `task_events_worker_seq`;--> statement-breakpoint
CREATE UNIQUE INDEX `task_events_worker_seq` ON `task_events` (`task_id`,`attempt`,`worker_seq`) WHERE worker_seq IS NOT NULL;--> statement-breakpoint
DROP INDEX `tasks_org_parent`;--> statement-breakpoint
DROP INDEX `tasks_plan_child`;--> statement-breakpoint
CREATE INDEX `tasks_org_parent` ON `tasks` (`org_id`,`parent_id`,`id`) WHERE parent_id IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_plan_child` ON `tasks` (`parent_id`,`plan_index`) WHERE parent_id IS NOT NULL;