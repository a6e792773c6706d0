CREATE TABLE "artifact_bodies" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"task_id" text COLLATE "C" NOT NULL,
	"stored" bigint DEFAULT 0 NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "artifact_chunks" (
	"body_id" text COLLATE "C" NOT NULL,
	"n" bigint NOT NULL,
	"data" "bytea" NOT NULL,
	CONSTRAINT "artifact_chunks_body_id_n_pk" PRIMARY KEY("body_id","n")
);
--> statement-breakpoint
ALTER TABLE "artifacts" ADD COLUMN "body_id" text COLLATE "C";--> statement-breakpoint
ALTER TABLE "artifact_bodies" ADD CONSTRAINT "artifact_bodies_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "artifact_chunks" ADD CONSTRAINT "artifact_chunks_body_id_artifact_bodies_id_fk" FOREIGN KEY ("body_id") REFERENCES "public"."artifact_bodies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "artifact_bodies_task" ON "artifact_bodies" USING btree ("task_id");--> statement-breakpoint
CREATE INDEX "artifact_bodies_unstored" ON "artifact_bodies" USING btree ("created_at") WHERE stored = 0;