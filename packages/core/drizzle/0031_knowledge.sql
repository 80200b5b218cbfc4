CREATE TABLE "knowledge_chunks" (
	"id" text PRIMARY KEY NOT NULL,
	"source_id" text NOT NULL,
	"phone_number_id" text NOT NULL,
	"ordinal" integer NOT NULL,
	"heading" text DEFAULT '' NOT NULL,
	"page" integer,
	"content" text NOT NULL,
	"language" text NOT NULL,
	"words" "tsvector" NOT NULL,
	"embedding" "bytea"
);
--> statement-breakpoint
CREATE TABLE "knowledge_sources" (
	"id" text PRIMARY KEY NOT NULL,
	"phone_number_id" text NOT NULL,
	"user_id" text,
	"type" text NOT NULL,
	"title" text NOT NULL,
	"url" text,
	"language" text NOT NULL,
	"status" text DEFAULT 'indexing' NOT NULL,
	"error" text,
	"upload" "bytea",
	"body" text,
	"faq" jsonb,
	"bytes" integer DEFAULT 0 NOT NULL,
	"pages" integer,
	"chunk_count" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	"indexed_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "chat_assistants" ADD COLUMN "answer_from_knowledge_only" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "knowledge_chunks" ADD CONSTRAINT "knowledge_chunks_source_id_knowledge_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."knowledge_sources"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_sources" ADD CONSTRAINT "knowledge_sources_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "knowledge_chunks_source_ordinal_key" ON "knowledge_chunks" USING btree ("source_id","ordinal");--> statement-breakpoint
CREATE INDEX "knowledge_chunks_number_idx" ON "knowledge_chunks" USING btree ("phone_number_id");--> statement-breakpoint
CREATE INDEX "knowledge_chunks_words_idx" ON "knowledge_chunks" USING gin ("words");--> statement-breakpoint
CREATE INDEX "knowledge_sources_number_idx" ON "knowledge_sources" USING btree ("phone_number_id","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "knowledge_sources_indexing_idx" ON "knowledge_sources" USING btree ("user_id") WHERE "knowledge_sources"."status" = 'indexing';