// The production install (docs/operator.md, Install and start), as deploy/Dockerfile does it: package.json, the lock file, bin/ and a
// built dist/ in an empty folder, `npm ci --omit=dev --ignore-scripts`, then the compiled service runs from
// there with no TypeScript tooling installed.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { watchProcess, stopProcess } from '../helpers/processes.ts';
import { call, serviceEnv, SERVICE_MAIN } from '../helpers/service.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DEV_ONLY = ['tsx', 'esbuild', 'typescript'];

/** Every installed package's name, nested node_modules included. */
function installedPackages(nodeModules: string): string[] {
  if (!existsSync(nodeModules)) return [];
  return readdirSync(nodeModules, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
    .flatMap((entry) => {
      const path = join(nodeModules, entry.name);
      const packages = entry.name.startsWith('@')
        ? readdirSync(path).map((name) => ({ name: `${entry.name}/${name}`, path: join(path, name) }))
        : [{ name: entry.name, path }];
      return packages.flatMap((p) => [p.name, ...installedPackages(join(p.path, 'node_modules'))]);
    });
}

function withoutNpmVariables(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
}

describe('production install (npm ci --omit=dev --ignore-scripts, then dist/)', () => {
  let dir: string;
  before(async () => {
    assert.ok(existsSync(SERVICE_MAIN), `${SERVICE_MAIN} is missing: run npm run build`);
    dir = mkdtempSync(join(tmpdir(), 'mf-production-'));
    for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(ROOT, file), join(dir, file));
    for (const folder of ['bin', 'dist']) cpSync(join(ROOT, folder), join(dir, folder), { recursive: true });
    await promisify(execFile)(
      'npm',
      ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'],
      // Without the npm_* variables `npm test` exports: this install takes only its own flags.
      { cwd: dir, env: withoutNpmVariables(), timeout: 90_000, maxBuffer: 16 * 1024 * 1024 },
    );
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('installs no TypeScript tooling', () => {
    const packages = installedPackages(join(dir, 'node_modules'));
    assert.ok(packages.includes('mongodb'), 'the production dependencies are installed');
    const devOnly = packages.filter((name) => DEV_ONLY.includes(name) || name.startsWith('@esbuild/'));
    assert.deepEqual(devOnly, []);
    // Nor anywhere resolution could reach from the install (a node_modules above the folder).
    const require = createRequire(join(dir, 'package.json'));
    for (const name of DEV_ONLY) assert.throws(() => require.resolve(name), { code: 'MODULE_NOT_FOUND' });
  });

  it('serves the API and the dashboard from dist/ in embedded mode, the demo user signs in, and it stops on SIGTERM', async () => {
    const proc = watchProcess(
      process.execPath,
      ['--enable-source-maps', join(dir, 'dist/src/cli/main.js'), 'serve'],
      serviceEnv({}),
    );
    try {
      const url = (await proc.waitForLine(/listening on (http:\/\/\S+)/, 60_000))[1]!;
      const apiKey = proc.lines.map((line) => /demo API key: (mf_\S+)/.exec(line)?.[1]).find(Boolean);
      assert.ok(apiKey, 'the banner prints a demo API key');

      const health = await call(url, 'GET', '/healthz');
      assert.equal(health.status, 200);
      const models = await call<{ models: unknown[] }>(url, 'GET', '/api/v1/models', { token: apiKey });
      assert.equal(models.status, 200);
      assert.equal(models.body.models.length, 3);

      // The dashboard, and the banner's demo credentials signing in to it (docs/accounts.md).
      const page = await fetch(`${url}/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<script type="module"[^>]* src="\/assets\/[^"]+\.js"/);
      const demo = proc.lines
        .map((line) => /sign in as (\S+) with the password (\S+)\)/.exec(line))
        .find(Boolean);
      assert.ok(demo, 'the banner prints the demo user and password');
      const signIn = await fetch(`${url}/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: url },
        body: new URLSearchParams({ email: demo[1]!, password: demo[2]!, next: '/' }),
      });
      assert.equal(signIn.status, 303);
      assert.equal(signIn.headers.get('location'), '/');
      const cookie = /mf_session=[^;]+/.exec(signIn.headers.get('set-cookie') ?? '')?.[0];
      assert.ok(cookie, 'a session cookie');
      const session = await call<{ user: { email: string } }>(url, 'GET', '/api/dashboard/v1/session', {
        headers: { cookie },
      });
      assert.equal(session.status, 200);
      assert.equal(session.body.user.email, demo[1]);
    } finally {
      const exit = await stopProcess(proc, 'SIGTERM', 20_000);
      assert.deepEqual(exit, { code: 0, signal: null }, proc.lines.join('\n'));
    }
  });
});
