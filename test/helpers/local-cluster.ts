// The local cluster of deploy/local/cluster.sh (docs/deploy.md) for tests and benches: 3 nats-server (JetStream
// cluster), one jongodb and N service nodes as real detached processes, started in a fresh state folder.
//
//   const cluster = await startLocalCluster({ env: { SANDBOX_IMAGE_MS: '100' } });
//   const [n1, n2, n3] = cluster.nodes;          // { name: 'node-1', url: 'http://127.0.0.1:<port>', pid }
//   await cluster.kill('node-2');               // SIGKILL, resolves once the pid is gone
//   await cluster.start('node-2');              // same port, same env; resolves when /healthz is 200
//   await cluster.down();                       // also runs on process exit, so a failed test leaves nothing
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The script the wrapper drives. */
export const CLUSTER_SCRIPT = join(ROOT, 'deploy/local/cluster.sh');

/** One process of the cluster; `pid` follows restarts (`start`). */
export interface ClusterProcess {
  name: string;
  url: string;
  pid: number;
  /** NATS nodes only: the HTTP monitoring base URL (`/healthz`, `/jsz`, `/routez`). */
  monitorUrl?: string;
}

export interface LocalCluster {
  /** The state folder (`MF_CLUSTER_DIR`): configs, JetStream storage, `<name>.log`, `cluster.json`. */
  dir: string;
  adminToken: string;
  mongoUrl: string;
  /** name nats-1.., url nats://127.0.0.1:port */
  nats: ClusterProcess[];
  /** name node-1.., url http://127.0.0.1:port */
  nodes: ClusterProcess[];
  /** jongodb. */
  mongo: { pid: number };
  /** Sends `signal` (default SIGKILL) and waits until the pid is gone. */
  kill(name: string, signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM, waits for the exit (graceful, up to SHUTDOWN_GRACE_MS + 10 s, then SIGKILL). */
  stop(name: string): Promise<void>;
  /** Starts a stopped process again on the same ports; resolves when healthy (nodes) / ready (nats). */
  start(name: string): Promise<void>;
  /** `cluster.sh status` output: one line per process (never throws). */
  status(): Promise<string>;
  /** The log file's text (every start of the process, each after a `==== <name> start` line). */
  logs(name: string): string;
  /** The last pid of each process, by name (a dead or stopped one included). */
  pids(): Record<string, number>;
  down(): Promise<void>;
}

interface ClusterJson {
  dir: string;
  admin_token: string;
  mongo_url: string;
  nats: { name: string; url: string; monitor_url: string; pid: number }[];
  nodes: { name: string; url: string; pid: number }[];
  mongo: { pid: number };
}

/** Clusters not yet stopped: `down` runs for each when the process exits or is interrupted. */
const running = new Set<{ downSync(): void }>();
let hooked = false;

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const cluster of [...running]) cluster.downSync();
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      for (const cluster of [...running]) cluster.downSync();
      process.kill(process.pid, signal); // the default action now that this listener is gone
    });
  }
}

/**
 * Runs `cluster.sh up` in a fresh temporary folder with the caller's environment plus `env` (service
 * variables pass through to every node) and returns the running cluster.
 */
export async function startLocalCluster(
  options: { nodes?: number; natsNodes?: 1 | 3; env?: Record<string, string> } = {},
): Promise<LocalCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'mf-cluster-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...options.env,
    MF_CLUSTER_DIR: dir,
    MF_CLUSTER_NODES: String(options.nodes ?? 3),
    MF_CLUSTER_NATS: String(options.natsNodes ?? 3),
  };
  delete env.NODE_TEST_CONTEXT; // the test runner's marker must not reach the services

  const script = async (...args: string[]) => {
    try {
      return (await run('bash', [CLUSTER_SCRIPT, ...args], { env, maxBuffer: 16 * 1024 * 1024 })).stdout;
    } catch (error) {
      const failed = error as Error & { stdout?: string; stderr?: string };
      throw new Error(
        `cluster.sh ${args.join(' ')} failed: ${failed.message}\n${failed.stdout ?? ''}${failed.stderr ?? ''}`,
        { cause: error },
      );
    }
  };
  const downSync = () => {
    running.delete(handle);
    try {
      execFileSync('bash', [CLUSTER_SCRIPT, 'down'], { env, stdio: 'ignore', timeout: 120_000 });
    } catch {
      // best effort on the way out
    }
  };
  const handle = { downSync };
  hookExit();
  running.add(handle);

  try {
    await script('up');
  } catch (error) {
    downSync(); // `up` stops what it started, but the hook must not linger
    throw error;
  }

  const read = () => JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as ClusterJson;
  const first = read();
  const nats: ClusterProcess[] = first.nats.map((n) => ({
    name: n.name,
    url: n.url,
    pid: n.pid,
    monitorUrl: n.monitor_url,
  }));
  const nodes: ClusterProcess[] = first.nodes.map((n) => ({ name: n.name, url: n.url, pid: n.pid }));
  const mongo = { pid: first.mongo.pid };
  /** Pids change on `start`: the same objects are updated, so references the tests keep stay current. */
  const refresh = () => {
    const now = read();
    for (const n of now.nats) Object.assign(nats.find((p) => p.name === n.name) ?? {}, { pid: n.pid });
    for (const n of now.nodes) Object.assign(nodes.find((p) => p.name === n.name) ?? {}, { pid: n.pid });
    mongo.pid = now.mongo.pid;
  };
  let downed = false;

  return {
    dir,
    adminToken: first.admin_token,
    mongoUrl: first.mongo_url,
    nats,
    nodes,
    mongo,
    async kill(name, signal = 'SIGKILL') {
      await script('kill', name, signal.replace(/^SIG/, ''));
      refresh();
    },
    async stop(name) {
      await script('stop', name);
      refresh();
    },
    async start(name) {
      await script('start', name);
      refresh();
    },
    async status() {
      try {
        return await script('status');
      } catch (error) {
        return (error as Error).message.replace(/^cluster\.sh status failed: [^\n]*\n/, '');
      }
    },
    logs(name) {
      try {
        return readFileSync(join(dir, `${name}.log`), 'utf8');
      } catch {
        return '';
      }
    },
    pids() {
      const now = read();
      return Object.fromEntries(
        [...now.nats, ...now.nodes, { name: 'mongo', pid: now.mongo.pid }].map((p) => [p.name, p.pid]),
      );
    },
    async down() {
      if (downed) return;
      downed = true;
      running.delete(handle);
      await script('down');
    },
  };
}

/** The three service nodes of a test cluster, by position. */
export type ThreeNodes = [ClusterProcess, ClusterProcess, ClusterProcess];

/**
 * The 3-node cluster of a test suite (3 nats-server as well), its start time logged. Unless `env` says otherwise,
 * the rate limits are out of the way and the nodes log at info (the suites read their logs).
 */
export async function startTestCluster(
  env: Record<string, string>,
): Promise<{ cluster: LocalCluster; nodes: ThreeNodes }> {
  const started = Date.now();
  const cluster = await startLocalCluster({
    nodes: 3,
    natsNodes: 3,
    env: { RATE_LIMIT_PER_MINUTE: '100000', EXPORT_RATE_PER_MINUTE: '100', LOG_LEVEL: 'info', ...env },
  });
  console.log(`cluster up in ${Date.now() - started} ms (${cluster.dir})`);
  return { cluster, nodes: cluster.nodes as ThreeNodes };
}
