-- A failed message's error as the API returns it (README, Chat: failures): {code, title, details} of the
-- platform's first error, instead of the platform's array of errors as it came.
UPDATE "messages" SET "error_details" = jsonb_build_object(
  'code', CASE WHEN jsonb_typeof("error_details"->0->'code') = 'number' THEN "error_details"->0->'code' ELSE 'null'::jsonb END,
  'title', coalesce("error_details"->0->>'title', "error_details"->0->>'message', 'Failed'),
  'details', "error_details"->0->'error_data'->'details'
) WHERE jsonb_typeof("error_details") = 'array';
