-- One index per log line instead of two (docs/decisions.md, "Fewer writes per run"): the key is
-- (run_id, id), which serves every read and delete by run that run_logs_run_idx served.
ALTER TABLE "run_logs" DROP CONSTRAINT "run_logs_pkey";--> statement-breakpoint
DROP INDEX "run_logs_run_idx";--> statement-breakpoint
ALTER TABLE "run_logs" ADD CONSTRAINT "run_logs_pkey" PRIMARY KEY("run_id","id");
