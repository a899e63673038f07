// The dashboard's rate budget, not-found page and test deliveries in Chromium (docs/dashboard.md "Rate
// limits", "Pages that do not exist"; docs/webhooks.md "Test deliveries"), by role and accessible name only:
// the requests one chat turn costs (counted, and bounded), a "Send test delivery" reaching a receiver and the
// delivery log, the not-found page at paths that do not exist, and — on a service whose session budget is
// tiny — the "retrying" notice on a 429, the page staying and then recovering.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Page, Request, Response } from 'playwright-core';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, adminClient, type RunningService } from '../helpers/service.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { assertSigned } from '../helpers/webhooks.ts';
import { launchChromium, skipWithoutChromium, type LaunchedChromium } from '../helpers/chromium.ts';
import { sleep } from '../helpers/wait.ts';

/** The second service's session budget: a page or two of the dashboard. */
const LOW_BUDGET = 12;
/** Liveness bounds, not budgets: turns run ffmpeg on shared cores; a 429 waits out the rolling minute. */
const TURN_MS = 60_000;
const RECOVERY_MS = 75_000;
/**
 * Requests of one chat turn, the instruction's POST included, at most. Before the re-reads of an event burst
 * were coalesced, this test counted 4 for the planning turn and 8 for the generating one (3 of them the events
 * socket's reconnection after the recheck took the session for a revoked key); now 3 and 4.
 */
const MAX_TURN_REQUESTS = 4;

