import { fileURLToPath } from 'node:url';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { watchProcess, stopProcess, type WatchedProcess } from './processes.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

/** The compiled entry point (`npm start`): tests run what users run, so `npm test` builds first. */
export const SERVICE_MAIN = join(ROOT, 'dist/src/cli/main.js');

/** Node arguments that run `mediaforge serve` from dist/, as `npm start` does. */
export function serveArgs(): string[] {
  if (!existsSync(SERVICE_MAIN)) throw new Error(`${SERVICE_MAIN} is missing: run npm run build`);
  return ['--enable-source-maps', SERVICE_MAIN, 'serve'];
}

/** The whole service running as a child process, as users run it. */
export interface RunningService {
  url: string;
  adminToken: string;
  proc: WatchedProcess;
  /** Output lines so far (JSON log lines and the banner). */
  lines: string[];
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Environment of a service under test: loopback, a free port, its own audit folder, quiet logs. */
export function serviceEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    AUDIT_DIR: mkdtempSync(join(tmpdir(), 'mf-audit-')),
    MEDIA_DIR: mkdtempSync(join(tmpdir(), 'mf-media-')),
    ...(env.MONGO_URL ? { ADMIN_TOKEN: TEST_ADMIN_TOKEN } : {}),
    ...env,
  };
}

/** Spawns the service (`mediaforge serve`) and waits until it prints its URL. */
export async function startService(env: Record<string, string | undefined> = {}): Promise<RunningService> {
  const fullEnv = serviceEnv(env);
  const proc = watchProcess(process.execPath, serveArgs(), fullEnv);
  const match = await proc.waitForLine(/listening on (http:\/\/\S+)/, 60_000);
  const generated = proc.lines.map((l) => /admin token:\s+(\S+)/.exec(l)?.[1]).find(Boolean);
  return {
    url: match[1]!,
    adminToken: fullEnv.ADMIN_TOKEN ?? generated ?? '',
    proc,
    lines: proc.lines,
    stop: (signal = 'SIGTERM') => stopProcess(proc, signal, 20_000),
  };
}

/** A JSON answer. */
export interface ApiAnswer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

/** Calls the service with an optional bearer token and JSON body. */
export async function call<T = Record<string, unknown>>(
  baseUrl: string,
  method: string,
  path: string,
  options: {
    token?: string;
    body?: unknown;
    rawBody?: string | Buffer;
    headers?: Record<string, string>;
  } = {},
): Promise<ApiAnswer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let body: string | Buffer | undefined = options.rawBody;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: (text ? JSON.parse(text) : undefined) as T,
  };
}

/** Admin API helpers for setting up users and keys in tests. */
export function adminClient(service: Pick<RunningService, 'url' | 'adminToken'>) {
  const admin = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) =>
    call<T>(service.url, method, `/api/admin/v1${path}`, { token: service.adminToken, body });
  return {
    call: admin,
    async createUser(email: string, credits = 0): Promise<string> {
      const answer = await admin<{ user: { id: string } }>('POST', '/users', { email, credits });
      if (answer.status !== 201)
        throw new Error(`createUser: ${answer.status} ${JSON.stringify(answer.body)}`);
      return answer.body.user.id;
    },
    async createKey(userId: string, scopes: string[] = []): Promise<{ id: string; apiKey: string }> {
      const answer = await admin<{ key: { id: string }; api_key: string }>('POST', `/users/${userId}/keys`, {
        scopes,
      });
      if (answer.status !== 201)
        throw new Error(`createKey: ${answer.status} ${JSON.stringify(answer.body)}`);
      return { id: answer.body.key.id, apiKey: answer.body.api_key };
    },
  };
}
