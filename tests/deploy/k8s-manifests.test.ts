/**
 * infra/k8s: every overlay renders with `kubectl kustomize` (kubectl ships with this kind of
 * machine) and every object validates against the Kubernetes, KEDA and Prometheus Operator
 * schemas; then what a reviewer would check by hand and what an operator's first deploy relies
 * on: one image set in one place, a migration Job named validly for any image reference, KEDA
 * reading the list the workers fill with the pods' own Redis settings, names that change with
 * the content they carry, the migration's own credentials, disruption budgets that let unhealthy
 * pods go, and the monitoring components.
 *
 * The kit is rendered from a copy in a temporary folder, with the credentials files an operator
 * writes beside the production overlays and with the edits the README's "Deploy" asks of an
 * operator (components/release for the image, an overlay's configMapGenerator for settings).
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Cluster, Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { parse, parseAllDocuments, stringify } from 'yaml'
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject'
import { TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1/TriggerAuthentication'
import { PodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor'
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule'
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor'
import { Deployment } from 'kubernetes-models/apps/v1/Deployment'
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler'
import { Job } from 'kubernetes-models/batch/v1/Job'
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget'
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap'
import { Secret } from 'kubernetes-models/v1/Secret'
import { Service } from 'kubernetes-models/v1/Service'
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount'
import { loadConfig } from '@switchboard/core/config'
import { QUEUE_NAMES, queueKeyPrefix } from '@switchboard/core/queues'
import { IMAGE_COMMANDS } from '@switchboard/testing/image'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const KIT = join(ROOT, 'infra/k8s')

/** The schema of every kind the manifests may contain; anything else fails the test. */
const MODELS: Record<string, new (data: any) => { validate: () => void }> = {
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'batch/v1/Job': Job,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
  'keda.sh/v1alpha1/TriggerAuthentication': TriggerAuthentication,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PodMonitor': PodMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule
}

type Manifest = Record<string, any>

/** What an operator fills in: the example files' keys, with values the production checks accept. */
const SECRETS = {
  DATABASE_URL: 'postgres://switchboard:app-password@postgres.example.internal:5432/switchboard',
  REDIS_PASSWORD: 'redis-Pass_word.1~',
  JWT_SECRET: randomBytes(48).toString('base64url'),
  ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  ADMIN_PASSWORD: randomBytes(12).toString('base64url'),
  CHAT_APP_SECRET: randomBytes(16).toString('hex')
}
const MIGRATION = { DATABASE_MIGRATION_URL: 'postgres://switchboard_owner:owner-password@postgres.example.internal:5432/switchboard' }

/** An example env file with the given values put in (keys the example does not have are refused). */
function filledIn (example: string, values: Record<string, string>): string {
  const text = readFileSync(join(KIT, example), 'utf8')
  for (const key of Object.keys(values)) {
    if (!new RegExp(`^${key}=`, 'm').test(text)) throw new Error(`${example} has no ${key}`)
  }
  return text.replace(/^([A-Z0-9_]+)=.*$/gm, (line, key: string) => key in values ? `${key}=${values[key]}` : line)
}

interface Kit {
  dir: string
  render: (overlay: string) => Manifest[]
  /** A new overlay: a copy of `from` (credentials files included) with its kustomization edited. */
  overlay: (name: string, edit: (kustomization: Manifest) => void, from?: string) => string
  edit: (file: string, change: (document: Manifest) => void) => void
}

/** A copy of infra/k8s as an operator has it: secrets.env and migration.env beside the production overlays. */
function copyKit (t: Test): Kit {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-k8s-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  cpSync(KIT, dir, { recursive: true })
  for (const overlay of ['production', 'production-hpa']) {
    writeFileSync(join(dir, 'overlays', overlay, 'secrets.env'), filledIn('secrets.example.env', SECRETS))
    writeFileSync(join(dir, 'overlays', overlay, 'migration.env'), filledIn('migration.example.env', MIGRATION))
  }
  const edit = (file: string, change: (document: Manifest) => void): void => {
    const path = join(dir, file)
    const document = parse(readFileSync(path, 'utf8')) as Manifest
    change(document)
    writeFileSync(path, stringify(document))
  }
  return {
    dir,
    edit,
    render: (overlay) => render(join(dir, 'overlays', overlay)),
    overlay: (name, change, from = 'production') => {
      cpSync(join(dir, 'overlays', from), join(dir, 'overlays', name), { recursive: true })
      edit(join('overlays', name, 'kustomization.yaml'), change)
      return name
    }
  }
}

function render (path: string): Manifest[] {
  let yaml: string
  try {
    yaml = execFileSync('kubectl', ['kustomize', path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (err) {
    throw new Error(`kubectl kustomize ${path} failed (kubectl comes with this machine's image): ${(err as Error).message}`)
  }
  return parseAllDocuments(yaml).map((document) => {
    const object = document.toJS() as Manifest
    // kustomize folds long base64 values over lines; the API server's decoder skips the line breaks.
    if (object.kind === 'Secret') {
      for (const key of Object.keys(object.data ?? {})) object.data[key] = object.data[key].replace(/\s/g, '')
    }
    return object
  })
}

const find = (objects: Manifest[], kind: string, name?: string): Manifest[] =>
  objects.filter((object) => object.kind === kind && (name === undefined || object.metadata.name === name))

function one (objects: Manifest[], kind: string, name: string | RegExp): Manifest {
  const found = objects.filter((object) => object.kind === kind && (typeof name === 'string' ? object.metadata.name === name : name.test(object.metadata.name)))
  if (found.length !== 1) throw new Error(`expected one ${kind} ${String(name)}, found ${found.length}`)
  return found[0]!
}

const secretData = (secret: Manifest): Record<string, string> =>
  Object.fromEntries(Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value as string, 'base64').toString('utf8')]))