describe('the dashboard budget in Chromium', { skip: skipWithoutChromium() }, () => {
  let mongo: TestMongo;
  let service: RunningService;
  let tight: RunningService;
  let receiver: WebhookReceiver;
  let chromium: LaunchedChromium;
  let page: Page;
  const consoleProblems: string[] = [];

  before(async () => {
    mongo = await startMongo();
    [service, tight, receiver, chromium] = await Promise.all([
      startService({
        MONGO_URL: mongo.uri,
        MONGO_DB: 'budget_browser',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        SANDBOX_VIDEO_MS: '300',
        SANDBOX_IMAGE_MS: '200',
        PROVIDER_POLL_INTERVAL_MS: '100',
      }),
      startService({
        MONGO_URL: mongo.uri,
        MONGO_DB: 'budget_browser_tight',
        DASHBOARD_RATE_PER_MINUTE: String(LOW_BUDGET),
      }),
      startWebhookReceiver(),
      launchChromium({ viewport: { width: 1280, height: 900 }, locale: 'en-US' }),
    ]);
    page = chromium.page;
    page.setDefaultTimeout(15_000);
    page.on('pageerror', (error) => consoleProblems.push(`${page.url()}: ${error.message}`));
  });

  after(async () => {
    await chromium?.close();
    await receiver?.close();
    await Promise.all([service?.stop(), tight?.stop()]);
    await mongo?.stop();
  });

  const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true });
  const nav = (name: string) =>
    page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
  const retrying = () => page.getByRole('status').filter({ hasText: /retrying/i });

  /** A new user with credits and a password, signed in through /sign-in in the browser. */
  async function signIn(target: RunningService): Promise<void> {
    const admin = adminClient(target);
    const email = `budget-${randomBytes(4).toString('hex')}@example.com`;
    const password = `pass-${randomBytes(8).toString('hex')}`;
    const userId = await admin.createUser(email, 100_000);
    assert.equal((await admin.call('POST', `/users/${userId}/password`, { password })).status, 200);
    await page.goto(`${target.url}/sign-in?next=%2Fkeys`);
    await page.getByLabel('Email', { exact: true }).fill(email);
    await page.getByLabel('Password', { exact: true }).fill(password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL((u) => u.pathname === '/keys');
    await heading('API keys').waitFor();
  }

  /** Polls `check` until it holds, failing with `what` after `limitMs`. */
  async function eventually(what: string, check: () => Promise<boolean>, limitMs: number): Promise<void> {
    const deadline = Date.now() + limitMs;
    while (!(await check())) {
      if (Date.now() > deadline) assert.fail(`${what}: not after ${limitMs} ms`);
      await sleep(100);
    }
  }

  /** The HTTP requests the page makes to the APIs while `action` runs and until they have been quiet 1.5 s. */
  async function countRequests(action: () => Promise<void>): Promise<string[]> {
    const seen: string[] = [];
    let lastAt = Date.now();
    const listener = (request: Request) => {
      const url = new URL(request.url());
      if (!url.pathname.startsWith('/api/')) return;
      seen.push(`${request.method()} ${url.pathname}`);
      lastAt = Date.now();
    };
    page.on('request', listener);
    try {
      await action();
      while (Date.now() - lastAt < 1500) await sleep(100);
    } finally {
      page.off('request', listener);
    }
    return seen;
  }

  it('signs in and opens a project', async () => {
    await signIn(service);
    await nav('Editor').click();
    await heading('Editor').waitFor();
    await page.getByLabel('Project name', { exact: true }).fill('Budget');
    await page.getByRole('button', { name: 'New project', exact: true }).click();
    await heading('Budget').waitFor();
    await page.getByText('Live', { exact: true }).waitFor();
    await sleep(1500); // the opening reads are over
  });

  for (const [instruction, reply] of [
    ['a 2-scene video about a lighthouse', 'Here is the storyboard for a 2-scene video'],
    ['continue', 'Scene 1 of 2 is on the timeline'],
  ] as const) {
    it(`costs at most ${MAX_TURN_REQUESTS} requests for the turn "${instruction}"`, async () => {
      const send = page.getByRole('button', { name: 'Send', exact: true });
      await eventually('Send is enabled', () => send.isEnabled(), TURN_MS);
      const requests = await countRequests(async () => {
        await page.getByLabel('Instruction', { exact: true }).fill(instruction);
        await send.click();
        await page.getByText(reply).first().waitFor({ timeout: TURN_MS });
        await eventually('the turn ends', () => send.isEnabled(), TURN_MS);
      });
      console.log(`# the turn "${instruction}": ${requests.length} requests: ${requests.join(', ')}`);
      assert.ok(requests.length <= MAX_TURN_REQUESTS, `${requests.length} requests: ${requests.join(', ')}`);
    });
  }

  it('40 quick navigations between the pages and the project never meet the session budget', async () => {
    // Someone clicking through the pages as fast as they draw: every page's reads, the project's state, thread
    // and events socket, 40 times over, within the default DASHBOARD_RATE_PER_MINUTE.
    const limited: string[] = [];
    const onResponse = (response: Response) => {
      if (response.status() === 429) limited.push(new URL(response.url()).pathname);
    };
    page.on('response', onResponse);
    let noticed = false;
    try {
      const pages = ['API keys', 'Webhooks', 'Credits', 'Jobs', 'Media', 'Editor'] as const;
      for (let step = 0; step < 40; step++) {
        if (step % 2 === 1) {
          await page.getByRole('link', { name: 'Budget', exact: true }).click();
          await heading('Budget').waitFor();
          await page.getByRole('region', { name: 'Timeline', exact: true }).waitFor();
        } else {
          const name = pages[(step / 2) % pages.length]!;
          await nav(name).click();
          await heading(name).waitFor();
          if (name !== 'Editor') await nav('Editor').click();
          await heading('Editor').waitFor();
        }
        noticed ||= (await retrying().count()) > 0;
      }
    } finally {
      page.off('response', onResponse);
    }
    assert.deepEqual(limited, [], 'no request answered 429');
    assert.equal(noticed, false, 'no "retrying" notice was shown');
  });

  it('sends a test delivery from the webhooks page and shows it in the log', async () => {
    await nav('API keys').click();
    await heading('API keys').waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Hooked');
    await page.getByRole('button', { name: 'Create API key', exact: true }).click();
    await page.getByRole('button', { name: 'Done', exact: true }).click();
    await nav('Webhooks').click();
    await heading('Webhooks').waitFor();
    await page.getByText('No webhook is set.').waitFor();
    await page.getByLabel('Webhook URL', { exact: true }).fill(receiver.url);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const secretField = page.getByLabel('Signing secret', { exact: true });
    await secretField.waitFor();
    const secret = await secretField.inputValue();

    await page.getByRole('button', { name: 'Send test delivery', exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: 'Test delivery answered HTTP 200' })
      .waitFor({ timeout: 20_000 });
    assert.equal(receiver.requests.length, 1);
    const request = receiver.requests[0]!;
    assertSigned(request, secret, { event: 'job.completed', label: 'test delivery' });
    const body = JSON.parse(request.body.toString('utf8')) as { test?: boolean; job_id: string };
    assert.equal(body.test, true);

    const log = page.getByRole('region', { name: 'Delivery log' });
    const entry = log.getByRole('listitem').filter({ hasText: body.job_id }).filter({ hasText: 'HTTP 200' });
    await entry.first().waitFor();
    assert.match(await entry.first().innerText(), /\btest\b/i);
  });

  for (const path of ['/nope', '/editor/nope/deeper']) {
    it(`shows the not-found page at ${path}, with links back`, async () => {
      await page.goto(`${service.url}${path}`);
      await heading('Page not found').waitFor();
      const main = page.getByRole('main');
      await main.getByRole('link', { name: 'API keys', exact: true }).click();
      await heading('API keys').waitFor();
      await page.goBack();
      await heading('Page not found').waitFor();
      await main.getByRole('link', { name: 'Editor', exact: true }).click();
      await heading('Editor').waitFor();
    });
  }

  it('shows a "retrying" notice on a 429, keeps the page, and recovers', async () => {
    await signIn(tight);
    // Spend what is left of the session's budget from inside the page (the same cookie, the same session).
    const spent = await page.evaluate(async () => {
      for (let i = 0; i < 100; i++) {
        const answer = await fetch('/api/dashboard/v1/balance', { credentials: 'same-origin' });
        if (answer.status === 429) return i;
      }
      return -1;
    });
    assert.ok(spent >= 0 && spent < LOW_BUDGET, `the budget ran out after ${spent} more requests`);
    await nav('Credits').click();
    await heading('Credits').waitFor();
    await retrying().waitFor({ timeout: 10_000 });
    assert.equal(await page.getByRole('alert').filter({ hasText: /\S/ }).count(), 0, 'no error shown');
    await eventually(
      'the balance after the wait',
      () => page.getByText('Balance: 100,000 credits').isVisible(),
      RECOVERY_MS,
    );
    await heading('Credits').waitFor();
    await eventually('the notice gone', async () => (await retrying().count()) === 0, 5_000);
    assert.equal(await page.getByRole('alert').filter({ hasText: /\S/ }).count(), 0, 'no error shown');
  });

  it('runs without page errors', () => {
    assert.deepEqual(consoleProblems, []);
  });
});
