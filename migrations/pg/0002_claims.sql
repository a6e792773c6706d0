ALTER TABLE "codehost_jobs" ADD COLUMN "claim" text COLLATE "C";--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "claim" text COLLATE "C";--> statement-breakpoint
CREATE INDEX "codehost_jobs_working" ON "codehost_jobs" USING btree ("next_attempt_at") WHERE status = 'working';