/**
 * A container's environment as the kubelet gives it: envFrom first (ConfigMaps and Secrets of
 * the render), then `env`, whose `$(NAME)` references take earlier values.
 */
function containerEnv (objects: Manifest[], container: Manifest): Record<string, string> {
  const env: Record<string, string> = {}
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef !== undefined) Object.assign(env, one(objects, 'ConfigMap', source.configMapRef.name).data)
    if (source.secretRef !== undefined) Object.assign(env, secretData(one(objects, 'Secret', source.secretRef.name)))
  }
  for (const { name, value } of container.env ?? []) {
    env[name] = (value as string).replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (reference, key: string) => env[key] ?? reference)
  }
  return env
}

/** Settings an overlay's switchboard-config generator sets (`KEY=value`), replacing its own for the same keys. */
function setSettings (kustomization: Manifest, literals: string[]): void {
  const generator = kustomization.configMapGenerator.find((entry: Manifest) => entry.name === 'switchboard-config')
  const keys = new Set(literals.map((literal) => literal.split('=')[0]))
  generator.literals = [...generator.literals.filter((literal: string) => !keys.has(literal.split('=')[0])), ...literals]
}

const deploymentContainer = (objects: Manifest[], name: string): Manifest => one(objects, 'Deployment', name).spec.template.spec.containers[0]
const podSpecs = (objects: Manifest[]): Manifest[] => [...find(objects, 'Deployment'), ...find(objects, 'Job')].map((object) => object.spec.template.spec)
const migrationContainers = (objects: Manifest[]): Manifest[] => [
  ...find(objects, 'Deployment').flatMap((deployment) => deployment.spec.template.spec.initContainers ?? []),
  ...find(objects, 'Job').flatMap((job) => job.spec.template.spec.containers)
]

/** A Kubernetes object name that is a DNS label (a Job's name becomes its pods' label). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const HASHED = (name: string): RegExp => new RegExp(`^${name}-[a-z0-9]{10}$`)

const CREDENTIAL = /SECRET|PASSWORD|TOKEN|KEY|DATABASE_URL|DATABASE_MIGRATION_URL|REDIS_URL/
const URL_WITH_PASSWORD = /:\/\/[^/@\s]*:[^/@\s]+@/

/**
 * Where the workers put each queue's jobs and how they reach Redis, from the worker pod's own
 * environment (the service's configuration and the app's key function), against what KEDA's
 * triggers read: one per queue the workers consume, its list, the address and user (from the same
 * pod's environment), the password (TriggerAuthentication), TLS and the cluster mode.
 */
function checkKedaFollowsTheWorkers (t: Test, objects: Manifest[]): void {
  const env = containerEnv(objects, deploymentContainer(objects, 'switchboard-worker'))
  const config = loadConfig(env)
  const cluster = config.redisUrl.includes('+cluster://')
  const connection = cluster ? new Cluster([], { lazyConnect: true }) : new Redis(config.redisUrl, { lazyConnect: true })
  t.teardown(() => { connection.disconnect() })
  const lists = config.workerQueues.map((queue) => `${queueKeyPrefix(config.queuePrefix, queue, connection)}:${queue}:wait`)

  const scaledObject = one(objects, 'ScaledObject', 'switchboard-worker')
  const { triggers } = scaledObject.spec
  t.same(triggers.map((trigger: Manifest) => trigger.metadata.listName), lists, `KEDA reads every list the workers fill (${lists.join(', ')})`)
  for (const other of triggers.slice(1)) t.same({ ...other, metadata: { ...other.metadata, listName: undefined, listLength: undefined } }, { ...triggers[0], metadata: { ...triggers[0].metadata, listName: undefined, listLength: undefined } }, `${other.metadata.listName}: read as the first`)
  const [trigger] = triggers
  t.equal(trigger.type, cluster ? 'redis-cluster' : 'redis')
  const address = env[trigger.metadata[cluster ? 'addressesFromEnv' : 'addressFromEnv']]
  const username = env[trigger.metadata.usernameFromEnv]
  const auth = one(objects, 'TriggerAuthentication', trigger.authenticationRef.name)
  const passwordRef = auth.spec.secretTargetRef.find((ref: Manifest) => ref.parameter === 'password')
  const password = secretData(one(objects, 'Secret', passwordRef.name))[passwordRef.key]
  t.equal(password, SECRETS.REDIS_PASSWORD, 'KEDA\'s password is the Secret\'s')
  const tls = trigger.metadata.enableTLS === 'true'
  if (cluster) {
    t.equal(config.redisUrl, `${tls ? 'rediss' : 'redis'}+cluster://${username}:${password}@${address}`, 'the pods reach the cluster KEDA reads')
  } else {
    const { host, port, username: user, password: secret, tls: podTls } = (connection as Redis).options
    t.equal(`${host}:${port}`, address, 'one address')
    t.equal(user || '', username, 'one user')
    t.equal(secret, password, 'one password')
    t.equal(podTls !== undefined, tls, `TLS ${tls ? 'on' : 'off'} on both sides`)
  }
  t.match(scaledObject.spec.fallback, { failureThreshold: Number, replicas: Number }, 'a fallback count when KEDA cannot read the list')
  t.ok(scaledObject.spec.fallback.replicas >= scaledObject.spec.minReplicaCount && scaledObject.spec.fallback.replicas <= scaledObject.spec.maxReplicaCount)
}

