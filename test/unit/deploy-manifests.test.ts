import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { EnvSchema, loadConfig } from '../../src/platform/config.ts';
import {
  composeValidator,
  modelErrors,
  strictErrors,
  type Json,
  type K8sObject,
} from '../helpers/manifest-schemas.ts';

// The deployment files of docs/deploy.md (deploy/compose.yaml, deploy/k8s/, deploy/Dockerfile, deploy/nginx.conf),
// checked without a container engine or a cluster: against the published schemas, against src/platform/config.ts, and
// against each other (ports, probes, grace periods, names).

const root = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(join(root, path), 'utf8');

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: unknown;
}
interface Container {
  name: string;
  image: string;
  ports?: Array<{ name?: string; containerPort: number }>;
  env?: EnvVar[];
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  livenessProbe?: { httpGet?: { path: string; port: number | string } };
  readinessProbe?: { httpGet?: { path: string; port: number | string } };
  startupProbe?: { httpGet?: { path: string; port: number | string } };
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  securityContext?: Json;
}
interface PodSpec {
  containers: Container[];
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
}
interface Workload extends K8sObject {
  spec: {
    replicas: number;
    serviceName?: string;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    volumeClaimTemplates?: unknown[];
  };
}
interface ComposeService {
  build?: unknown;
  environment?: Record<string, string | number | boolean | null> | string[];
  healthcheck?: { test: string[] | string };
  stop_grace_period?: string;
  depends_on?: Record<string, { condition: string }>;
}

/** Every YAML document of a file, failing on a syntax error. */
function yamlDocs(path: string): unknown[] {
  return parseAllDocuments(read(path)).map((doc) => {
    assert.deepEqual(doc.errors, [], `${path}: ${doc.errors.join('; ')}`);
    return doc.toJS() as unknown;
  });
}

const k8sDir = 'deploy/k8s';
const k8sFiles = readdirSync(join(root, k8sDir))
  .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
  .sort();
const k8s = k8sFiles.flatMap((file) =>
  yamlDocs(`${k8sDir}/${file}`).map((obj) => ({ file, obj: obj as K8sObject })),
);
const k8sOf = <T extends K8sObject>(kind: string, name: string): T => {
  const found = k8s.find(({ obj }) => obj.kind === kind && obj.metadata.name === name);
  assert.ok(found, `deploy/k8s has no ${kind} ${name}`);
  return found.obj as T;
};
const compose = parse(read('deploy/compose.yaml'), { merge: true }) as {
  services: Record<string, ComposeService>;
};
const composeNodes = Object.entries(compose.services).filter(([, service]) => service.build !== undefined);

const envNames = new Set(Object.keys(EnvSchema.properties));
/** Variables the deployment may set beyond the service's own: Node's, read by node itself. */
const ALSO_ALLOWED = new Set(['NODE_OPTIONS']);
/** What a cluster deployment must say (docs/deploy.md); NODE_ID's default (hostname-pid) is unstable, so set too. */
const REQUIRED = [
  'MONGO_URL',
  'NATS_URL',
  'NATS_REPLICAS',
  'ADMIN_TOKEN',
  'HOST',
  'NODE_ID',
  'PUBLIC_BASE_URL',
  'MEDIA_STORE',
];
const defaultOf = (name: string): unknown =>
  (EnvSchema.properties as Record<string, { default?: unknown }>)[name]?.default;
const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789';

/** Compose's `${VAR}`, `${VAR:-default}` and `${VAR:?message}`, with the operator's environment `env`. */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(
    /\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}/g,
    (_match, name: string, op?: string, rest?: string) => {
      const set = env[name];
      if (set !== undefined && set !== '') return set;
      if (op === '?') throw new Error(`${name}: ${rest}`);
      return op === '-' ? (rest ?? '') : '';
    },
  );
}

