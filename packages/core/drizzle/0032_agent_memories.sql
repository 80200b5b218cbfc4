CREATE TABLE "agent_memories" (
	"workflow_id" text NOT NULL,
	"node_id" text NOT NULL,
	"key" text NOT NULL,
	"turns" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "agent_memories_workflow_id_node_id_key_pk" PRIMARY KEY("workflow_id","node_id","key")
);
--> statement-breakpoint
ALTER TABLE "agent_memories" ADD CONSTRAINT "agent_memories_workflow_id_workflows_id_fk" FOREIGN KEY ("workflow_id") REFERENCES "public"."workflows"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_memories_updated_idx" ON "agent_memories" USING btree ("updated_at");