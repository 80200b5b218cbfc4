CREATE TABLE "workflow_versions" (
	"workflow_id" text NOT NULL,
	"version" integer NOT NULL,
	"trigger_type" text NOT NULL,
	"trigger_config" jsonb NOT NULL,
	"nodes" jsonb NOT NULL,
	"edges" jsonb,
	"created_by" text,
	"restored_from" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "workflow_versions_workflow_id_version_pk" PRIMARY KEY("workflow_id","version")
);
--> statement-breakpoint
CREATE TABLE "credentials" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"fields" text[] NOT NULL,
	"data_encrypted" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "workflow_credentials" (
	"workflow_id" text NOT NULL,
	"credential_id" text NOT NULL,
	CONSTRAINT "workflow_credentials_workflow_id_credential_id_pk" PRIMARY KEY("workflow_id","credential_id")
);
--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "version" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
-- Runs started before versions existed execute version 1, the definition backfilled below. The default
-- fills the existing rows without rewriting the table and is dropped at once: every new run names its version.
ALTER TABLE "runs" ADD COLUMN "workflow_version" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "runs" ALTER COLUMN "workflow_version" DROP DEFAULT;--> statement-breakpoint
-- Version 1 of every existing workflow is its definition as it stands; who wrote it is not known.
INSERT INTO "workflow_versions" ("workflow_id", "version", "trigger_type", "trigger_config", "nodes", "edges", "created_at")
SELECT "id", 1, "trigger_type", "trigger_config", "nodes", "edges", "updated_at" FROM "workflows";--> statement-breakpoint
ALTER TABLE "workflow_versions" ADD CONSTRAINT "workflow_versions_workflow_id_workflows_id_fk" FOREIGN KEY ("workflow_id") REFERENCES "public"."workflows"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workflow_versions" ADD CONSTRAINT "workflow_versions_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credentials" ADD CONSTRAINT "credentials_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workflow_credentials" ADD CONSTRAINT "workflow_credentials_workflow_id_workflows_id_fk" FOREIGN KEY ("workflow_id") REFERENCES "public"."workflows"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workflow_credentials" ADD CONSTRAINT "workflow_credentials_credential_id_credentials_id_fk" FOREIGN KEY ("credential_id") REFERENCES "public"."credentials"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "credentials_user_name_key" ON "credentials" USING btree ("user_id","name");--> statement-breakpoint
CREATE INDEX "workflow_credentials_credential_idx" ON "workflow_credentials" USING btree ("credential_id");