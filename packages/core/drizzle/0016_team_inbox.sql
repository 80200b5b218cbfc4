CREATE TABLE "chat_canned_replies" (
	"id" text PRIMARY KEY NOT NULL,
	"phone_number_id" text NOT NULL,
	"shortcut" text NOT NULL,
	"title" text NOT NULL,
	"text" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "chat_canned_replies_account_shortcut_key" ON "chat_canned_replies" USING btree ("phone_number_id","shortcut");--> statement-breakpoint
CREATE INDEX "conversations_account_assigned_idx" ON "conversations" USING btree ("phone_number_id","assigned_agent_id","is_archived","last_message_at" DESC NULLS LAST,"id" DESC NULLS FIRST) WHERE "conversations"."assigned_agent_id" is not null;