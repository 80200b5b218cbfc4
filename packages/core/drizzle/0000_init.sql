CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"password_hash" text NOT NULL,
	"role" text DEFAULT 'member' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "workflows" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"trigger_type" text NOT NULL,
	"trigger_config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"nodes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"edges" jsonb,
	"is_active" boolean DEFAULT false NOT NULL,
	"domain" text DEFAULT 'GENERAL' NOT NULL,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"run_count" integer DEFAULT 0 NOT NULL,
	"success_count" integer DEFAULT 0 NOT NULL,
	"failure_count" integer DEFAULT 0 NOT NULL,
	"last_run_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "workflow_schedules" (
	"id" text PRIMARY KEY NOT NULL,
	"workflow_id" text NOT NULL,
	"cron_expression" text NOT NULL,
	"timezone" text DEFAULT 'UTC' NOT NULL,
	"next_run_at" timestamp with time zone,
	"last_run_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"workflow_id" text NOT NULL,
	"key" text NOT NULL,
	"run_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "idempotency_keys_workflow_id_key_pk" PRIMARY KEY("workflow_id","key")
);
--> statement-breakpoint
CREATE TABLE "run_logs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "run_logs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"run_id" text NOT NULL,
	"node_id" text,
	"level" text DEFAULT 'INFO' NOT NULL,
	"message" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "runs" (
	"id" text PRIMARY KEY NOT NULL,
	"workflow_id" text NOT NULL,
	"user_id" text NOT NULL,
	"status" text DEFAULT 'PENDING' NOT NULL,
	"queue" text NOT NULL,
	"trigger_data" jsonb,
	"raw_body" "bytea",
	"result" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"error" text,
	"current_node_id" text,
	"attempt" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"duration_ms" integer
);
--> statement-breakpoint
CREATE TABLE "chat_accounts" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"phone_number_id" text NOT NULL,
	"business_account_id" text,
	"display_phone_number" text,
	"access_token_encrypted" text NOT NULL,
	"is_default" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chat_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"id" text PRIMARY KEY NOT NULL,
	"phone_number_id" text NOT NULL,
	"phone" text NOT NULL,
	"name" text,
	"last_message" text,
	"last_message_at" timestamp with time zone,
	"unread_count" integer DEFAULT 0 NOT NULL,
	"is_pinned" boolean DEFAULT false NOT NULL,
	"is_archived" boolean DEFAULT false NOT NULL,
	"priority" text DEFAULT 'normal' NOT NULL,
	"labels" text[] DEFAULT '{}'::text[] NOT NULL,
	"assigned_agent_id" text,
	"ai_mode" text DEFAULT 'HYBRID' NOT NULL,
	"pending_approval_count" integer DEFAULT 0 NOT NULL,
	"last_incoming_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" text PRIMARY KEY NOT NULL,
	"conversation_id" text NOT NULL,
	"wamid" text,
	"direction" text NOT NULL,
	"type" text DEFAULT 'text' NOT NULL,
	"content" text DEFAULT '' NOT NULL,
	"template_content" jsonb,
	"status" text,
	"error_details" jsonb,
	"agent_id" text,
	"agent_name" text,
	"reply_to_id" text,
	"sent_at" timestamp with time zone,
	"dispatched_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "workflows" ADD CONSTRAINT "workflows_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workflow_schedules" ADD CONSTRAINT "workflow_schedules_workflow_id_workflows_id_fk" FOREIGN KEY ("workflow_id") REFERENCES "public"."workflows"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_workflow_id_workflows_id_fk" FOREIGN KEY ("workflow_id") REFERENCES "public"."workflows"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_logs" ADD CONSTRAINT "run_logs_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_workflow_id_workflows_id_fk" FOREIGN KEY ("workflow_id") REFERENCES "public"."workflows"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_accounts" ADD CONSTRAINT "chat_accounts_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_key" ON "users" USING btree ("email");--> statement-breakpoint
CREATE INDEX "workflows_user_updated_idx" ON "workflows" USING btree ("user_id","updated_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "workflows_updated_idx" ON "workflows" USING btree ("updated_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "workflows_user_trigger_idx" ON "workflows" USING btree ("user_id","trigger_type","is_active");--> statement-breakpoint
CREATE INDEX "workflows_user_domain_idx" ON "workflows" USING btree ("user_id","domain");--> statement-breakpoint
CREATE INDEX "workflows_tags_idx" ON "workflows" USING gin ("tags");--> statement-breakpoint
CREATE INDEX "workflows_event_name_idx" ON "workflows" USING btree (("trigger_config"->>'eventName')) WHERE "workflows"."trigger_type" = 'EVENT' and "workflows"."is_active";--> statement-breakpoint
CREATE INDEX "workflows_active_trigger_idx" ON "workflows" USING btree ("trigger_type") WHERE "workflows"."is_active";--> statement-breakpoint
CREATE UNIQUE INDEX "workflow_schedules_workflow_key" ON "workflow_schedules" USING btree ("workflow_id");--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "run_logs_run_idx" ON "run_logs" USING btree ("run_id","id");--> statement-breakpoint
CREATE INDEX "runs_workflow_created_idx" ON "runs" USING btree ("workflow_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "runs_user_created_idx" ON "runs" USING btree ("user_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "runs_created_idx" ON "runs" USING btree ("created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "runs_unfinished_idx" ON "runs" USING btree ("status","created_at") WHERE "runs"."status" in ('PENDING', 'RUNNING', 'WAITING');--> statement-breakpoint
CREATE UNIQUE INDEX "chat_accounts_user_phone_key" ON "chat_accounts" USING btree ("user_id","phone_number_id");--> statement-breakpoint
CREATE INDEX "chat_accounts_phone_idx" ON "chat_accounts" USING btree ("phone_number_id");--> statement-breakpoint
CREATE UNIQUE INDEX "conversations_account_phone_key" ON "conversations" USING btree ("phone_number_id","phone");--> statement-breakpoint
CREATE INDEX "conversations_account_last_message_idx" ON "conversations" USING btree ("phone_number_id","is_archived","last_message_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "conversations_account_unread_idx" ON "conversations" USING btree ("phone_number_id","unread_count" DESC NULLS FIRST,"last_message_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "conversations_account_incoming_idx" ON "conversations" USING btree ("phone_number_id","last_incoming_at" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "messages_wamid_key" ON "messages" USING btree ("wamid");--> statement-breakpoint
CREATE INDEX "messages_conversation_created_idx" ON "messages" USING btree ("conversation_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);