CREATE TABLE "chat_broadcast_recipients" (
	"broadcast_id" text NOT NULL,
	"position" integer NOT NULL,
	"phone" text NOT NULL,
	"components" jsonb,
	"status" text DEFAULT 'queued' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"not_before" timestamp with time zone,
	"lease_until" timestamp with time zone,
	"wamid" text,
	"error" jsonb,
	"sent_at" timestamp with time zone,
	CONSTRAINT "chat_broadcast_recipients_broadcast_id_position_pk" PRIMARY KEY("broadcast_id","position")
);
--> statement-breakpoint
CREATE TABLE "chat_broadcasts" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"account_id" text NOT NULL,
	"phone_number_id" text NOT NULL,
	"template_name" text NOT NULL,
	"lang" text NOT NULL,
	"rate_per_second" integer NOT NULL,
	"send_at" timestamp with time zone DEFAULT now() NOT NULL,
	"status" text DEFAULT 'scheduled' NOT NULL,
	"total" integer NOT NULL,
	"repeated" integer DEFAULT 0 NOT NULL,
	"finished_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "chat_broadcast_recipients" ADD CONSTRAINT "chat_broadcast_recipients_broadcast_id_chat_broadcasts_id_fk" FOREIGN KEY ("broadcast_id") REFERENCES "public"."chat_broadcasts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_broadcasts" ADD CONSTRAINT "chat_broadcasts_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "chat_broadcast_recipients_pending_idx" ON "chat_broadcast_recipients" USING btree ("broadcast_id","position") WHERE "chat_broadcast_recipients"."status" in ('queued', 'sending');--> statement-breakpoint
CREATE INDEX "chat_broadcast_recipients_wamid_idx" ON "chat_broadcast_recipients" USING btree ("wamid") WHERE "chat_broadcast_recipients"."wamid" is not null;--> statement-breakpoint
CREATE INDEX "chat_broadcasts_user_idx" ON "chat_broadcasts" USING btree ("user_id","created_at");