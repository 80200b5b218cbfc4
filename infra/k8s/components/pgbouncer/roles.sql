-- The roles the api and the workers connect as through PgBouncer (docs/operations.md, PgBouncer).
-- Run once, after the first migration, as a user allowed to create roles (the server's admin),
-- connected to Switchboard's database:
--   psql "postgres://admin@postgres.example.internal:5432/switchboard" -f roles.sql
-- then give each role the password of secrets.env, which psql sends hashed:
--   psql … -c '\password switchboard_api'   (DATABASE_API_PASSWORD)
--   psql … -c '\password switchboard_worker'   (DATABASE_WORKER_PASSWORD)
-- switchboard_owner is the user that owns the schema and migrates it (DATABASE_MIGRATION_URL);
-- name yours if it differs.

create role switchboard_api login;
create role switchboard_worker login;

-- The api's limits (DATABASE_STATEMENT_TIMEOUT_MS, 30 s), which a transaction-mode pooler does not
-- let it set when it connects: the server ends any api statement, and any api transaction left
-- idle, after them. The workers' statements carry none (a run's start sets its own, in its
-- transaction).
alter role switchboard_api set statement_timeout = '30s';
alter role switchboard_api set idle_in_transaction_session_timeout = '30s';

-- Both read and write the tables the migrations create, nothing more: no DDL, no other database.
do $$
begin
  execute format('grant connect on database %I to switchboard_api, switchboard_worker', current_database());
end
$$;
grant usage on schema public to switchboard_api, switchboard_worker;
grant select, insert, update, delete on all tables in schema public to switchboard_api, switchboard_worker;
grant usage, select, update on all sequences in schema public to switchboard_api, switchboard_worker;
-- And those of later migrations, which switchboard_owner runs.
alter default privileges for role switchboard_owner in schema public
  grant select, insert, update, delete on tables to switchboard_api, switchboard_worker;
alter default privileges for role switchboard_owner in schema public
  grant usage, select, update on sequences to switchboard_api, switchboard_worker;
