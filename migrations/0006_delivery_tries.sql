CREATE TABLE `delivery_tries` (
	`delivery_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`at` text NOT NULL,
	`outcome` text NOT NULL,
	`status_code` integer,
	`error` text,
	`latency_ms` integer,
	PRIMARY KEY(`delivery_id`, `attempt`),
	FOREIGN KEY (`delivery_id`) REFERENCES `deliveries`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
-- Hand-written: deliveries tried before this version keep their last try as the start of their history.
INSERT INTO `delivery_tries` (`delivery_id`, `attempt`, `at`, `outcome`, `status_code`, `error`, `latency_ms`)
SELECT `id`, `attempts`, `last_attempt_at`, CASE `status` WHEN 'succeeded' THEN 'succeeded' WHEN 'failed' THEN 'failed' ELSE 'retrying' END,
       `last_status_code`, `last_error`, `last_latency_ms`
  FROM `deliveries` WHERE `last_attempt_at` IS NOT NULL AND `attempts` > 0;
