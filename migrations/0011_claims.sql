ALTER TABLE `deliveries` ADD `claim` text;--> statement-breakpoint
ALTER TABLE `codehost_jobs` ADD `claim` text;--> statement-breakpoint
CREATE INDEX `codehost_jobs_working` ON `codehost_jobs` (`next_attempt_at`) WHERE status = 'working';