function composeEnv(service: ComposeService, env: Record<string, string>): Record<string, string> {
  const raw = service.environment ?? {};
  const entries = Array.isArray(raw)
    ? raw.map((line) => {
        const at = line.indexOf('=');
        return [line.slice(0, at), line.slice(at + 1)] as const;
      })
    : Object.entries(raw).map(([name, value]) => [name, value === null ? '' : String(value)] as const);
  return Object.fromEntries(entries.map(([name, value]) => [name, interpolate(value, env)]));
}

/** Go-style durations as compose writes them (`50s`, `1m30s`) in milliseconds. */
function durationMs(text: string): number {
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  assert.equal(parts.map((p) => p[0]).join(''), text, `not a duration: ${text}`);
  return parts.reduce((sum, [, n, u]) => sum + Number(n) * (unit[u as string] ?? NaN), 0);
}

const sampleDeployment = (): K8sObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'broken' },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'x' } },
    template: { metadata: { labels: { app: 'x' } }, spec: { containers: [{ name: 'x', image: 'x' }] } },
  },
});

describe('deploy/k8s against the Kubernetes OpenAPI schemas', () => {
  it('parses into objects of known kinds, every one valid', async () => {
    assert.ok(k8s.length >= 9, `only ${k8s.length} objects`);
    for (const { file, obj } of k8s) {
      assert.equal(await modelErrors(obj), undefined, `${file}: ${obj.kind} ${obj.metadata?.name}`);
    }
  });

  it('has no unknown field, wrong type or missing required field anywhere (strict)', () => {
    assert.deepEqual(strictErrors(k8s.map(({ obj }) => obj)), []);
  });

  it('rejects broken objects, so the checks above can fail', async () => {
    assert.equal(await modelErrors(sampleDeployment()), undefined);
    assert.deepEqual(strictErrors([sampleDeployment()]), []);

    const wrongType = sampleDeployment();
    (wrongType.spec as Json).replicas = 'three';
    assert.match((await modelErrors(wrongType)) ?? '', /replicas must be integer/);
    assert.match(strictErrors([wrongType]).join('\n'), /replicas/);

    const unknownField = sampleDeployment();
    (unknownField.spec as Json).replica = 3; // the schema validators let this through …
    assert.equal(await modelErrors(unknownField), undefined);
    assert.match(
      strictErrors([unknownField]).join('\n'),
      /'"replica"' does not exist in type 'DeploymentSpec'/,
    );

    const deepUnknown = sampleDeployment() as Workload;
    (deepUnknown.spec.template.spec.containers[0] as unknown as Json).imagePullPolice = 'Always';
    assert.match(
      strictErrors([deepUnknown]).join('\n'),
      /'"imagePullPolice"' does not exist in type 'Container'/,
    );

    assert.match((await modelErrors({ ...sampleDeployment(), kind: 'Deploymnet' })) ?? '', /no schema/);
  });

  it('lists every manifest in kustomization.yaml, and nothing else', () => {
    const kustomization = parse(read(`${k8sDir}/kustomization.yaml`)) as {
      resources: string[];
      namespace: string;
    };
    assert.deepEqual([...kustomization.resources].sort(), k8sFiles);
    assert.equal(kustomization.namespace, k8sOf('Namespace', kustomization.namespace).metadata.name);
  });
});

