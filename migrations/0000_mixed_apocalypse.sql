CREATE TABLE `api_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`role` text NOT NULL,
	`token_hash` text NOT NULL,
	`last_four` text NOT NULL,
	`expires_at` text,
	`last_used_at` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_tokens_token_hash_unique` ON `api_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `api_tokens_user` ON `api_tokens` (`user_id`);--> statement-breakpoint
CREATE TABLE `device_grants` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`device_code_hash` text NOT NULL,
	`user_code` text NOT NULL,
	`status` text NOT NULL,
	`client_name` text,
	`worker_name` text,
	`hostname` text,
	`labels` text,
	`request_ip` text,
	`interval_sec` integer NOT NULL,
	`last_polled_at` integer,
	`expires_at` integer NOT NULL,
	`decided_by` text,
	`org_id` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `device_grants_device_code_hash_unique` ON `device_grants` (`device_code_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `device_grants_user_code` ON `device_grants` (`user_code`);--> statement-breakpoint
CREATE TABLE `memberships` (
	`org_id` text NOT NULL,
	`user_id` text NOT NULL,
	`role` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`org_id`, `user_id`),
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `memberships_user` ON `memberships` (`user_id`);--> statement-breakpoint
CREATE TABLE `orgs` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`require_worker_approval` integer DEFAULT false NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `recovery_codes` (
	`user_id` text NOT NULL,
	`code_hash` text NOT NULL,
	`used_at` text,
	PRIMARY KEY(`user_id`, `code_hash`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `refresh_tokens` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`used_at` text,
	`expires_at` integer NOT NULL,
	`created_at` text NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `refresh_tokens_session` ON `refresh_tokens` (`session_id`);--> statement-breakpoint
CREATE TABLE `sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`client` text NOT NULL,
	`revoked_at` text,
	`revoked_reason` text,
	`created_at` text NOT NULL,
	`last_used_at` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `sessions_user` ON `sessions` (`user_id`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`email` text NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`password_hash` text NOT NULL,
	`is_admin` integer DEFAULT false NOT NULL,
	`totp_secret_sealed` text,
	`totp_enabled` integer DEFAULT false NOT NULL,
	`totp_last_step` integer DEFAULT 0 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_email_unique` ON `users` (`email`);--> statement-breakpoint
CREATE TABLE `artifacts` (
	`task_id` text NOT NULL,
	`name` text NOT NULL,
	`content_type` text NOT NULL,
	`size` integer NOT NULL,
	`etag` text NOT NULL,
	`attempt` integer DEFAULT 0 NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`task_id`, `name`),
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `projects` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`knowledge` text DEFAULT '' NOT NULL,
	`policy` text DEFAULT '{}' NOT NULL,
	`archived` integer DEFAULT false NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `projects_org` ON `projects` (`org_id`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `projects_org_name_live` ON `projects` (`org_id`,`name`) WHERE archived = 0;--> statement-breakpoint
CREATE TABLE `repositories` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`project_id` text NOT NULL,
	`url` text NOT NULL,
	`name` text NOT NULL,
	`branch` text DEFAULT 'main' NOT NULL,
	`is_primary` integer DEFAULT false NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `repositories_project` ON `repositories` (`project_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `repositories_project_url` ON `repositories` (`project_id`,`url`);--> statement-breakpoint
CREATE UNIQUE INDEX `repositories_one_primary` ON `repositories` (`project_id`) WHERE is_primary = 1;--> statement-breakpoint
CREATE TABLE `task_events` (
	`task_id` text NOT NULL,
	`seq` integer NOT NULL,
	`type` text NOT NULL,
	`at` text NOT NULL,
	`actor` text,
	`data` text,
	`attempt` integer,
	`worker_seq` integer,
	PRIMARY KEY(`task_id`, `seq`),
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `task_events_worker_seq` ON `task_events` (`task_id`,`attempt`,`worker_seq`);--> statement-breakpoint
CREATE TABLE `tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`project_id` text NOT NULL,
	`title` text NOT NULL,
	`prompt` text NOT NULL,
	`priority` text NOT NULL,
	`priority_rank` integer NOT NULL,
	`kind` text NOT NULL,
	`review` text,
	`status` text NOT NULL,
	`paused_from` text,
	`attempt` integer DEFAULT 0 NOT NULL,
	`worker_id` text,
	`lease_token_hash` text,
	`parent_id` text,
	`plan_index` integer,
	`created_by_type` text NOT NULL,
	`created_by_id` text NOT NULL,
	`summary` text,
	`needs` text,
	`plan` text,
	`source` text,
	`last_seq` integer DEFAULT 0 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`started_at` text,
	`finished_at` text,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `tasks_org` ON `tasks` (`org_id`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_org_status` ON `tasks` (`org_id`,`status`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_org_project` ON `tasks` (`org_id`,`project_id`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_org_kind` ON `tasks` (`org_id`,`kind`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_org_parent` ON `tasks` (`org_id`,`parent_id`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_queue` ON `tasks` (`priority_rank`,`id`) WHERE status = 'queued';--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_plan_child` ON `tasks` (`parent_id`,`plan_index`);