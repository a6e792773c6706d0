CREATE TABLE `discovered_repositories` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`url` text NOT NULL,
	`normalized_url` text NOT NULL,
	`name` text NOT NULL,
	`branch` text,
	`status` text NOT NULL,
	`sightings` text DEFAULT '[]' NOT NULL,
	`repository_id` text,
	`first_seen_at` text NOT NULL,
	`last_seen_at` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `discovered_org_url` ON `discovered_repositories` (`org_id`,`normalized_url`);--> statement-breakpoint
CREATE INDEX `discovered_org_status` ON `discovered_repositories` (`org_id`,`status`,`id`);--> statement-breakpoint
CREATE TABLE `readiness_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`project_id` text NOT NULL,
	`repository_id` text NOT NULL,
	`worker_id` text NOT NULL,
	`status` text NOT NULL,
	`score` integer,
	`checks` text,
	`report` text,
	`error` text,
	`requested_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`finished_at` text,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `readiness_project` ON `readiness_runs` (`project_id`,`id`);--> statement-breakpoint
CREATE INDEX `readiness_worker` ON `readiness_runs` (`worker_id`,`status`);--> statement-breakpoint
CREATE TABLE `worker_repositories` (
	`worker_id` text NOT NULL,
	`repository_id` text NOT NULL,
	`org_id` text NOT NULL,
	`status` text NOT NULL,
	`path` text,
	`error` text,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`worker_id`, `repository_id`),
	FOREIGN KEY (`worker_id`) REFERENCES `workers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`repository_id`) REFERENCES `repositories`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `worker_repositories_repository` ON `worker_repositories` (`repository_id`);--> statement-breakpoint
CREATE TABLE `workers` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`hostname` text DEFAULT '' NOT NULL,
	`labels` text DEFAULT '[]' NOT NULL,
	`policy` text DEFAULT '{}' NOT NULL,
	`credential_hash` text NOT NULL,
	`approved_at` text,
	`approved_by` text,
	`revoked_at` text,
	`paired_by` text,
	`paired_from_ip` text,
	`tools` text DEFAULT '[]' NOT NULL,
	`agents` text DEFAULT '[]' NOT NULL,
	`providers` text DEFAULT '[]' NOT NULL,
	`version` text,
	`capacity` integer DEFAULT 1 NOT NULL,
	`last_seen_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workers_credential_hash_unique` ON `workers` (`credential_hash`);--> statement-breakpoint
CREATE INDEX `workers_org` ON `workers` (`org_id`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_worker_held` ON `tasks` (`worker_id`) WHERE status IN ('running', 'paused', 'needs_input', 'needs_approval');