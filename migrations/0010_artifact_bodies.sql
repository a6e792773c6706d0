CREATE TABLE `artifact_bodies` (
	`id` text PRIMARY KEY NOT NULL,
	`task_id` text NOT NULL,
	`stored` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `artifact_bodies_task` ON `artifact_bodies` (`task_id`);--> statement-breakpoint
CREATE INDEX `artifact_bodies_unstored` ON `artifact_bodies` (`created_at`) WHERE stored = 0;--> statement-breakpoint
CREATE TABLE `artifact_chunks` (
	`body_id` text NOT NULL,
	`n` integer NOT NULL,
	`data` blob NOT NULL,
	PRIMARY KEY(`body_id`, `n`),
	FOREIGN KEY (`body_id`) REFERENCES `artifact_bodies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `artifacts` ADD `body_id` text;