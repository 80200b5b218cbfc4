CREATE TABLE "run_waits" (
	"run_id" text NOT NULL,
	"node_id" text NOT NULL,
	"user_id" text NOT NULL,
	"token_hash" text NOT NULL,
	"message" text,
	"expires_at" timestamp with time zone NOT NULL,
	"decision" text,
	"data" jsonb,
	"decided_by" text,
	"decided_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_waits_run_id_node_id_pk" PRIMARY KEY("run_id","node_id")
);
--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "parent_run_id" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "parent_node_id" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "item_index" integer;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "depth" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "run_waits" ADD CONSTRAINT "run_waits_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_waits" ADD CONSTRAINT "run_waits_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "run_waits_token_idx" ON "run_waits" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "run_waits_open_idx" ON "run_waits" USING btree ("user_id","created_at") WHERE "run_waits"."decided_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "runs_parent_item_idx" ON "runs" USING btree ("parent_run_id","parent_node_id","item_index") WHERE "runs"."parent_run_id" is not null;