t.test('the shipped overlays', async (t) => {
  const kit = copyKit(t)
  const release = (parse(readFileSync(join(KIT, 'components/release/kustomization.yaml'), 'utf8')) as Manifest).images[0]

  for (const overlay of ['dev', 'production', 'production-hpa']) {
    t.test(`overlay ${overlay}`, async (t) => {
      const objects = kit.render(overlay)
      const deployments = find(objects, 'Deployment')
      const jobs = find(objects, 'Job')
      const allContainers = podSpecs(objects).flatMap((spec) => [...(spec.initContainers ?? []), ...spec.containers])
      const appContainers = podSpecs(objects).flatMap((spec) => spec.containers).filter((container) => container.name !== 'migrate')

      t.test('every object validates against its schema', async (t) => {
        for (const object of objects) {
          const key = `${object.apiVersion}/${object.kind}`
          const Model = MODELS[key]
          if (Model === undefined) {
            t.fail(`no schema for ${key} ${object.metadata?.name}`)
            continue
          }
          t.doesNotThrow(() => { new Model(object).validate() }, `${key} ${object.metadata.name}`)
        }
      })

      t.test('one image, from components/release, in two Deployments differing in command', async (t) => {
        t.same(deployments.map((d) => d.metadata.name).sort(), ['switchboard-api', 'switchboard-worker'])
        t.same([...new Set(allContainers.map((container) => container.image))], [`${release.newName}:${release.newTag}`])
        t.match(release.newTag, /^\d+\.\d+\.\d+$/, 'a version, never latest')
        t.same(deploymentContainer(objects, 'switchboard-api').command, IMAGE_COMMANDS.api)
        t.same(deploymentContainer(objects, 'switchboard-worker').command, IMAGE_COMMANDS.worker)
        for (const container of migrationContainers(objects)) t.same(container.command, IMAGE_COMMANDS.migrate, `${container.name} migrates`)
        t.notOk(deployments.some((deployment) => 'replicas' in deployment.spec), 'autoscalers own the replica counts')
      })

      t.test('every container: probes, resources, locked-down security context, a writable /tmp only', async (t) => {
        for (const deployment of deployments) {
          const spec = deployment.spec.template.spec
          for (const container of spec.containers) {
            for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) t.ok(container[probe]?.httpGet, `${container.name}: ${probe}`)
            t.equal(container.readinessProbe.httpGet.path, '/health/ready')
            t.equal(container.livenessProbe.httpGet.path, '/health/live')
          }
          t.same(spec.topologySpreadConstraints.map((c: Manifest) => c.topologyKey), ['topology.kubernetes.io/zone', 'kubernetes.io/hostname'], `${deployment.metadata.name}: spread`)
        }
        for (const spec of podSpecs(objects)) {
          t.match(spec.securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } })
          t.equal(spec.automountServiceAccountToken, false)
          t.ok(spec.volumes.some((volume: Manifest) => volume.name === 'tmp' && volume.emptyDir !== undefined), 'an emptyDir for /tmp')
        }
        for (const container of allContainers) {
          t.ok(container.resources?.requests?.cpu && container.resources?.requests?.memory && container.resources?.limits?.memory, `${container.name}: requests and a memory limit`)
          t.match(container.securityContext, { runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } }, `${container.name}: security context`)
          t.same(container.volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }], `${container.name}: only /tmp is writable`)
        }
        const api = one(objects, 'Deployment', 'switchboard-api')
        t.same(api.spec.template.spec.containers[0].lifecycle.preStop.exec.command, ['sleep', '10'], 'the api keeps serving while endpoints update')
        t.ok(api.spec.template.spec.terminationGracePeriodSeconds > 20, 'grace covers preStop and draining')
      })

      t.test('settings in a hashed ConfigMap, credentials in a hashed Secret, the migration\'s in its own', async (t) => {
        const config = one(objects, 'ConfigMap', HASHED('switchboard-config'))
        const secrets = one(objects, 'Secret', HASHED('switchboard-secrets'))
        const migration = one(objects, 'Secret', 'switchboard-migration')
        t.same(find(objects, 'Secret').length, 2, 'no other Secret')
        t.same(find(objects, 'ConfigMap').length, 1, 'the kit\'s own settings are never applied')
        for (const [key, value] of Object.entries(config.data as Record<string, string>)) {
          t.notMatch(key, CREDENTIAL, `${key} is not a credential`)
          t.notMatch(value, URL_WITH_PASSWORD, `${key} holds no password`)
        }
        for (const container of appContainers) {
          t.same(container.envFrom, [{ configMapRef: { name: config.metadata.name } }, { secretRef: { name: secrets.metadata.name } }], `${container.name} reads both`)
          const inline = container.name === 'worker' ? ['REDIS_URL', 'NODE_OPTIONS'] : ['REDIS_URL']
          t.same(container.env.map((variable: Manifest) => variable.name), inline, `${container.name}: ${inline.join(' and ')} alone set in place`)
        }
        for (const container of migrationContainers(objects)) {
          t.same(container.envFrom, [{ secretRef: { name: migration.metadata.name } }], `${container.name} reads the migration's Secret only`)
          t.notOk(container.env, `${container.name} has no inline variables`)
          t.match(containerEnv(objects, container).DATABASE_MIGRATION_URL, /^postgres:\/\//)
        }
        t.notOk(Object.keys(secretData(secrets)).includes('DATABASE_MIGRATION_URL'), 'the app never holds the migration\'s credentials')

        // What the worker's container gets is a configuration the service accepts.
        const env = containerEnv(objects, deploymentContainer(objects, 'switchboard-worker'))
        const settings = loadConfig(env)
        t.equal(settings.redisUrl, `redis://:${secretData(secrets).REDIS_PASSWORD ?? ''}@${config.data.REDIS_ADDRESS}`, 'REDIS_URL from the ConfigMap\'s address and the Secret\'s password')
        t.equal(settings.nodeEnv, overlay === 'dev' ? 'development' : 'production', 'the throwaway Secret is only used in development mode')
        const worker = deploymentContainer(objects, 'switchboard-worker')
        t.equal(worker.ports[0].containerPort, settings.workerHttpPort, 'the worker probes the port it listens on')
        // The worker's heap is half its memory limit (README, Code): tests/reliability/code-input-memory.test.ts runs with it.
        const heapMb = Number(/--max-old-space-size=(\d+)/.exec(env.NODE_OPTIONS ?? '')?.[1])
        t.equal(heapMb * 2, Number(/^(\d+)Mi$/.exec(worker.resources.limits.memory)?.[1]), `the worker's heap (${heapMb} MB) is half its memory limit`)
        t.equal(one(objects, 'Deployment', 'switchboard-worker').spec.template.metadata.annotations['prometheus.io/port'], String(settings.workerHttpPort))
        t.same([...settings.workerQueues].sort(), [...QUEUE_NAMES].sort(), 'the worker consumes every queue')
        const grace = one(objects, 'Deployment', 'switchboard-worker').spec.template.spec.terminationGracePeriodSeconds * 1000
        t.ok(settings.workerDrainMs > settings.ai.turnTimeoutMs, `the worker's drain (${settings.workerDrainMs} ms) outlasts an assistant turn (${settings.ai.turnTimeoutMs} ms)`)
        t.ok(grace >= settings.workerDrainMs + 10_000, `the pod's grace (${grace} ms) leaves the drain 10 s to close`)
        const api = deploymentContainer(objects, 'switchboard-api')
        const apiSettings = loadConfig(containerEnv(objects, api))
        t.same(api.ports, [{ name: 'http', containerPort: apiSettings.port }, { name: 'metrics', containerPort: apiSettings.apiMetricsPort }], 'the api\'s public port and its metrics listener')
        t.equal(one(objects, 'Deployment', 'switchboard-api').spec.template.metadata.annotations['prometheus.io/port'], String(apiSettings.apiMetricsPort), 'scraped on its metrics listener')
      })

      t.test('autoscaling, disruption budgets, network policy', async (t) => {
        t.match(find(objects, 'HorizontalPodAutoscaler', 'switchboard-api'), [{ spec: { scaleTargetRef: { kind: 'Deployment', name: 'switchboard-api' } } }])
        for (const name of ['switchboard-api', 'switchboard-worker']) {
          t.equal(one(objects, 'PodDisruptionBudget', name).spec.unhealthyPodEvictionPolicy, 'AlwaysAllow', `${name}: a drain never waits on pods an outage made unready`)
        }
        const workerHpa = find(objects, 'HorizontalPodAutoscaler', 'switchboard-worker')
        if (overlay === 'production') {
          checkKedaFollowsTheWorkers(t, objects)
          t.same(workerHpa, [], 'KEDA alone scales the workers')
        } else {
          t.same(find(objects, 'ScaledObject'), [])
          t.match(workerHpa, [{ spec: { scaleTargetRef: { name: 'switchboard-worker' } } }])
          const adapted = (parse(readFileSync(join(KIT, 'components/worker-hpa/prometheus-adapter.values.yaml'), 'utf8')) as Manifest).rules.external.map((rule: Manifest) => rule.name.as)
          const metrics = workerHpa[0]!.spec.metrics
          t.match(metrics.filter((metric: Manifest) => metric.type === 'Resource'), [{ resource: { name: 'cpu' } }], 'CPU, when the queue metrics cannot be read')
          const queues = metrics.filter((metric: Manifest) => metric.type === 'External').map((metric: Manifest) => metric.external)
          t.same(queues.map((metric: Manifest) => metric.metric.selector.matchLabels.queue), loadConfig(containerEnv(objects, deploymentContainer(objects, 'switchboard-worker'))).workerQueues, 'every backlog the workers clear')
          t.ok(queues.every((metric: Manifest) => adapted.includes(metric.metric.name) && metric.target.type === 'AverageValue'), 'each a metric the adapter rules serve, per worker')
        }
        t.same(one(objects, 'NetworkPolicy', 'switchboard-worker').spec.ingress, [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], ports: [{ protocol: 'TCP', port: 3001 }] }], 'worker metrics only from the monitoring namespace (the default)')
        t.same(one(objects, 'NetworkPolicy', 'switchboard-api').spec.ingress, [
          { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }], ports: [{ protocol: 'TCP', port: 3000 }] },
          { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], ports: [{ protocol: 'TCP', port: 3002 }] }
        ], 'the api from the ingress controller\'s namespace only, its metrics only from the monitoring namespace')
        const trusted = loadConfig(containerEnv(objects, deploymentContainer(objects, 'switchboard-api'))).trustProxy
        t.same(trusted, ['loopback', 'linklocal', 'uniquelocal', '100.64.0.0/10'], 'the ingress controller\'s pod ranges, private or shared, are trusted: no other pod reaches the port')
      })

      t.test('the migration Job: a hashed name, a deadline for a large table, cleaned up', async (t) => {
        t.equal(jobs.length, 1)
        const [job] = jobs
        t.match(job!.metadata.name, HASHED('switchboard-migrate'))
        t.ok(job!.spec.activeDeadlineSeconds >= 3600, `an hour for an index build (${job!.spec.activeDeadlineSeconds} s)`)
        t.ok(job!.spec.ttlSecondsAfterFinished > 0)
        t.match(job!.metadata.annotations, { 'argocd.argoproj.io/hook': 'PreSync', 'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation' }, 'an Argo CD hook: its deletion after the TTL is no drift')
        t.equal(job!.spec.template.spec.restartPolicy, 'Never')
        t.equal(kit.render(overlay).find((object) => object.kind === 'Job')!.metadata.name, job!.metadata.name, 're-rendering the same release gives the same Job')
      })
    })
  }
})

