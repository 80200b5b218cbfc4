ALTER TABLE "runs" ADD COLUMN "retried_from" text;--> statement-breakpoint
CREATE INDEX "runs_retried_from_idx" ON "runs" USING btree ("retried_from") WHERE "runs"."retried_from" is not null;