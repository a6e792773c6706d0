CREATE TABLE "api_tokens" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"user_id" text COLLATE "C" NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"role" text COLLATE "C" NOT NULL,
	"token_hash" text COLLATE "C" NOT NULL,
	"last_four" text COLLATE "C" NOT NULL,
	"expires_at" text COLLATE "C",
	"last_used_at" text COLLATE "C",
	"created_at" text COLLATE "C" NOT NULL,
	CONSTRAINT "api_tokens_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "artifacts" (
	"task_id" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"content_type" text COLLATE "C" NOT NULL,
	"size" bigint NOT NULL,
	"etag" text COLLATE "C" NOT NULL,
	"attempt" bigint DEFAULT 0 NOT NULL,
	"created_at" text COLLATE "C" NOT NULL,
	CONSTRAINT "artifacts_task_id_name_pk" PRIMARY KEY("task_id","name")
);
--> statement-breakpoint
CREATE TABLE "codehost_apps" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"integration_id" text COLLATE "C" NOT NULL,
	"app_id" bigint NOT NULL,
	"slug" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"html_url" text COLLATE "C" NOT NULL,
	"client_id" text COLLATE "C" NOT NULL,
	"client_secret_sealed" text COLLATE "C" NOT NULL,
	"webhook_secret_sealed" text COLLATE "C" NOT NULL,
	"private_key_sealed" text COLLATE "C" NOT NULL,
	"created_by" text COLLATE "C" NOT NULL,
	"created_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "codehost_connections" (
	"user_id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"login" text COLLATE "C" NOT NULL,
	"github_user_id" bigint NOT NULL,
	"token_sealed" text COLLATE "C" NOT NULL,
	"refresh_token_sealed" text COLLATE "C",
	"expires_at" text COLLATE "C",
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "codehost_installations" (
	"id" bigint PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"account_login" text COLLATE "C" NOT NULL,
	"account_type" text COLLATE "C" NOT NULL,
	"account_id" bigint NOT NULL,
	"repository_selection" text COLLATE "C" NOT NULL,
	"suspended" bigint DEFAULT 0 NOT NULL,
	"synced_at" text COLLATE "C",
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "codehost_jobs" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"task_id" text COLLATE "C" NOT NULL,
	"kind" text COLLATE "C" NOT NULL,
	"payload" text COLLATE "C" NOT NULL,
	"status" text COLLATE "C" NOT NULL,
	"attempts" bigint DEFAULT 0 NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"last_error" text COLLATE "C",
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "codehost_repositories" (
	"installation_id" bigint NOT NULL,
	"id" bigint NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"full_name" text COLLATE "C" NOT NULL,
	"private" bigint NOT NULL,
	"clone_url" text COLLATE "C" NOT NULL,
	"html_url" text COLLATE "C" NOT NULL,
	"default_branch" text COLLATE "C" NOT NULL,
	"url_key" text COLLATE "C" NOT NULL,
	"synced_at" text COLLATE "C" NOT NULL,
	CONSTRAINT "codehost_repositories_installation_id_id_pk" PRIMARY KEY("installation_id","id")
);
--> statement-breakpoint
CREATE TABLE "codehost_states" (
	"state_hash" text COLLATE "C" PRIMARY KEY NOT NULL,
	"purpose" text COLLATE "C" NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"user_id" text COLLATE "C" NOT NULL,
	"integration_id" text COLLATE "C",
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "deliveries" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"target_type" text COLLATE "C" NOT NULL,
	"target_id" text COLLATE "C" NOT NULL,
	"task_id" text COLLATE "C" NOT NULL,
	"event" text COLLATE "C" NOT NULL,
	"payload" text COLLATE "C" NOT NULL,
	"status" text COLLATE "C" NOT NULL,
	"attempts" bigint DEFAULT 0 NOT NULL,
	"round_attempts" bigint DEFAULT 0 NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"last_status_code" bigint,
	"last_error" text COLLATE "C",
	"last_latency_ms" bigint,
	"last_attempt_at" text COLLATE "C",
	"delivered_at" text COLLATE "C",
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "delivery_tries" (
	"delivery_id" text COLLATE "C" NOT NULL,
	"attempt" bigint NOT NULL,
	"at" text COLLATE "C" NOT NULL,
	"outcome" text COLLATE "C" NOT NULL,
	"status_code" bigint,
	"error" text COLLATE "C",
	"latency_ms" bigint,
	CONSTRAINT "delivery_tries_delivery_id_attempt_pk" PRIMARY KEY("delivery_id","attempt")
);
--> statement-breakpoint
CREATE TABLE "device_grants" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"kind" text COLLATE "C" NOT NULL,
	"device_code_hash" text COLLATE "C" NOT NULL,
	"user_code" text COLLATE "C" NOT NULL,
	"status" text COLLATE "C" NOT NULL,
	"client_name" text COLLATE "C",
	"worker_name" text COLLATE "C",
	"hostname" text COLLATE "C",
	"labels" text COLLATE "C",
	"request_ip" text COLLATE "C",
	"interval_sec" bigint NOT NULL,
	"last_polled_at" bigint,
	"expires_at" bigint NOT NULL,
	"decided_by" text COLLATE "C",
	"org_id" text COLLATE "C",
	"created_at" text COLLATE "C" NOT NULL,
	CONSTRAINT "device_grants_device_code_hash_unique" UNIQUE("device_code_hash")
);
--> statement-breakpoint
CREATE TABLE "discovered_repositories" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"url" text COLLATE "C" NOT NULL,
	"normalized_url" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"branch" text COLLATE "C",
	"status" text COLLATE "C" NOT NULL,
	"sightings" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"repository_id" text COLLATE "C",
	"first_seen_at" text COLLATE "C" NOT NULL,
	"last_seen_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "inbound_keys" (
	"integration_id" text COLLATE "C" NOT NULL,
	"key" text COLLATE "C" NOT NULL,
	"task_id" text COLLATE "C" NOT NULL,
	"created_at" text COLLATE "C" NOT NULL,
	CONSTRAINT "inbound_keys_integration_id_key_pk" PRIMARY KEY("integration_id","key")
);
--> statement-breakpoint
CREATE TABLE "integrations" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"kind" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"project_id" text COLLATE "C" NOT NULL,
	"enabled" bigint DEFAULT 1 NOT NULL,
	"callback_url" text COLLATE "C",
	"callback_disabled_at" text COLLATE "C",
	"config" text COLLATE "C" DEFAULT '{}' NOT NULL,
	"secret_sealed" text COLLATE "C" NOT NULL,
	"secret_last4" text COLLATE "C" NOT NULL,
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "memberships" (
	"org_id" text COLLATE "C" NOT NULL,
	"user_id" text COLLATE "C" NOT NULL,
	"role" text COLLATE "C" NOT NULL,
	"created_at" text COLLATE "C" NOT NULL,
	CONSTRAINT "memberships_org_id_user_id_pk" PRIMARY KEY("org_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "orgs" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"require_worker_approval" bigint DEFAULT 0 NOT NULL,
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "plugins" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"kind" text COLLATE "C" NOT NULL,
	"url" text COLLATE "C" NOT NULL,
	"project_id" text COLLATE "C",
	"enabled" bigint DEFAULT 1 NOT NULL,
	"secret_sealed" text COLLATE "C" NOT NULL,
	"secret_last4" text COLLATE "C" NOT NULL,
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"knowledge" text COLLATE "C" DEFAULT '' NOT NULL,
	"policy" text COLLATE "C" DEFAULT '{}' NOT NULL,
	"archived" bigint DEFAULT 0 NOT NULL,
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "readiness_runs" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"project_id" text COLLATE "C" NOT NULL,
	"repository_id" text COLLATE "C" NOT NULL,
	"worker_id" text COLLATE "C" NOT NULL,
	"status" text COLLATE "C" NOT NULL,
	"score" bigint,
	"checks" text COLLATE "C",
	"report" text COLLATE "C",
	"error" text COLLATE "C",
	"requested_by" text COLLATE "C",
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL,
	"finished_at" text COLLATE "C"
);
--> statement-breakpoint
CREATE TABLE "recovery_codes" (
	"user_id" text COLLATE "C" NOT NULL,
	"code_hash" text COLLATE "C" NOT NULL,
	"used_at" text COLLATE "C",
	CONSTRAINT "recovery_codes_user_id_code_hash_pk" PRIMARY KEY("user_id","code_hash")
);
--> statement-breakpoint
CREATE TABLE "refresh_tokens" (
	"token_hash" text COLLATE "C" PRIMARY KEY NOT NULL,
	"session_id" text COLLATE "C" NOT NULL,
	"used_at" text COLLATE "C",
	"expires_at" bigint NOT NULL,
	"created_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "repositories" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"project_id" text COLLATE "C" NOT NULL,
	"url" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"branch" text COLLATE "C" DEFAULT 'main' NOT NULL,
	"is_primary" bigint DEFAULT 0 NOT NULL,
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"user_id" text COLLATE "C" NOT NULL,
	"client" text COLLATE "C" NOT NULL,
	"revoked_at" text COLLATE "C",
	"revoked_reason" text COLLATE "C",
	"created_at" text COLLATE "C" NOT NULL,
	"last_used_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "task_events" (
	"task_id" text COLLATE "C" NOT NULL,
	"seq" bigint NOT NULL,
	"type" text COLLATE "C" NOT NULL,
	"at" text COLLATE "C" NOT NULL,
	"actor" text COLLATE "C",
	"data" text COLLATE "C",
	"attempt" bigint,
	"worker_seq" bigint,
	CONSTRAINT "task_events_task_id_seq_pk" PRIMARY KEY("task_id","seq")
);
--> statement-breakpoint
CREATE TABLE "task_usage" (
	"task_id" text COLLATE "C" NOT NULL,
	"attempt" bigint NOT NULL,
	"day" text COLLATE "C" NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"project_id" text COLLATE "C" NOT NULL,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"cache_read_tokens" bigint DEFAULT 0 NOT NULL,
	"cache_write_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_usd" double precision DEFAULT 0 NOT NULL,
	"model" text COLLATE "C",
	"updated_at" text COLLATE "C" NOT NULL,
	CONSTRAINT "task_usage_task_id_attempt_day_pk" PRIMARY KEY("task_id","attempt","day")
);
--> statement-breakpoint
CREATE TABLE "tasks" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"project_id" text COLLATE "C" NOT NULL,
	"title" text COLLATE "C" NOT NULL,
	"prompt" text COLLATE "C" NOT NULL,
	"priority" text COLLATE "C" NOT NULL,
	"priority_rank" bigint NOT NULL,
	"kind" text COLLATE "C" NOT NULL,
	"review" text COLLATE "C",
	"status" text COLLATE "C" NOT NULL,
	"paused_from" text COLLATE "C",
	"attempt" bigint DEFAULT 0 NOT NULL,
	"run_mode" text COLLATE "C" DEFAULT 'fresh' NOT NULL,
	"worker_id" text COLLATE "C",
	"lease_token_hash" text COLLATE "C",
	"parent_id" text COLLATE "C",
	"plan_index" bigint,
	"created_by_type" text COLLATE "C" NOT NULL,
	"created_by_id" text COLLATE "C" NOT NULL,
	"summary" text COLLATE "C",
	"changes" text COLLATE "C",
	"needs" text COLLATE "C",
	"plan" text COLLATE "C",
	"source" text COLLATE "C",
	"agent" text COLLATE "C",
	"budget_usd" double precision,
	"pull_request" text COLLATE "C",
	"last_seq" bigint DEFAULT 0 NOT NULL,
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL,
	"started_at" text COLLATE "C",
	"finished_at" text COLLATE "C"
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"email" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" DEFAULT '' NOT NULL,
	"password_hash" text COLLATE "C" NOT NULL,
	"is_admin" bigint DEFAULT 0 NOT NULL,
	"totp_secret_sealed" text COLLATE "C",
	"totp_enabled" bigint DEFAULT 0 NOT NULL,
	"totp_last_step" bigint DEFAULT 0 NOT NULL,
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL,
	CONSTRAINT "users_email_unique" UNIQUE("email")
);
--> statement-breakpoint
CREATE TABLE "worker_mail" (
	"id" bigint PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY (sequence name "worker_mail_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"worker_id" text COLLATE "C" NOT NULL,
	"message" text COLLATE "C" NOT NULL,
	"created_at" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "worker_repositories" (
	"worker_id" text COLLATE "C" NOT NULL,
	"repository_id" text COLLATE "C" NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"status" text COLLATE "C" NOT NULL,
	"path" text COLLATE "C",
	"error" text COLLATE "C",
	"updated_at" text COLLATE "C" NOT NULL,
	CONSTRAINT "worker_repositories_worker_id_repository_id_pk" PRIMARY KEY("worker_id","repository_id")
);
--> statement-breakpoint
CREATE TABLE "workers" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"org_id" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"hostname" text COLLATE "C" DEFAULT '' NOT NULL,
	"labels" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"policy" text COLLATE "C" DEFAULT '{}' NOT NULL,
	"credential_hash" text COLLATE "C" NOT NULL,
	"approved_at" text COLLATE "C",
	"approved_by" text COLLATE "C",
	"revoked_at" text COLLATE "C",
	"paired_by" text COLLATE "C",
	"paired_from_ip" text COLLATE "C",
	"tools" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"agents" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"providers" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"version" text COLLATE "C",
	"capacity" bigint DEFAULT 1 NOT NULL,
	"last_seen_at" text COLLATE "C",
	"created_at" text COLLATE "C" NOT NULL,
	"updated_at" text COLLATE "C" NOT NULL,
	CONSTRAINT "workers_credential_hash_unique" UNIQUE("credential_hash")
);
--> statement-breakpoint
ALTER TABLE "api_tokens" ADD CONSTRAINT "api_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_tokens" ADD CONSTRAINT "api_tokens_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "artifacts" ADD CONSTRAINT "artifacts_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codehost_apps" ADD CONSTRAINT "codehost_apps_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codehost_apps" ADD CONSTRAINT "codehost_apps_integration_id_integrations_id_fk" FOREIGN KEY ("integration_id") REFERENCES "public"."integrations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codehost_connections" ADD CONSTRAINT "codehost_connections_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codehost_installations" ADD CONSTRAINT "codehost_installations_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codehost_jobs" ADD CONSTRAINT "codehost_jobs_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codehost_repositories" ADD CONSTRAINT "codehost_repositories_installation_id_codehost_installations_id_fk" FOREIGN KEY ("installation_id") REFERENCES "public"."codehost_installations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "codehost_states" ADD CONSTRAINT "codehost_states_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "delivery_tries" ADD CONSTRAINT "delivery_tries_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "discovered_repositories" ADD CONSTRAINT "discovered_repositories_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "inbound_keys" ADD CONSTRAINT "inbound_keys_integration_id_integrations_id_fk" FOREIGN KEY ("integration_id") REFERENCES "public"."integrations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "inbound_keys" ADD CONSTRAINT "inbound_keys_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "integrations" ADD CONSTRAINT "integrations_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "integrations" ADD CONSTRAINT "integrations_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plugins" ADD CONSTRAINT "plugins_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plugins" ADD CONSTRAINT "plugins_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "readiness_runs" ADD CONSTRAINT "readiness_runs_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "readiness_runs" ADD CONSTRAINT "readiness_runs_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "recovery_codes" ADD CONSTRAINT "recovery_codes_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "refresh_tokens" ADD CONSTRAINT "refresh_tokens_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "repositories" ADD CONSTRAINT "repositories_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "repositories" ADD CONSTRAINT "repositories_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "task_events" ADD CONSTRAINT "task_events_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "task_usage" ADD CONSTRAINT "task_usage_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "worker_mail" ADD CONSTRAINT "worker_mail_worker_id_workers_id_fk" FOREIGN KEY ("worker_id") REFERENCES "public"."workers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "worker_repositories" ADD CONSTRAINT "worker_repositories_worker_id_workers_id_fk" FOREIGN KEY ("worker_id") REFERENCES "public"."workers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "worker_repositories" ADD CONSTRAINT "worker_repositories_repository_id_repositories_id_fk" FOREIGN KEY ("repository_id") REFERENCES "public"."repositories"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workers" ADD CONSTRAINT "workers_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_tokens_user" ON "api_tokens" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "codehost_installations_org" ON "codehost_installations" USING btree ("org_id","id");--> statement-breakpoint
CREATE INDEX "codehost_jobs_due" ON "codehost_jobs" USING btree ("next_attempt_at") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "codehost_jobs_task" ON "codehost_jobs" USING btree ("task_id","kind");--> statement-breakpoint
CREATE INDEX "codehost_repositories_org_name" ON "codehost_repositories" USING btree ("org_id","full_name");--> statement-breakpoint
CREATE INDEX "codehost_repositories_org_url" ON "codehost_repositories" USING btree ("org_id","url_key");--> statement-breakpoint
CREATE INDEX "deliveries_due" ON "deliveries" USING btree ("next_attempt_at") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "deliveries_in_flight" ON "deliveries" USING btree ("id") WHERE status = 'delivering';--> statement-breakpoint
CREATE INDEX "deliveries_target" ON "deliveries" USING btree ("target_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "device_grants_user_code" ON "device_grants" USING btree ("user_code");--> statement-breakpoint
CREATE UNIQUE INDEX "discovered_org_url" ON "discovered_repositories" USING btree ("org_id","normalized_url");--> statement-breakpoint
CREATE INDEX "discovered_org_status" ON "discovered_repositories" USING btree ("org_id","status","id");--> statement-breakpoint
CREATE INDEX "integrations_org" ON "integrations" USING btree ("org_id","id");--> statement-breakpoint
CREATE INDEX "memberships_user" ON "memberships" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "plugins_org_kind" ON "plugins" USING btree ("org_id","kind");--> statement-breakpoint
CREATE INDEX "projects_org" ON "projects" USING btree ("org_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "projects_org_name_live" ON "projects" USING btree ("org_id","name") WHERE archived = 0;--> statement-breakpoint
CREATE INDEX "readiness_project" ON "readiness_runs" USING btree ("project_id","id");--> statement-breakpoint
CREATE INDEX "readiness_worker" ON "readiness_runs" USING btree ("worker_id","status");--> statement-breakpoint
CREATE INDEX "refresh_tokens_session" ON "refresh_tokens" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "repositories_project" ON "repositories" USING btree ("project_id");--> statement-breakpoint
CREATE UNIQUE INDEX "repositories_project_url" ON "repositories" USING btree ("project_id","url");--> statement-breakpoint
CREATE UNIQUE INDEX "repositories_one_primary" ON "repositories" USING btree ("project_id") WHERE is_primary = 1;--> statement-breakpoint
CREATE INDEX "sessions_user" ON "sessions" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "task_events_worker_seq" ON "task_events" USING btree ("task_id","attempt","worker_seq") WHERE worker_seq IS NOT NULL;--> statement-breakpoint
CREATE INDEX "task_usage_project_day" ON "task_usage" USING btree ("project_id","day");--> statement-breakpoint
CREATE INDEX "tasks_org" ON "tasks" USING btree ("org_id","id");--> statement-breakpoint
CREATE INDEX "tasks_org_status" ON "tasks" USING btree ("org_id","status","id");--> statement-breakpoint
CREATE INDEX "tasks_org_project" ON "tasks" USING btree ("org_id","project_id","id");--> statement-breakpoint
CREATE INDEX "tasks_org_kind" ON "tasks" USING btree ("org_id","kind","id");--> statement-breakpoint
CREATE INDEX "tasks_org_parent" ON "tasks" USING btree ("org_id","parent_id","id") WHERE parent_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX "tasks_queue" ON "tasks" USING btree ("priority_rank","id") WHERE status = 'queued';--> statement-breakpoint
CREATE INDEX "tasks_worker_held" ON "tasks" USING btree ("worker_id") WHERE status IN ('running', 'paused', 'needs_input', 'needs_approval');--> statement-breakpoint
CREATE UNIQUE INDEX "tasks_plan_child" ON "tasks" USING btree ("parent_id","plan_index") WHERE parent_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX "worker_mail_worker" ON "worker_mail" USING btree ("worker_id","id");--> statement-breakpoint
CREATE INDEX "worker_repositories_repository" ON "worker_repositories" USING btree ("repository_id");--> statement-breakpoint
CREATE INDEX "workers_org" ON "workers" USING btree ("org_id","id");