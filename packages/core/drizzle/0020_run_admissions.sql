-- Runs admitted under their owner's runsInFlight quota that are not RUNNING yet (docs/decisions.md,
-- "Fair share beyond runs, and an in-flight quota that holds"): admissions reserve under a lock.
CREATE TABLE "run_admissions" (
	"run_id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"claim" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "run_admissions" ADD CONSTRAINT "run_admissions_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "run_admissions_user_idx" ON "run_admissions" USING btree ("user_id");