t.test('the image is set once, in components/release, and any reference makes a valid migration Job', async (t) => {
  const digest = `sha256:${randomBytes(32).toString('hex')}`
  const references = [
    { entry: { newName: 'registry.internal:5000/switchboard', newTag: '0.2.0' }, image: 'registry.internal:5000/switchboard:0.2.0' },
    { entry: { newName: 'registry.internal:5000/platform/team/switchboard', newTag: '0.2.0', digest }, image: `registry.internal:5000/platform/team/switchboard:0.2.0@${digest}` },
    { entry: { newName: 'registry.internal:5000/switchboard', newTag: '0.3.0' }, image: 'registry.internal:5000/switchboard:0.3.0' }
  ]
  const jobNames = new Set<string>()
  for (const { entry, image } of references) {
    const kit = copyKit(t)
    kit.edit('components/release/kustomization.yaml', (component) => { component.images = [{ name: 'switchboard', ...entry }] })
    for (const overlay of ['dev', 'production', 'production-hpa']) {
      const objects = kit.render(overlay)
      const images = podSpecs(objects).flatMap((spec) => [...(spec.initContainers ?? []), ...spec.containers]).map((container) => container.image)
      t.same([...new Set(images)], [image], `${overlay}: every container runs ${image}`)
      const [job] = find(objects, 'Job')
      t.match(job!.metadata.name, DNS_LABEL, `${overlay}: ${job!.metadata.name} is a valid name`)
      t.ok(job!.metadata.name.length <= 63, `${overlay}: at most 63 characters`)
      t.doesNotThrow(() => { new Job(job).validate() })
      if (overlay === 'production') jobNames.add(job!.metadata.name)
    }
  }
  t.equal(jobNames.size, references.length, 'each release is a new Job')
})

