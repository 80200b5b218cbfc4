CREATE TABLE "run_slots" (
	"run_id" text PRIMARY KEY NOT NULL,
	"workflow_id" text NOT NULL,
	"run_created_at" timestamp with time zone NOT NULL,
	"state" text NOT NULL,
	"claim" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "max_concurrent_runs" integer;--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "webhook_rate_limit" jsonb;--> statement-breakpoint
ALTER TABLE "run_slots" ADD CONSTRAINT "run_slots_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "run_slots_workflow_idx" ON "run_slots" USING btree ("workflow_id","state","run_created_at","run_id");