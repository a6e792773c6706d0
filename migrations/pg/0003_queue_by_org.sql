DROP INDEX "tasks_queue";--> statement-breakpoint
CREATE INDEX "tasks_queue" ON "tasks" USING btree ("org_id","priority_rank","id") WHERE status = 'queued';