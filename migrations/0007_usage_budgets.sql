CREATE TABLE `task_usage` (
	`task_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`day` text NOT NULL,
	`org_id` text NOT NULL,
	`project_id` text NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`cache_read_tokens` integer DEFAULT 0 NOT NULL,
	`cache_write_tokens` integer DEFAULT 0 NOT NULL,
	`cost_usd` real DEFAULT 0 NOT NULL,
	`model` text,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`task_id`, `attempt`, `day`),
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `task_usage_project_day` ON `task_usage` (`project_id`,`day`);--> statement-breakpoint
ALTER TABLE `tasks` ADD `agent` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `budget_usd` real;