t.test('a settings or credentials edit rolls the pods and leaves the migration Job as it is', async (t) => {
  const kit = copyKit(t)
  const before = kit.render('production')
  const settingsEdited = kit.render(kit.overlay('settings-edited', (kustomization) => {
    setSettings(kustomization, ['LOG_LEVEL=debug'])
  }))
  writeFileSync(join(kit.dir, 'overlays/production/secrets.env'), filledIn('secrets.example.env', { ...SECRETS, ADMIN_PASSWORD: randomBytes(12).toString('base64url') }))
  const secretEdited = kit.render('production')

  const template = (objects: Manifest[], name: string): string => JSON.stringify(one(objects, 'Deployment', name).spec.template)
  const configName = (objects: Manifest[]): string => one(objects, 'ConfigMap', HASHED('switchboard-config')).metadata.name
  const secretName = (objects: Manifest[]): string => one(objects, 'Secret', HASHED('switchboard-secrets')).metadata.name
  const jobName = (objects: Manifest[]): string => find(objects, 'Job')[0]!.metadata.name

  t.not(configName(settingsEdited), configName(before), 'a new ConfigMap name')
  t.not(secretName(secretEdited), secretName(before), 'a new Secret name')
  for (const name of ['switchboard-api', 'switchboard-worker']) {
    t.not(template(settingsEdited, name), template(before, name), `${name}: a settings edit changes the pod template (a rollout)`)
    t.not(template(secretEdited, name), template(before, name), `${name}: a credentials edit changes the pod template (a rollout)`)
    t.ok(template(secretEdited, name).includes(secretName(secretEdited)))
  }
  t.equal(one(secretEdited, 'TriggerAuthentication', 'switchboard-redis').spec.secretTargetRef[0].name, secretName(secretEdited), 'KEDA follows the Secret')
  t.equal(jobName(settingsEdited), jobName(before), 'the Job (whose template cannot change) is untouched by a settings edit')
  t.equal(jobName(secretEdited), jobName(before), 'and by a credentials edit')
})

t.test('KEDA reads the list the workers fill, with the pods\' own Redis settings', async (t) => {
  const kit = copyKit(t)
  const variants: Array<{ name: string, literals: string[], components: string[] }> = [
    { name: 'prefix', literals: ['QUEUE_PREFIX=acme:prod', 'REDIS_USERNAME=switchboard'], components: [] },
    { name: 'tls', literals: ['REDIS_ADDRESS=redis.example.internal:6380'], components: ['redis-tls'] },
    { name: 'cluster', literals: ['QUEUE_PREFIX=acme', 'REDIS_ADDRESS=redis-0.redis:6379,redis-1.redis:6379,redis-2.redis:6379'], components: ['redis-cluster'] },
    { name: 'cluster-tls', literals: ['REDIS_USERNAME=switchboard', 'REDIS_ADDRESS=redis-0.redis:6380,redis-1.redis:6380'], components: ['redis-tls', 'redis-cluster'] },
    { name: 'cluster-tagged-prefix', literals: ['QUEUE_PREFIX={acme}', 'REDIS_ADDRESS=redis-0.redis:6379,redis-1.redis:6379'], components: ['redis-cluster'] }
  ]
  for (const { name, literals, components } of variants) {
    t.test(name, async (t) => {
      const objects = kit.render(kit.overlay(`keda-${name}`, (kustomization) => {
        setSettings(kustomization, literals)
        kustomization.components.push(...components.map((component) => `../../components/${component}`))
      }))
      checkKedaFollowsTheWorkers(t, objects)
      const api = containerEnv(objects, deploymentContainer(objects, 'switchboard-api'))
      t.equal(api.REDIS_URL, containerEnv(objects, deploymentContainer(objects, 'switchboard-worker')).REDIS_URL, 'the api uses the same Redis')
    })
  }

  t.test('without KEDA the Redis components still set the pods\' address', async (t) => {
    const objects = kit.render(kit.overlay('hpa-cluster-tls', (kustomization) => {
      setSettings(kustomization, ['REDIS_ADDRESS=redis-0.redis:6380,redis-1.redis:6380'])
      kustomization.components.push('../../components/redis-tls', '../../components/redis-cluster')
    }, 'production-hpa'))
    t.same(find(objects, 'ScaledObject'), [])
    const config = loadConfig(containerEnv(objects, deploymentContainer(objects, 'switchboard-worker')))
    t.equal(config.redisUrl, `rediss+cluster://:${SECRETS.REDIS_PASSWORD}@redis-0.redis:6380,redis-1.redis:6380`)
  })
})

