ALTER TABLE "workflows" ADD COLUMN "test_capture_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "test_captured_at" timestamp with time zone;