describe('deploy/compose.yaml', () => {
  const validate = composeValidator();

  it('is valid against the Compose Specification schema', () => {
    assert.deepEqual(validate(compose), []);
  });

  it('rejects a broken compose file, so the check above can fail', () => {
    const broken = structuredClone(compose) as { services: Record<string, Json> };
    (broken.services['node-1'] as Json).helthcheck = { test: ['CMD', 'true'] };
    assert.match(validate(broken).join('\n'), /additionalProperty.*helthcheck/);
    const wrongType = structuredClone(compose) as { services: Record<string, Json> };
    (wrongType.services['node-1'] as Json).stop_grace_period = 50;
    assert.match(validate(wrongType).join('\n'), /stop_grace_period must be string/);
  });

  it('runs three NATS servers in one JetStream cluster, routed to each other', () => {
    const nats = Object.entries(compose.services).filter(([, s]) =>
      String((s as Json).image).startsWith('nats:2.10'),
    );
    assert.equal(nats.length, 3);
    for (const [name, service] of nats) {
      const args = (service as Json).command as string[];
      assert.ok(args.includes('--jetstream'), name);
      assert.ok(args.includes(`--name=${name}`), name);
      assert.ok(args.includes('--cluster_name=mediaforge'), name);
      const routes =
        args
          .find((a) => a.startsWith('--routes='))
          ?.slice('--routes='.length)
          .split(',') ?? [];
      assert.deepEqual(routes.sort(), nats.map(([n]) => `nats://${n}:6222`).sort(), name);
    }
  });

  it('runs a three-member MongoDB replica set that the nodes wait for', () => {
    const mongo = Object.entries(compose.services).filter(([, s]) => (s as Json).image === 'mongo:7');
    assert.equal(mongo.length, 3);
    const initiating = mongo.filter(([, s]) => JSON.stringify(s.healthcheck).includes('rs.initiate'));
    assert.equal(initiating.length, 1);
    for (const [name] of mongo)
      assert.match(JSON.stringify(initiating[0]?.[1].healthcheck), new RegExp(`host: '${name}:27017'`));
    for (const [name, node] of composeNodes) {
      assert.equal(node.depends_on?.[initiating[0]?.[0] as string]?.condition, 'service_healthy', name);
    }
  });
});

// ---- Agreement with src/platform/config.ts -------------------------------------------------------------------------------

/** The service container's effective environment in deploy/k8s: its envFrom ConfigMaps and Secrets, then env. */
function k8sServiceEnv(): Record<string, string> {
  const container = serviceContainer();
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, (k8sOf('ConfigMap', from.configMapRef.name) as Json).data);
    if (from.secretRef) {
      const secret = k8sOf('Secret', from.secretRef.name) as Json & { data?: Json; stringData?: Json };
      for (const [name, value] of Object.entries(secret.data ?? {}))
        env[name] = Buffer.from(String(value), 'base64').toString();
      Object.assign(env, secret.stringData);
    }
  }
  for (const variable of container.env ?? [])
    env[variable.name] = variable.value ?? `(from ${JSON.stringify(variable.valueFrom)})`;
  return env;
}

const serviceDeployment = () => k8sOf<Workload>('Deployment', 'mediaforge');
function serviceContainer(): Container {
  const containers = serviceDeployment().spec.template.spec.containers;
  assert.equal(containers.length, 1);
  return containers[0] as Container;
}

