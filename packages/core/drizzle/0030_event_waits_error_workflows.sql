CREATE TABLE "event_listens" (
	"run_id" text NOT NULL,
	"listener" text NOT NULL,
	"kind" text NOT NULL,
	"user_id" text NOT NULL,
	"event_name" text NOT NULL,
	"match" jsonb NOT NULL,
	"since" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone,
	"event" jsonb,
	"closed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "event_listens_run_id_listener_pk" PRIMARY KEY("run_id","listener")
);
--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "cancel_on" jsonb;--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "error_workflow_id" text;--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "listens_to" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "workflow_versions" ADD COLUMN "edge_rule" text DEFAULT 'first' NOT NULL;--> statement-breakpoint
ALTER TABLE "workflow_versions" ALTER COLUMN "edge_rule" SET DEFAULT 'all';--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "error_of_run_id" text;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "started_by_writer" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "event_listens" ADD CONSTRAINT "event_listens_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "event_listens_open_idx" ON "event_listens" USING btree ("user_id","event_name") WHERE "event_listens"."event" is null and "event_listens"."closed_at" is null;--> statement-breakpoint
CREATE INDEX "workflows_listening_idx" ON "workflows" USING btree ("user_id") WHERE "workflows"."listens_to" <> '{}';--> statement-breakpoint
CREATE UNIQUE INDEX "runs_error_of_run_idx" ON "runs" USING btree ("error_of_run_id") WHERE "runs"."error_of_run_id" is not null;--> statement-breakpoint
CREATE INDEX "events_user_name_created_idx" ON "events" USING btree ("user_id","name","created_at");