/**
 * infra/k8s: every overlay renders with `kubectl kustomize` (kubectl ships with this kind of
 * machine) and every object validates against the Kubernetes and KEDA schemas; then what a
 * reviewer would check by hand: one image in two Deployments differing by command, probes,
 * resources and a locked-down security context on every container, credentials only in the
 * Secret, autoscaling, disruption budgets, the network policy and a re-applicable migration.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject'
import { TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1/TriggerAuthentication'
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
import { IMAGE_COMMANDS } from '@switchboard/testing/image'

const K8S = fileURLToPath(new URL('../../infra/k8s/', import.meta.url))

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
  'keda.sh/v1alpha1/TriggerAuthentication': TriggerAuthentication
}

type Manifest = Record<string, any>

function render (overlay: string): Manifest[] {
  let yaml: string
  try {
    yaml = execFileSync('kubectl', ['kustomize', `${K8S}overlays/${overlay}`], { encoding: 'utf8' })
  } catch (err) {
    throw new Error(`kubectl kustomize ${overlay} failed (kubectl comes with this machine's image): ${(err as Error).message}`)
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

const CREDENTIAL = /SECRET|PASSWORD|TOKEN|KEY|DATABASE_URL|REDIS_URL|REDIS_ADDRESS/
const URL_WITH_PASSWORD = /:\/\/[^/@\s]*:[^/@\s]+@/

for (const overlay of ['dev', 'production', 'production-hpa']) {
  t.test(`overlay ${overlay}`, async (t) => {
    const objects = render(overlay)

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

    const deployments = find(objects, 'Deployment')
    const jobs = find(objects, 'Job')
    const podSpecs = [...deployments, ...jobs].map((object) => object.spec.template.spec)
    const allContainers = podSpecs.flatMap((spec) => [...(spec.initContainers ?? []), ...spec.containers])

    t.test('one image by version, two Deployments differing in command', async (t) => {
      t.same(deployments.map((d) => d.metadata.name).sort(), ['switchboard-api', 'switchboard-worker'])
      const images = new Set(allContainers.map((container) => container.image))
      t.equal(images.size, 1, `one image: ${[...images].join(', ')}`)
      const [image] = images
      t.match(image, /^[^:]+:\d+\.\d+\.\d+$/, 'tagged with a version, never latest')
      const [api] = find(objects, 'Deployment', 'switchboard-api')
      const [worker] = find(objects, 'Deployment', 'switchboard-worker')
      t.same(api!.spec.template.spec.containers[0].command, IMAGE_COMMANDS.api)
      t.same(worker!.spec.template.spec.containers[0].command, IMAGE_COMMANDS.worker)
      for (const container of [...podSpecs.flatMap((spec) => spec.initContainers ?? []), ...jobs.flatMap((job) => job.spec.template.spec.containers)]) {
        t.same(container.command, IMAGE_COMMANDS.migrate, `${container.name} migrates`)
      }
      t.notOk('replicas' in api!.spec || 'replicas' in worker!.spec, 'autoscalers own the replica counts')
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
      for (const spec of podSpecs) {
        t.match(spec.securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } })
        t.equal(spec.automountServiceAccountToken, false)
        t.ok(spec.volumes.some((volume: Manifest) => volume.name === 'tmp' && volume.emptyDir !== undefined), 'an emptyDir for /tmp')
      }
      for (const container of allContainers) {
        t.ok(container.resources?.requests?.cpu && container.resources?.requests?.memory && container.resources?.limits?.memory, `${container.name}: requests and a memory limit`)
        t.match(container.securityContext, { runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } }, `${container.name}: security context`)
        t.same(container.volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }], `${container.name}: only /tmp is writable`)
      }
      const [api] = find(objects, 'Deployment', 'switchboard-api')
      t.same(api!.spec.template.spec.containers[0].lifecycle.preStop.exec.command, ['sleep', '10'], 'the api keeps serving while endpoints update')
      t.ok(api!.spec.template.spec.terminationGracePeriodSeconds > 20, 'grace covers preStop and draining')
    })

    t.test('settings in the ConfigMap, every credential in the Secret', async (t) => {
      const [config] = find(objects, 'ConfigMap', 'switchboard-config')
      for (const [key, value] of Object.entries(config!.data as Record<string, string>)) {
        t.notMatch(key, CREDENTIAL, `${key} is not a credential`)
        t.notMatch(value, URL_WITH_PASSWORD, `${key} holds no password`)
      }
      for (const container of allContainers) {
        t.same(container.envFrom, [{ configMapRef: { name: 'switchboard-config' } }, { secretRef: { name: 'switchboard-secrets' } }], `${container.name} reads both`)
        t.notOk(container.env, `${container.name} has no inline variables`)
      }
      // The ConfigMap plus the Secret's credentials make a configuration the service accepts.
      const settings = loadConfig({
        ...config!.data,
        DATABASE_URL: 'postgres://switchboard:pw@postgres:5432/switchboard',
        JWT_SECRET: randomBytes(48).toString('base64url'),
        ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        ADMIN_PASSWORD: randomBytes(12).toString('base64url'),
        CHAT_APP_SECRET: randomBytes(16).toString('hex')
      })
      t.equal(settings.workerHttpPort, 3001)
      const [worker] = find(objects, 'Deployment', 'switchboard-worker')
      t.equal(worker!.spec.template.spec.containers[0].ports[0].containerPort, settings.workerHttpPort, 'the worker probes the port it listens on')
      t.equal(worker!.spec.template.metadata.annotations['prometheus.io/port'], String(settings.workerHttpPort))

      const secrets = find(objects, 'Secret')
      if (overlay === 'dev') {
        t.same(secrets.map((secret) => secret.metadata.name), ['switchboard-secrets'])
        t.equal(config!.data.NODE_ENV, 'development', 'the throwaway Secret is only used in development mode')
      } else {
        t.same(secrets, [], 'production brings its own Secret')
        t.equal(config!.data.NODE_ENV, 'production')
      }
    })

    t.test('autoscaling, disruption budgets, network policy', async (t) => {
      t.match(find(objects, 'HorizontalPodAutoscaler', 'switchboard-api'), [{ spec: { scaleTargetRef: { kind: 'Deployment', name: 'switchboard-api' } } }])
      for (const name of ['switchboard-api', 'switchboard-worker']) t.equal(find(objects, 'PodDisruptionBudget', name).length, 1, `${name} has a disruption budget`)
      const scaled = find(objects, 'ScaledObject')
      const workerHpa = find(objects, 'HorizontalPodAutoscaler', 'switchboard-worker')
      if (overlay === 'production') {
        const [config] = find(objects, 'ConfigMap', 'switchboard-config')
        t.match(scaled, [{ spec: { scaleTargetRef: { name: 'switchboard-worker' }, triggers: [{ type: 'redis', metadata: { listName: `${config!.data.QUEUE_PREFIX}:workflow-runs:wait` }, authenticationRef: { name: 'switchboard-redis' } }] } }])
        t.match(find(objects, 'TriggerAuthentication', 'switchboard-redis'), [{ spec: { secretTargetRef: [{ name: 'switchboard-secrets' }, { name: 'switchboard-secrets' }] } }])
        t.same(workerHpa, [], 'KEDA alone scales the workers')
      } else {
        t.same(scaled, [])
        t.match(workerHpa, [{ spec: { scaleTargetRef: { name: 'switchboard-worker' } } }])
      }
      const [workerPolicy] = find(objects, 'NetworkPolicy', 'switchboard-worker')
      t.same(workerPolicy!.spec.ingress, [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], ports: [{ protocol: 'TCP', port: 3001 }] }], 'worker metrics only from monitoring')
    })

    t.test('the migration Job is named after the release and cleaned up', async (t) => {
      t.equal(jobs.length, 1)
      const [job] = jobs
      const tag = job!.spec.template.spec.containers[0].image.split(':')[1]
      t.equal(job!.metadata.name, `switchboard-migrate-${tag}`, 're-applying a release changes nothing; a new release is a new Job')
      t.ok(job!.spec.ttlSecondsAfterFinished > 0)
      t.equal(job!.spec.template.spec.restartPolicy, 'Never')
    })
  })
}
