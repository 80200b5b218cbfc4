DROP INDEX "conversations_account_phone_key";--> statement-breakpoint
DROP INDEX "chat_contacts_account_phone_key";--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "platform_user_id" text;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "username" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "details" jsonb;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "reactions" jsonb;--> statement-breakpoint
ALTER TABLE "chat_contacts" ADD COLUMN "platform_user_id" text;--> statement-breakpoint
ALTER TABLE "chat_contacts" ADD COLUMN "parent_platform_user_id" text;--> statement-breakpoint
ALTER TABLE "chat_contacts" ADD COLUMN "username" text;--> statement-breakpoint
CREATE UNIQUE INDEX "conversations_account_user_key" ON "conversations" USING btree ("phone_number_id","platform_user_id") WHERE "conversations"."platform_user_id" is not null;--> statement-breakpoint
CREATE INDEX "chat_contacts_account_phone_idx" ON "chat_contacts" USING btree ("phone_number_id","phone");--> statement-breakpoint
CREATE UNIQUE INDEX "chat_contacts_account_user_key" ON "chat_contacts" USING btree ("phone_number_id","platform_user_id") WHERE "chat_contacts"."platform_user_id" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "conversations_account_phone_key" ON "conversations" USING btree ("phone_number_id","phone") WHERE "conversations"."phone" <> '';--> statement-breakpoint
CREATE UNIQUE INDEX "chat_contacts_account_phone_key" ON "chat_contacts" USING btree ("phone_number_id","phone") WHERE "chat_contacts"."phone" <> '';