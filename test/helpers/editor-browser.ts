// The editor page in Chromium, as the studio's browser tests set it up: a MongoDB-wire server, the service as a
// process, a user with a password and an editor client of theirs, a fresh Chromium whose page collects CSP
// violations and uncaught errors, and the sign-in that opens a page of the dashboard.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { BrowserContextOptions, Page } from 'playwright-core';
import { launchChromium, type LaunchedChromium } from './chromium.ts';
import { editorClient, editorUser, type Asset } from './editor.ts';
import { startMongo, type TestMongo } from './mongo.ts';
import { sleep } from './wait.ts';
import { adminClient, startService, type RunningService } from './service.ts';

export interface EditorBrowser {
  mongo: TestMongo;
  service: RunningService;
  chromium: LaunchedChromium;
  page: Page;
  editor: ReturnType<typeof editorClient>;
  /** The user's API key. */
  token: string;
  /** CSP violations and uncaught errors the page reported, each with the page's address. */
  problems: string[];
  /** Uploads `data` to the project as an asset named `name`. */
  upload(projectId: string, data: Buffer, type: string, name: string): Promise<Asset>;
  /** Opens `path` of the dashboard, signing in on the way. */
  signIn(path: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts everything: `db` names the test's database, `env` adds to the service's environment (its rate limit
 * is lifted: the tests click faster than a person), `browser` to Chromium's context options.
 */
export async function startEditorBrowser(options: {
  db: string;
  env?: Record<string, string>;
  browser?: BrowserContextOptions;
}): Promise<EditorBrowser> {
  const mongo = await startMongo();
  const [service, chromium] = await Promise.all([
    startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: options.db,
      RATE_LIMIT_PER_MINUTE: '100000',
      ...options.env,
    }),
    launchChromium({ viewport: { width: 1280, height: 900 }, locale: 'en-US', ...options.browser }),
  ]);
  const email = `${options.db.replace(/_/g, '-')}-${randomBytes(4).toString('hex')}@example.com`;
  const password = `pass-${randomBytes(8).toString('hex')}`;
  const user = await editorUser(service, { email });
  const set = await adminClient(service).call('POST', `/users/${user.userId}/password`, { password });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  const editor = editorClient(() => service, user.token);
  const page = chromium.page;
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Uncaught/i.test(message.text()))
      problems.push(`${page.url()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`${page.url()}: ${error.message}`));

  return {
    mongo,
    service,
    chromium,
    page,
    editor,
    token: user.token,
    problems,
    async upload(projectId, data, type, name) {
      const answer = await editor.send<{ asset: Asset }>('POST', `/${projectId}/assets`, {
        rawBody: data,
        headers: { 'content-type': type, 'x-asset-name': name },
      });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer.body.asset;
    },
    async signIn(path) {
      await page.goto(`${service.url}${path}`);
      await page.waitForURL((u) => u.pathname === '/sign-in');
      await page.getByLabel('Email', { exact: true }).fill(email);
      await page.getByLabel('Password', { exact: true }).fill(password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.waitForURL((u) => u.pathname === path);
    },
    async stop() {
      await chromium.close();
      await service.stop();
      await mongo.stop();
    },
  };
}

/**
 * Polls `check` every 100 ms until it holds, at most `limitMs`. An alert shown in any of `tabs` (by name) fails
 * at once with its text; a time-out says what their status lines said.
 */
export async function untilOnPages(
  tabs: Record<string, Page>,
  what: string,
  check: () => Promise<boolean>,
  limitMs: number,
): Promise<void> {
  const texts = async (tab: Page, role: 'alert' | 'status') =>
    (await tab.getByRole(role).allInnerTexts()).filter((text) => text.trim() !== '');
  const deadline = Date.now() + limitMs;
  for (;;) {
    if (await check()) return;
    for (const [name, tab] of Object.entries(tabs)) {
      const shown = await texts(tab, 'alert');
      if (shown.length > 0) assert.fail(`${what}: ${name} shows the error "${shown.join(' | ')}"`);
    }
    if (Date.now() > deadline) {
      const notes = await Promise.all(
        Object.entries(tabs).map(
          async ([name, tab]) => `${name} says: ${(await texts(tab, 'status')).join(' | ') || 'nothing'}`,
        ),
      );
      assert.fail(`${what}: not after ${limitMs} ms (${notes.join('; ')})`);
    }
    await sleep(100);
  }
}
