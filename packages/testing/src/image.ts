/**
 * The commands of the one image (infra/Dockerfile: /app/api and /app/worker), as the
 * bundle smoke check, the compose file and the Kubernetes manifests run them.
 */
export const IMAGE_COMMANDS = {
  api: ['node', 'api/dist/server.js'],
  worker: ['node', 'worker/dist/main.js'],
  migrate: ['node', 'worker/node_modules/@switchboard/core/dist/bin/migrate.js']
} as const
