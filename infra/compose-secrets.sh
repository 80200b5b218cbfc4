#!/usr/bin/env sh
# Prints fresh secrets for infra/compose.yaml: ./infra/compose-secrets.sh > infra/.env
# (docker compose reads infra/.env beside the file). Keep the file private.
set -eu
rand () { node -e "process.stdout.write(require('node:crypto').randomBytes($1).toString('$2'))"; }
echo "POSTGRES_PASSWORD=$(rand 24 hex)"
echo "JWT_SECRET=$(rand 48 base64url)"
echo "ENCRYPTION_KEY=$(rand 32 base64)"
echo "ADMIN_PASSWORD=$(rand 12 base64url)"
echo "CHAT_APP_SECRET=$(rand 16 hex)"
echo "CHAT_VERIFY_TOKEN=$(rand 16 hex)"
