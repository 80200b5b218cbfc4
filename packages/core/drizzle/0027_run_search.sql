CREATE TABLE "run_search" (
	"run_id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"workflow_id" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"tags" text[] NOT NULL,
	"terms" "tsvector" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "run_search_progress" (
	"id" integer PRIMARY KEY NOT NULL,
	"indexed_until" timestamp with time zone NOT NULL,
	"last_run_id" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "run_tags" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "tags" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "run_search" ADD CONSTRAINT "run_search_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "run_search_terms_idx" ON "run_search" USING gin ("terms");--> statement-breakpoint
CREATE INDEX "run_search_tags_idx" ON "run_search" USING gin ("tags");--> statement-breakpoint
-- A run's words (README, Finding runs): its id, the first 8 KiB of its trigger data as JSON text and the first 2 KiB of its
-- error, split at every character that is no letter or digit (`A-1234` is `a` and `1234`, as a query's words are split).
CREATE FUNCTION run_search_terms(id text, trigger_data jsonb, error text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT to_tsvector('simple', regexp_replace(id || ' ' || left(coalesce(trigger_data::text, ''), 8192) || ' ' || left(coalesce(error, ''), 2048), '[^[:alnum:]]+', ' ', 'g'))
$$;--> statement-breakpoint
CREATE FUNCTION run_search_error_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE run_search SET terms = run_search_terms(NEW.id, NEW.trigger_data, NEW.error) WHERE run_id = NEW.id;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER runs_search_error AFTER UPDATE OF error ON runs FOR EACH ROW WHEN (NEW.error IS DISTINCT FROM OLD.error) EXECUTE FUNCTION run_search_error_changed();--> statement-breakpoint
-- The runs already there are searchable at once; the worker indexes the newer ones (runs/search-index.ts).
INSERT INTO run_search (run_id, user_id, workflow_id, created_at, tags, terms)
SELECT id, user_id, workflow_id, created_at, tags, run_search_terms(id, trigger_data, error) FROM runs;--> statement-breakpoint
INSERT INTO run_search_progress (id, indexed_until, last_run_id)
SELECT 1, coalesce(max(created_at), '-infinity'), coalesce((SELECT id FROM runs ORDER BY created_at DESC, id DESC LIMIT 1), '') FROM runs;