describe('deployment configuration agrees with src/platform/config.ts', () => {
  const operatorEnv = { ADMIN_TOKEN: TEST_ADMIN_TOKEN };

  it('sets only variables the service reads, and all that a cluster needs (compose)', () => {
    assert.equal(composeNodes.length, 3);
    for (const [name, service] of Object.entries(compose.services)) {
      for (const variable of Object.keys(composeEnv(service, operatorEnv))) {
        assert.ok(
          envNames.has(variable) || ALSO_ALLOWED.has(variable),
          `${name}: ${variable} is not in EnvSchema`,
        );
      }
    }
    const nodeIds = new Set<string>();
    for (const [name, service] of composeNodes) {
      const env = composeEnv(service, operatorEnv);
      for (const variable of REQUIRED) assert.ok(env[variable], `${name}: ${variable} is not set`);
      const config = loadConfig(env);
      assert.equal(config.mode, 'cluster', name);
      assert.equal(config.natsUrls.length, 3, name);
      assert.equal(config.natsReplicas, 3, name);
      assert.equal(config.mediaStore, 'gridfs', name);
      assert.equal(config.host, '0.0.0.0', name);
      assert.equal(config.trustProxy, true, name);
      assert.match(config.mongoUrl ?? '', /[?&]replicaSet=/, name);
      nodeIds.add(config.nodeId);
    }
    assert.equal(nodeIds.size, composeNodes.length, 'NODE_IDs are distinct');
  });

  it('takes ADMIN_TOKEN from the operator, refusing to start without it', () => {
    const [, node] = composeNodes[0] ?? [];
    assert.throws(() => composeEnv(node as ComposeService, {}), /ADMIN_TOKEN/);
    assert.equal(composeEnv(node as ComposeService, operatorEnv).ADMIN_TOKEN, TEST_ADMIN_TOKEN);
  });

  it('sets only variables the service reads, and all that a cluster needs (k8s)', () => {
    const env = k8sServiceEnv();
    for (const variable of Object.keys(env)) {
      assert.ok(envNames.has(variable) || ALSO_ALLOWED.has(variable), `${variable} is not in EnvSchema`);
    }
    for (const variable of REQUIRED) assert.ok(env[variable], `${variable} is not set`);
    const config = loadConfig({ ...env, NODE_ID: 'mediaforge-7d9f-abcde' });
    assert.equal(config.mode, 'cluster');
    assert.equal(config.natsReplicas, 3);
    assert.equal(config.mediaStore, 'gridfs');
    assert.equal(config.auditSink, 'mongo');
    assert.match(config.mongoUrl ?? '', /[?&]replicaSet=/);
    const nats = k8sOf<Workload>('StatefulSet', 'nats');
    const pods = Array.from(
      { length: nats.spec.replicas },
      (_, i) => `nats://nats-${i}.${nats.spec.serviceName}:4222`,
    );
    assert.deepEqual(config.natsUrls, pods);
  });
});

// ---- Health checks, ports, grace periods, the proxy ------------------------------------------------------------