t.test('the namespaces allowed to scrape the api and the workers, and to reach the api, are settings', async (t) => {
  const kit = copyKit(t)
  const objects = kit.render(kit.overlay('observability', (kustomization) => {
    kustomization.configMapGenerator.push({ name: 'switchboard-kit-settings', behavior: 'merge', literals: ['monitoringNamespace=observability', 'ingressNamespace=traefik'] })
  }))
  t.same(one(objects, 'NetworkPolicy', 'switchboard-worker').spec.ingress[0].from, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } } }])
  t.same(one(objects, 'NetworkPolicy', 'switchboard-api').spec.ingress[1].from, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } } }])
  t.same(one(objects, 'NetworkPolicy', 'switchboard-api').spec.ingress[0].from, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'traefik' } } }], 'the api\'s port from the ingress controller\'s namespace the overlay names')
})

t.test('an overlay\'s namePrefix: every reference follows, and Prometheus keeps the jobs the rules read', async (t) => {
  const kit = copyKit(t)
  const objects = kit.render(kit.overlay('prefixed', (kustomization) => {
    kustomization.namePrefix = 'acme-'
    kustomization.components.push('../../components/prometheus-monitors', '../../components/prometheus-rules')
  }))
  const scaledObject = one(objects, 'ScaledObject', 'acme-switchboard-worker')
  t.equal(scaledObject.spec.scaleTargetRef.name, one(objects, 'Deployment', 'acme-switchboard-worker').metadata.name, 'KEDA scales the prefixed worker Deployment')
  const authentication = one(objects, 'TriggerAuthentication', 'acme-switchboard-redis')
  t.ok(scaledObject.spec.triggers.every((trigger: Manifest) => trigger.authenticationRef.name === authentication.metadata.name), 'every trigger authenticates with the prefixed TriggerAuthentication')
  t.match(authentication.spec.secretTargetRef[0].name, HASHED('acme-switchboard-secrets'))
  t.match(one(objects, 'ServiceMonitor', 'acme-switchboard-api').spec.endpoints[0].relabelings, [{ targetLabel: 'job', replacement: 'switchboard-api' }])
  t.match(one(objects, 'PodMonitor', 'acme-switchboard-worker').spec.podMetricsEndpoints[0].relabelings, [{ targetLabel: 'job', replacement: 'switchboard-worker' }])
  t.equal(one(objects, 'NetworkPolicy', 'acme-switchboard-api').spec.ingress[0].from[0].namespaceSelector.matchLabels['kubernetes.io/metadata.name'], 'ingress-nginx', 'the kit settings still reach the prefixed objects')
})

t.test('the Prometheus Operator components scrape both apps as the jobs the rules expect', async (t) => {
  const kit = copyKit(t)
  const objects = kit.render(kit.overlay('monitored', (kustomization) => {
    kustomization.components.push('../../components/prometheus-monitors', '../../components/prometheus-rules')
  }))
  for (const object of objects.filter((object) => object.apiVersion === 'monitoring.coreos.com/v1')) {
    t.doesNotThrow(() => { new MODELS[`${object.apiVersion}/${object.kind}`]!(object).validate() }, `${object.kind} ${object.metadata.name}`)
    t.equal(object.metadata.namespace, 'switchboard', `${object.kind} in the overlay's namespace`)
  }
  const service = one(objects, 'Service', 'switchboard-api')
  const serviceMonitor = one(objects, 'ServiceMonitor', 'switchboard-api')
  t.match(service.metadata.labels, serviceMonitor.spec.selector.matchLabels, 'the ServiceMonitor selects the api\'s Service')
  t.match(serviceMonitor.spec.endpoints[0].relabelings, [{ targetLabel: 'job', replacement: 'switchboard-api' }], 'as the job the rules read, whatever the Service is named')
  const scraped = service.spec.ports.find((port: Manifest) => port.name === serviceMonitor.spec.endpoints[0].port)
  t.equal(scraped?.targetPort, 'metrics', 'by the Service\'s port for the api\'s metrics listener')

  const worker = one(objects, 'Deployment', 'switchboard-worker').spec.template
  const podMonitor = one(objects, 'PodMonitor', 'switchboard-worker')
  t.match(worker.metadata.labels, podMonitor.spec.selector.matchLabels, 'the PodMonitor selects the worker pods')
  t.equal(podMonitor.spec.podMetricsEndpoints[0].port, worker.spec.containers[0].ports[0].name, 'on their metrics port')
  t.match(podMonitor.spec.podMetricsEndpoints[0].relabelings, [{ targetLabel: 'job', replacement: 'switchboard-worker' }])

  const rules = one(objects, 'PrometheusRule', 'switchboard').spec.groups.flatMap((group: Manifest) => group.rules)
  for (const job of ['switchboard-api', 'switchboard-worker']) {
    t.ok(rules.some((rule: Manifest) => rule.expr.startsWith(`absent(up{job="${job}"} == 1)\nor (group by (namespace)`)), `an alert when no ${job} target is up, per namespace`)
  }
})

/** The roles' passwords of secrets.env with components/pgbouncer (secrets.example.env names them, commented out). */
const POOLED_ROLES = { DATABASE_API_PASSWORD: 'api-Pass_word.1~', DATABASE_WORKER_PASSWORD: 'worker-Pass_word.2~' }

/** pgbouncer.ini's `key = value` lines (comments and the %include aside). */
const iniSettings = (ini: string): Record<string, string> => Object.fromEntries(ini.split('\n')
  .map((line) => /^([a-z_]+)\s*=\s*(.*)$/.exec(line.trim()))
  .filter((match) => match !== null)
  .map((match) => [match[1]!, match[2]!]))

