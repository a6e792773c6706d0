DROP INDEX `tasks_queue`;--> statement-breakpoint
CREATE INDEX `tasks_queue` ON `tasks` (`org_id`,`priority_rank`,`id`) WHERE status = 'queued';