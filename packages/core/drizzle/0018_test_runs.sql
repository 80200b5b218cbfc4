ALTER TABLE "workflows" ADD COLUMN "pinned_data" jsonb;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "test" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "until_node_id" text;