/**
 * components/pgbouncer as rendered: PgBouncer's Deployment, Service, budget, disruption budget and
 * NetworkPolicy; the api and the workers through it as their own roles in transaction mode, the
 * api's LISTENs and the migration straight to PostgreSQL, every reference to the objects of the render.
 */
function checkPgbouncer (t: Test, objects: Manifest[], prefix = ''): void {
  const name = `${prefix}switchboard-pgbouncer`
  const deployment = one(objects, 'Deployment', name)
  const spec = deployment.spec.template.spec
  const [container] = spec.containers
  t.equal(deployment.spec.replicas, 2, 'two replicas: one serves while the other restarts')
  const [, major, minor] = /^ghcr\.io\/cloudnative-pg\/pgbouncer:(\d+)\.(\d+)\.\d+$/.exec(container.image) ?? []
  t.ok(Number(major) > 1 || (Number(major) === 1 && Number(minor) >= 21), `a pinned PgBouncer of 1.21 or later (${container.image}): max_prepared_statements`)
  for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) t.equal(container[probe]?.tcpSocket?.port, 'postgres', `${probe} on its port`)
  t.ok(container.resources.requests.cpu && container.resources.requests.memory && container.resources.limits.memory, 'requests and a memory limit')
  t.match(container.securityContext, { runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } })
  t.match(spec.securityContext, { runAsNonRoot: true, runAsUser: Number, seccompProfile: { type: 'RuntimeDefault' } })
  t.equal(spec.automountServiceAccountToken, false)
  t.match(spec.volumes.find((volume: Manifest) => volume.name === 'tmp'), { emptyDir: { medium: 'Memory' } }, 'the passwords it writes stay in memory')

  const config = one(objects, 'ConfigMap', new RegExp(`^${name}-[a-z0-9]{10}$`))
  t.equal(spec.volumes.find((volume: Manifest) => volume.name === 'config').configMap.name, config.metadata.name, 'its settings, hashed: an edit rolls it')
  const ini = iniSettings(config.data['pgbouncer.ini'])
  t.equal(ini.pool_mode, 'transaction')
  t.same(ini.ignore_startup_parameters?.split(',').filter((parameter) => parameter.includes('timeout')), ['statement_timeout', 'idle_in_transaction_session_timeout'], 'the api\'s limits are ignored at connect, its role carries them')
  t.ok(Number(ini.max_prepared_statements) > 0, 'prepared statements of other clients are served')
  t.equal(Number(ini.listen_port), container.ports.find((port: Manifest) => port.name === 'postgres').containerPort, 'it listens on its container port')
  t.match(config.data['start.sh'], /exec pgbouncer \/etc\/switchboard-pgbouncer\/pgbouncer\.ini/)
  t.ok(container.volumeMounts.some((mount: Manifest) => mount.name === 'config' && mount.mountPath === '/etc/switchboard-pgbouncer'))
  t.same(container.command, ['sh', '/etc/switchboard-pgbouncer/start.sh'])
  const settings = one(objects, 'ConfigMap', HASHED(`${prefix}switchboard-config`))
  const secrets = one(objects, 'Secret', HASHED(`${prefix}switchboard-secrets`))
  for (const variable of container.env) {
    const ref = variable.valueFrom.configMapKeyRef ?? variable.valueFrom.secretKeyRef
    const source = variable.valueFrom.configMapKeyRef !== undefined ? settings.data : secretData(secrets)
    t.equal(ref.name, (variable.valueFrom.configMapKeyRef !== undefined ? settings : secrets).metadata.name, `${variable.name} from the rendered ${ref.name}`)
    t.ok(source[ref.key] !== undefined && source[ref.key] !== '', `${variable.name} is set`)
  }

  // The budget of docs/operations.md: every client on one replica, and the server's default 100 connections.
  const apiMax = one(objects, 'HorizontalPodAutoscaler', `${prefix}switchboard-api`).spec.maxReplicas
  const workerMax = find(objects, 'ScaledObject')[0]?.spec.maxReplicaCount ?? one(objects, 'HorizontalPodAutoscaler', `${prefix}switchboard-worker`).spec.maxReplicas
  const poolMax = Number(settings.data.DATABASE_POOL_MAX)
  const clients = (apiMax + workerMax) * poolMax
  t.ok(Number(ini.max_client_conn) >= clients, `max_client_conn (${ini.max_client_conn}) takes all ${clients} client connections on one replica`)
  const perRole = Number(ini.default_pool_size) + Number(ini.reserve_pool_size)
  t.ok(perRole < Number(ini.max_db_connections), `one role's pool (${perRole}) leaves the other some of max_db_connections (${ini.max_db_connections})`)
  const server = deployment.spec.replicas * Number(ini.max_db_connections) + apiMax + 10 + 1 + 3
  t.ok(server <= 100, `PgBouncer, the api's listeners, migrations, a backup and the superuser's reserve (${server}) fit PostgreSQL's default max_connections`)

  const service = one(objects, 'Service', name)
  t.same(service.spec.selector, deployment.spec.template.metadata.labels, 'the Service selects its pods')
  t.same(service.spec.ports, [{ name: 'postgres', port: 5432, targetPort: 'postgres' }])
  t.match(one(objects, 'PodDisruptionBudget', name).spec, { selector: { matchLabels: deployment.spec.template.metadata.labels }, unhealthyPodEvictionPolicy: 'AlwaysAllow' })
  t.ok(one(objects, 'PodDisruptionBudget', name).spec.maxUnavailable === 1 || one(objects, 'PodDisruptionBudget', name).spec.minAvailable === 0, 'a drain keeps one replica (production)')
  const policy = one(objects, 'NetworkPolicy', name)
  t.same(policy.spec.podSelector.matchLabels, deployment.spec.template.metadata.labels)
  t.same(policy.spec.ingress, [{
    from: ['api', 'worker'].map((component) => ({ podSelector: { matchLabels: one(objects, 'Deployment', `${prefix}switchboard-${component}`).spec.template.metadata.labels } })),
    ports: [{ protocol: 'TCP', port: 6432 }]
  }], 'only the api and the worker pods reach it')

  const database = `${settings.data.DATABASE_NAME}`
  const api = loadConfig(containerEnv(objects, deploymentContainer(objects, `${prefix}switchboard-api`)), { listens: true })
  t.equal(api.databaseUrl, `postgres://switchboard_api:${POOLED_ROLES.DATABASE_API_PASSWORD}@${service.metadata.name}:5432/${database}`, 'the api through PgBouncer as switchboard_api')
  t.equal(api.databasePoolMode, 'transaction')
  t.equal(api.databaseListenUrl, `postgres://switchboard_api:${POOLED_ROLES.DATABASE_API_PASSWORD}@${settings.data.DATABASE_ADDRESS}/${database}`, 'its LISTENs straight to PostgreSQL')
  const worker = loadConfig(containerEnv(objects, deploymentContainer(objects, `${prefix}switchboard-worker`)))
  t.equal(worker.databaseUrl, `postgres://switchboard_worker:${POOLED_ROLES.DATABASE_WORKER_PASSWORD}@${service.metadata.name}:5432/${database}`, 'the workers through PgBouncer as switchboard_worker')
  t.equal(worker.databasePoolMode, 'transaction')
  for (const container of migrationContainers(objects)) {
    const env = containerEnv(objects, container)
    t.notOk(env.DATABASE_POOL_MODE, `${container.name}: no pool mode`)
    t.notMatch(env.DATABASE_MIGRATION_URL, /pgbouncer/, `${container.name} migrates straight to PostgreSQL`)
  }
}

