CREATE TABLE "flow_rates" (
	"workflow_id" text NOT NULL,
	"key" text NOT NULL,
	"next_at" timestamp with time zone NOT NULL,
	CONSTRAINT "flow_rates_workflow_id_key_pk" PRIMARY KEY("workflow_id","key")
);
--> statement-breakpoint
CREATE TABLE "run_debounces" (
	"workflow_id" text NOT NULL,
	"key" text NOT NULL,
	"run_id" text NOT NULL,
	"due_at" timestamp with time zone NOT NULL,
	"latest_at" timestamp with time zone,
	"period_ms" integer NOT NULL,
	CONSTRAINT "run_debounces_workflow_id_key_pk" PRIMARY KEY("workflow_id","key")
);
--> statement-breakpoint
CREATE TABLE "run_keys" (
	"run_id" text PRIMARY KEY NOT NULL,
	"workflow_id" text NOT NULL,
	"key" text NOT NULL,
	"place" timestamp with time zone NOT NULL,
	"state" text NOT NULL,
	"fair_key" text
);
--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "flow_control" jsonb;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "flow_control" jsonb;--> statement-breakpoint
ALTER TABLE "run_slots" ADD COLUMN "fair_key" text;--> statement-breakpoint
ALTER TABLE "run_debounces" ADD CONSTRAINT "run_debounces_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_keys" ADD CONSTRAINT "run_keys_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "run_debounces_run_idx" ON "run_debounces" USING btree ("run_id");--> statement-breakpoint
CREATE INDEX "run_keys_line_idx" ON "run_keys" USING btree ("workflow_id","key","state","place","run_id");--> statement-breakpoint
CREATE INDEX "run_keys_fair_idx" ON "run_keys" USING btree ("workflow_id","key","fair_key","place") WHERE "run_keys"."state" = 'waiting' and "run_keys"."fair_key" is not null;--> statement-breakpoint
CREATE INDEX "run_slots_fair_idx" ON "run_slots" USING btree ("workflow_id","fair_key","run_created_at") WHERE "run_slots"."state" = 'waiting' and "run_slots"."fair_key" is not null;