describe('health checks, ports and shutdown', () => {
  const graceMs = (env: Record<string, string>) =>
    Number(env.SHUTDOWN_GRACE_MS ?? defaultOf('SHUTDOWN_GRACE_MS'));
  const portOf = (env: Record<string, string>) => Number(env.PORT ?? defaultOf('PORT'));

  it('compose: nodes report readiness on /healthz at their port, and get longer than the grace to stop', () => {
    for (const [name, service] of composeNodes) {
      const env = composeEnv(service, { ADMIN_TOKEN: TEST_ADMIN_TOKEN });
      const test = ([] as string[]).concat(service.healthcheck?.test ?? []).join(' ');
      assert.match(test, new RegExp(`http://127\\.0\\.0\\.1:${portOf(env)}/healthz(?![\\w/])`), name);
      assert.ok(durationMs(service.stop_grace_period ?? '10s') > graceMs(env), `${name}: stop_grace_period`);
    }
  });

  it('k8s: liveness on /livez, readiness on /healthz, at the port the service listens on', () => {
    const env = k8sServiceEnv();
    const container = serviceContainer();
    const portNumber = (port: number | string | undefined) =>
      typeof port === 'number' ? port : container.ports?.find((p) => p.name === port)?.containerPort;
    assert.equal(container.livenessProbe?.httpGet?.path, '/livez');
    assert.equal(container.readinessProbe?.httpGet?.path, '/healthz');
    for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) {
      if (probe) assert.equal(portNumber(probe.httpGet?.port), portOf(env));
    }
    const service = k8sOf<
      K8sObject & { spec: { ports: Array<{ targetPort: number | string }>; selector: Json } }
    >('Service', 'mediaforge');
    assert.equal(portNumber(service.spec.ports[0]?.targetPort), portOf(env));
    assert.deepEqual(service.spec.selector, serviceDeployment().spec.template.metadata.labels);
  });

  it('k8s: three replicas, a disruption budget, non-root, and a termination grace beyond preStop + grace', () => {
    const deployment = serviceDeployment();
    const pod = deployment.spec.template.spec;
    assert.equal(deployment.spec.replicas, 3);
    assert.equal(pod.securityContext?.runAsNonRoot, true);
    assert.equal(pod.securityContext?.runAsUser, 1000);
    const preStop = serviceContainer().lifecycle?.preStop?.exec?.command ?? [];
    const preStopMs = preStop[0] === 'sleep' ? Number(preStop[1]) * 1000 : 0;
    assert.ok(preStopMs >= 2000, 'a preStop sleep lets the endpoints drop the pod before SIGTERM');
    assert.ok((pod.terminationGracePeriodSeconds ?? 30) * 1000 > preStopMs + graceMs(k8sServiceEnv()));
    const pdb = k8sOf<
      K8sObject & {
        spec: { minAvailable?: number; maxUnavailable?: number; selector: { matchLabels: Json } };
      }
    >('PodDisruptionBudget', 'mediaforge');
    assert.ok(pdb.spec.minAvailable === 2 || pdb.spec.maxUnavailable === 1);
    assert.deepEqual(pdb.spec.selector.matchLabels, deployment.spec.selector.matchLabels);
  });

  it('k8s: NATS runs as a three-server JetStream StatefulSet with its routes on a headless Service', () => {
    const nats = k8sOf<Workload>('StatefulSet', 'nats');
    assert.equal(nats.spec.replicas, 3);
    assert.equal(nats.spec.volumeClaimTemplates?.length, 1);
    const headless = k8sOf<K8sObject & { spec: { clusterIP?: string } }>(
      'Service',
      nats.spec.serviceName ?? '',
    );
    assert.equal(headless.spec.clusterIP, 'None');
    const conf = String(((k8sOf('ConfigMap', 'nats-config') as Json).data as Json)['nats.conf']);
    assert.match(conf, /jetstream\s*\{/);
    for (let i = 0; i < 3; i++)
      assert.ok(conf.includes(`nats://nats-${i}.${nats.spec.serviceName}:6222`), `route to nats-${i}`);
  });

  it('nginx: balances every compose node, passes WebSocket upgrades and client addresses, allows large uploads', () => {
    const conf = read('deploy/nginx.conf');
    const upstream = /upstream\s+\S+\s*\{([^}]*)\}/.exec(conf)?.[1] ?? '';
    const servers = [...upstream.matchAll(/^\s*server\s+([\w.-]+):(\d+)/gm)].map((m) => `${m[1]}:${m[2]}`);
    const expected = composeNodes.map(
      ([name, s]) => `${name}:${portOf(composeEnv(s, { ADMIN_TOKEN: TEST_ADMIN_TOKEN }))}`,
    );
    assert.deepEqual(servers.sort(), expected.sort());
    assert.match(conf, /proxy_set_header\s+Upgrade\s+\$http_upgrade;/);
    assert.match(conf, /proxy_set_header\s+Connection\s+\$connection_upgrade;/);
    assert.match(conf, /proxy_http_version\s+1\.1;/);
    assert.match(conf, /proxy_set_header\s+X-Forwarded-For\s+\$proxy_add_x_forwarded_for;/);
    assert.match(conf, /proxy_next_upstream\s+[^;]*http_503/);
    const size = /client_max_body_size\s+(\d+)([kmg]?);/i.exec(conf);
    const bytes =
      Number(size?.[1]) *
      ({ '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(size?.[2] ?? '').toLowerCase()] ?? NaN);
    assert.ok(bytes >= Number(defaultOf('UPLOAD_MAX_BYTES')), `client_max_body_size ${size?.[0]}`);
    // The long-lived streams: each location matching their paths reads for at least 10 minutes.
    const locations = [...conf.matchAll(/location\s+(=|~)\s+(\S+)\s*\{([^}]*)\}/g)];
    const longRead = (path: string) =>
      locations.some(([, op, pattern, body]) => {
        const matches = op === '=' ? pattern === path : new RegExp(pattern as string).test(path);
        const seconds = Number(/proxy_read_timeout\s+(\d+)s;/.exec(body as string)?.[1]);
        return matches && seconds >= 600;
      });
    assert.ok(longRead('/api/v1/media-studio/projects/prj_0123/events'), 'events WebSocket read time-out');
    assert.ok(longRead('/api/mcp'), 'MCP stream read time-out');
  });

  it('nginx -t accepts deploy/nginx.conf (node names pointed at 127.0.0.1)', (t) => {
    if (spawnSync('nginx', ['-v']).error) {
      t.skip(
        'nginx is not installed (apt-get install nginx-light): deploy/nginx.conf was NOT checked by nginx -t',
      );
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'mf-nginx-'));
    try {
      const conf = read('deploy/nginx.conf').replace(/server\s+node-\d+:(\d+)/g, 'server 127.0.0.1:$1');
      writeFileSync(join(dir, 'nginx.conf'), conf);
      // Files, not pipes: node's pipes are sockets, which nginx cannot open as /dev/stdout (ENXIO).
      const output = openSync(join(dir, 'output.log'), 'w');
      const result = spawnSync(
        'nginx',
        [
          '-t',
          '-p',
          dir,
          '-c',
          join(dir, 'nginx.conf'),
          '-e',
          join(dir, 'error.log'),
          '-g',
          `pid ${join(dir, 'nginx.pid')};`,
        ],
        { stdio: ['ignore', output, output] },
      );
      closeSync(output);
      const said = readFileSync(join(dir, 'output.log'), 'utf8');
      assert.equal(result.status, 0, said);
      assert.match(said, /test is successful/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---- The image -------------------------------------------------------------------------------------------------

describe('deploy/Dockerfile', () => {
  const lines = read('deploy/Dockerfile')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const stages: string[][] = [];
  for (const line of lines) {
    if (/^FROM\s/i.test(line)) stages.push([]);
    stages.at(-1)?.push(line);
  }
  const copies = lines
    .filter((line) => /^COPY\s/i.test(line) && !/--from=/i.test(line))
    .flatMap((line) =>
      line
        .split(/\s+/)
        .slice(1, -1)
        .filter((arg) => !arg.startsWith('--')),
    );

  it('builds in stages and runs the compiled service as a non-root user', () => {
    assert.ok(stages.length >= 2, `${stages.length} stage(s)`);
    const final = stages.at(-1) ?? [];
    const user = final
      .filter((line) => /^USER\s/i.test(line))
      .at(-1)
      ?.split(/\s+/)[1];
    assert.ok(user && !['root', '0'].includes(user.split(':')[0] as string), `USER ${user}`);
    const cmd = final.filter((line) => /^CMD\s/i.test(line)).at(-1) ?? '';
    assert.match(cmd, /"dist\/src\/cli\/main\.js",\s*"serve"/);
  });

  it('copies paths that exist, and everything `npm run build` reads', () => {
    for (const path of copies) assert.ok(existsSync(join(root, path)), `COPY ${path}: missing`);
    const needed = new Set(['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']);
    const buildConfig = JSON.parse(read('tsconfig.build.json')) as { extends?: string; include: string[] };
    for (const path of buildConfig.include) needed.add(path);
    const build =
      (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.build ?? '';
    for (const [, config] of build.matchAll(/--config\s+(\S+)/g))
      needed.add((config as string).split('/')[0] as string);
    for (const [, project] of build.matchAll(/-p\s+(\S+)/g)) needed.add(project as string);
    const copied = new Set(copies.map((path) => path.replace(/^\.\//, '').replace(/\/$/, '')));
    for (const path of needed) assert.ok(copied.has(path), `the build stage does not COPY ${path}`);
  });

  it('does not exclude a copied path in .dockerignore', () => {
    const ignored = existsSync(join(root, '.dockerignore'))
      ? read('.dockerignore')
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => l && !l.startsWith('#'))
      : [];
    for (const path of copies)
      assert.ok(!ignored.includes(path.split('/')[0] as string), `${path} is in .dockerignore`);
  });
});