t.test('components/pgbouncer: PgBouncer in transaction mode, the api and the workers through it as roles of their own', async (t) => {
  const kit = copyKit(t)
  const example = readFileSync(join(KIT, 'secrets.example.env'), 'utf8')
  for (const key of Object.keys(POOLED_ROLES)) t.match(example, new RegExp(`^# ${key}=$`, 'm'), `secrets.example.env names ${key}`)
  for (const overlay of ['production', 'production-hpa']) {
    writeFileSync(join(kit.dir, 'overlays', overlay, 'secrets.env'), `${filledIn('secrets.example.env', SECRETS)}${Object.entries(POOLED_ROLES).map(([key, value]) => `${key}=${value}\n`).join('')}`)
  }
  const variants: Array<{ name: string, from: string, edit: (kustomization: Manifest) => void, prefix?: string }> = [
    { name: 'production', from: 'production', edit: () => {} },
    { name: 'production-hpa', from: 'production-hpa', edit: () => {} },
    {
      name: 'dev',
      from: 'dev',
      edit: (kustomization) => {
        const secrets = kustomization.secretGenerator.find((entry: Manifest) => entry.name === 'switchboard-secrets')
        secrets.literals.push(...Object.entries(POOLED_ROLES).map(([key, value]) => `${key}=${value}`))
      }
    },
    { name: 'redis-tls-cluster', from: 'production', edit: (kustomization) => { kustomization.components.push('../../components/redis-tls', '../../components/redis-cluster') } },
    { name: 'monitored', from: 'production', edit: (kustomization) => { kustomization.components.push('../../components/prometheus-monitors', '../../components/prometheus-rules') } },
    { name: 'prefixed', from: 'production', prefix: 'acme-', edit: (kustomization) => { kustomization.namePrefix = 'acme-' } }
  ]
  for (const { name, from, edit, prefix } of variants) {
    t.test(name, async (t) => {
      const objects = kit.render(kit.overlay(`pgbouncer-${name}`, (kustomization) => {
        edit(kustomization)
        setSettings(kustomization, ['DATABASE_ADDRESS=postgres.example.internal:5432', 'DATABASE_NAME=switchboard'])
        kustomization.components.push('../../components/pgbouncer')
      }, from))
      for (const object of objects) {
        const key = `${object.apiVersion}/${object.kind}`
        t.doesNotThrow(() => { new MODELS[key]!(object).validate() }, `${key} ${object.metadata.name} validates`)
      }
      checkPgbouncer(t, objects, prefix)
    })
  }
})

t.test('components/pgbouncer/roles.sql creates the roles the component connects as, the api\'s limits on its role', async (t) => {
  const roles = readFileSync(join(KIT, 'components/pgbouncer/roles.sql'), 'utf8')
  const start = readFileSync(join(KIT, 'components/pgbouncer/start.sh'), 'utf8')
  for (const role of ['switchboard_api', 'switchboard_worker']) {
    t.match(roles, new RegExp(`^create role ${role} login;$`, 'm'), `${role} is created`)
    t.match(start, new RegExp(`"${role}" "%s"`), `${role} is in PgBouncer's userlist`)
  }
  const limit = `${loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'switchboard-k8s-config-')) }).timeouts.databaseStatementMs / 1000}s`
  t.match(roles, new RegExp(`^alter role switchboard_api set statement_timeout = '${limit}';$`, 'm'), `statement_timeout on the api's role: DATABASE_STATEMENT_TIMEOUT_MS's default (${limit})`)
  t.match(roles, new RegExp(`^alter role switchboard_api set idle_in_transaction_session_timeout = '${limit}';$`, 'm'))
  t.notMatch(roles, /alter role switchboard_worker set/, 'the workers\' statements carry no limit')
})

t.test('the image is built on Node 22 LTS', async (t) => {
  const dockerfile = readFileSync(join(ROOT, 'infra/Dockerfile'), 'utf8')
  t.match(dockerfile, /^ARG NODE_IMAGE=node:22-bookworm-slim$/m)
  t.equal([...dockerfile.matchAll(/^FROM \$\{NODE_IMAGE\}/gm)].length, 2, 'both stages use it')
})
