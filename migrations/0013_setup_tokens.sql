CREATE TABLE `setup_tokens` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`server_id` text NOT NULL,
	`created_at` text NOT NULL
);
