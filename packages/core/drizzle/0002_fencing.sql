ALTER TABLE "runs" ADD COLUMN "claim" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "claim_owner" text;