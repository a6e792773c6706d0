CREATE TABLE `codehost_apps` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`integration_id` text NOT NULL,
	`app_id` integer NOT NULL,
	`slug` text NOT NULL,
	`name` text NOT NULL,
	`html_url` text NOT NULL,
	`client_id` text NOT NULL,
	`client_secret_sealed` text NOT NULL,
	`webhook_secret_sealed` text NOT NULL,
	`private_key_sealed` text NOT NULL,
	`created_by` text NOT NULL,
	`created_at` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`integration_id`) REFERENCES `integrations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `codehost_connections` (
	`user_id` text PRIMARY KEY NOT NULL,
	`login` text NOT NULL,
	`github_user_id` integer NOT NULL,
	`token_sealed` text NOT NULL,
	`refresh_token_sealed` text,
	`expires_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `codehost_installations` (
	`id` integer PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`account_login` text NOT NULL,
	`account_type` text NOT NULL,
	`account_id` integer NOT NULL,
	`repository_selection` text NOT NULL,
	`suspended` integer DEFAULT false NOT NULL,
	`synced_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `codehost_installations_org` ON `codehost_installations` (`org_id`,`id`);--> statement-breakpoint
CREATE TABLE `codehost_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`task_id` text NOT NULL,
	`kind` text NOT NULL,
	`payload` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`last_error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `codehost_jobs_due` ON `codehost_jobs` (`next_attempt_at`) WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX `codehost_jobs_task` ON `codehost_jobs` (`task_id`,`kind`);--> statement-breakpoint
CREATE TABLE `codehost_repositories` (
	`installation_id` integer NOT NULL,
	`id` integer NOT NULL,
	`org_id` text NOT NULL,
	`full_name` text NOT NULL,
	`private` integer NOT NULL,
	`clone_url` text NOT NULL,
	`html_url` text NOT NULL,
	`default_branch` text NOT NULL,
	`url_key` text NOT NULL,
	`synced_at` text NOT NULL,
	PRIMARY KEY(`installation_id`, `id`),
	FOREIGN KEY (`installation_id`) REFERENCES `codehost_installations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `codehost_repositories_org_name` ON `codehost_repositories` (`org_id`,`full_name`);--> statement-breakpoint
CREATE INDEX `codehost_repositories_org_url` ON `codehost_repositories` (`org_id`,`url_key`);--> statement-breakpoint
CREATE TABLE `codehost_states` (
	`state_hash` text PRIMARY KEY NOT NULL,
	`purpose` text NOT NULL,
	`org_id` text NOT NULL,
	`user_id` text NOT NULL,
	`integration_id` text,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `tasks` ADD `pull_request` text;