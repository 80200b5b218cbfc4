CREATE TABLE "chat_consent_settings" (
	"phone_number_id" text PRIMARY KEY NOT NULL,
	"opt_out_keywords" text[] NOT NULL,
	"opt_in_keywords" text[] NOT NULL,
	"opt_out_confirmation" text NOT NULL,
	"opt_in_confirmation" text NOT NULL,
	"updated_by" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chat_contacts" (
	"id" text PRIMARY KEY NOT NULL,
	"phone_number_id" text NOT NULL,
	"phone" text NOT NULL,
	"name" text,
	"labels" text[] DEFAULT '{}'::text[] NOT NULL,
	"attributes" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"opted_out" boolean DEFAULT false NOT NULL,
	"consent_changed_at" timestamp with time zone,
	"consent_source" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "chat_consent_settings" ADD CONSTRAINT "chat_consent_settings_updated_by_users_id_fk" FOREIGN KEY ("updated_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "chat_contacts_account_phone_key" ON "chat_contacts" USING btree ("phone_number_id","phone");--> statement-breakpoint
-- Every customer who wrote before contacts existed becomes a contact of the number they wrote to, with the
-- conversation's name. Their id is derived from the pair, cuid-shaped: no row is made twice however often it runs.
INSERT INTO "chat_contacts" ("id", "phone_number_id", "phone", "name")
SELECT 'k' || substr(md5("phone_number_id" || ':' || "phone"), 1, 23), "phone_number_id", "phone", "name"
FROM "conversations" WHERE "last_incoming_at" IS NOT NULL
ON CONFLICT DO NOTHING;
