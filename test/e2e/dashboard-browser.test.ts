// The dashboard in a real browser (docs/dashboard.md): Debian's Chromium driven by
// playwright-core through one user's whole day, finding everything by role and accessible name only (never
// CSS): sign in through /sign-in and come back to the page asked for; create an API key (shown once), use it,
// revoke it; set its webhook (the secret shown once) and watch a job's delivery reach a receiver and the log;
// the ledger after that job; the editor: a project, a 2-scene conversation with the builtin director whose
// replies and clips appear without a reload, a reorder, an export whose preview plays to its end; markup in a
// project name and a prompt shown as text; sign out. Every page is checked with axe-core (no serious or
// critical violation) and photographed at 1280 and 390 px into test-results/screenshots/.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Locator, Page } from 'playwright-core';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import {
  startService,
  call,
  adminClient,
  TEST_ADMIN_TOKEN,
  type RunningService,
} from '../helpers/service.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { assertSigned } from '../helpers/webhooks.ts';
import {
  launchChromium,
  runAxe,
  seriousViolations,
  skipWithoutChromium,
  type AxeViolation,
  type LaunchedChromium,
} from '../helpers/chromium.ts';
import { sleep } from '../helpers/wait.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCREENSHOTS = join(ROOT, 'test-results', 'screenshots');
const WIDTHS = [1280, 390] as const;
const HEIGHT = 900;
/** Markup that would set window.__xss if it were ever parsed as HTML (the CSP would also refuse it). */
const XSS = '<img src=x onerror=window.__xss=1>';
const PROJECT_NAME = `Lighthouse ${XSS}`;
/** Liveness bounds, not budgets: sandbox renders and exports run ffmpeg on shared cores. */
const JOB_MS = 30_000;
const TURN_MS = 60_000;
const EXPORT_MS = 90_000;

describe('the dashboard in Chromium', { skip: skipWithoutChromium() }, () => {
  let mongo: TestMongo;
  let service: RunningService;
  let receiver: WebhookReceiver;
  let chromium: LaunchedChromium;
  let page: Page;
  const user = {
    email: `browser-${Date.now()}@example.com`,
    password: `pass-browser-${randomBytes(8).toString('hex')}`,
  };
  /** The key made on the API keys page, its webhook secret, and the job submitted with it. */
  let apiKey = '';
  let secret = '';
  let jobId = '';
  /** Accessibility failures and browser complaints, gathered page by page and asserted at the end. */
  const axeFailures: { page: string; width: number; violations: AxeViolation[] }[] = [];
  const consoleProblems: string[] = [];

  before(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    mongo = await startMongo();
    [service, receiver, chromium] = await Promise.all([
      startService({
        MONGO_URL: mongo.uri,
        MONGO_DB: 'dashboard_browser',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        SANDBOX_VIDEO_MS: '300',
        SANDBOX_IMAGE_MS: '200',
        PROVIDER_POLL_INTERVAL_MS: '100',
        RATE_LIMIT_PER_MINUTE: '100000',
      }),
      startWebhookReceiver(),
      launchChromium({ viewport: { width: 1280, height: HEIGHT }, locale: 'en-US' }),
    ]);
    const userId = await adminClient(service).createUser(user.email, 100_000);
    const set = await call(service.url, 'POST', `/api/admin/v1/users/${userId}/password`, {
      token: TEST_ADMIN_TOKEN,
      body: { password: user.password },
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    page = chromium.page;
    page.setDefaultTimeout(15_000);
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy|Uncaught/i.test(message.text()))
        consoleProblems.push(`${page.url()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => consoleProblems.push(`${page.url()}: ${error.message}`));
  });

  after(async () => {
    await chromium?.close();
    await receiver?.close();
    await service?.stop();
    await mongo?.stop();
  });

  const url = (path: string) => `${service.url}${path}`;
  const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true });
  const nav = (name: string) =>
    page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
  const chat = () => page.getByRole('region', { name: 'Chat with the director' });
  /** The `n`th clip of the timeline's video lane, named after its asset (`<n>: <name>, <duration> s`). */
  const clip = (n: number, name: string) =>
    page
      .getByRole('region', { name: 'Timeline', exact: true })
      .getByRole('group', { name: 'Video track', exact: true })
      .getByRole('button', { name: new RegExp(`^${n}: ${name}`) });
  const xss = () => page.evaluate(() => (globalThis as unknown as { __xss?: unknown }).__xss);
  /** Whether the page is still the document marked after the project was created (no reload since). */
  const sameDocument = () =>
    page.evaluate(() => (globalThis as unknown as { __sameDocument?: boolean }).__sameDocument === true);

  /** GET /api/v1/account with the key, as any client would. */
  const account = (token: string) =>
    call<{ credits: number }>(service.url, 'GET', '/api/v1/account', { token });

  /** Screenshots at both widths and axe at both; failures are kept for the last test. */
  async function checkPage(name: string): Promise<void> {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: HEIGHT });
      await sleep(150); // one layout after the resize
      await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
      const violations = seriousViolations(await runAxe(page));
      if (violations.length > 0) axeFailures.push({ page: name, width, violations });
    }
    await page.setViewportSize({ width: WIDTHS[0], height: HEIGHT });
  }

  /** Polls until `check` resolves true, failing with `what` (and an alert shown in `scope`, if any). */
  async function eventually(
    what: string,
    check: () => Promise<boolean>,
    limitMs: number,
    scope: Locator | Page = page,
  ): Promise<void> {
    const deadline = Date.now() + limitMs;
    for (;;) {
      if (await check()) return;
      const alerts = await scope.getByRole('alert').allInnerTexts();
      const shown = alerts.filter((text) => text.trim() !== '');
      if (shown.length > 0) assert.fail(`${what}: the page shows the error "${shown.join(' | ')}"`);
      if (Date.now() > deadline) assert.fail(`${what}: not after ${limitMs} ms`);
      await sleep(100);
    }
  }

  const visible = (locator: Locator) => () => locator.first().isVisible();

  /** Types an instruction, sends it, and waits until `reply` is in the thread and Send is usable again. */
  async function instruct(instruction: string, reply: string): Promise<void> {
    const send = page.getByRole('button', { name: 'Send', exact: true });
    await eventually('Send is enabled', () => send.isEnabled(), TURN_MS);
    await page.getByLabel('Instruction', { exact: true }).fill(instruction);
    await send.click();
    await eventually(`the reply "${reply}"`, visible(chat().getByText(reply)), TURN_MS, chat());
    await eventually('the turn ends', () => send.isEnabled(), TURN_MS, chat());
  }

  it('sends a signed-out visitor to /sign-in, and the sign-in brings them back', async () => {
    await page.goto(url('/keys'));
    await page.waitForURL((u) => u.pathname === '/sign-in' && u.searchParams.get('next') === '/keys');
    await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
    await checkPage('sign-in');
    await page.getByLabel('Email', { exact: true }).fill(user.email);
    await page.getByLabel('Password', { exact: true }).fill(user.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL((u) => u.pathname === '/keys');
    await heading('API keys').waitFor();
    for (const name of ['API keys', 'Webhooks', 'Credits', 'Jobs', 'Media', 'Editor'])
      await nav(name).waitFor();
    await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor();
  });

  it('creates an API key that is shown once and works from any client', async () => {
    await page.getByLabel('Name', { exact: true }).fill('Browser key');
    await page.getByRole('checkbox', { name: 'image:write', exact: true }).check();
    await page.getByRole('checkbox', { name: 'video:write', exact: true }).check();
    await page.getByRole('button', { name: 'Create API key', exact: true }).click();
    const shown = page.getByLabel('New API key', { exact: true });
    await shown.waitFor();
    apiKey = await shown.inputValue();
    assert.ok(apiKey.length >= 20, `the key is shown: ${apiKey}`);
    const card = page.getByRole('listitem').filter({ hasText: 'Browser key' });
    await card.waitFor();
    assert.match(await card.innerText(), /image:write/);
    await checkPage('keys');

    const answer = await account(apiKey);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.credits, 100_000);

    // Shown once: gone after Done, and never again after a reload.
    await page.getByRole('button', { name: 'Done', exact: true }).click();
    await shown.waitFor({ state: 'detached' });
    await page.reload();
    await heading('API keys').waitFor();
    await card.waitFor();
    assert.ok(!(await page.content()).includes(apiKey), 'the page shows the key again');
  });

  it("sets the key's webhook (the secret shown once) and lists a job's delivery", async () => {
    // The form fills itself in when the key's webhook has loaded, replacing what was typed before (and it
    // says "No webhook is set." while loading): type after that load, as a person would.
    const loaded = page.waitForResponse(
      (r) => /\/api\/dashboard\/v1\/keys\/[^/]+\/webhook$/.test(new URL(r.url()).pathname) && r.ok(),
    );
    await nav('Webhooks').click();
    await heading('Webhooks').waitFor();
    await loaded;
    await page.getByText('No webhook is set.').waitFor();
    await sleep(100); // the render after the load
    await page.getByLabel('Webhook URL', { exact: true }).fill(receiver.url);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const secretField = page.getByLabel('Signing secret', { exact: true });
    await eventually('the signing secret', visible(secretField), 10_000);
    secret = await secretField.inputValue();
    assert.match(secret, /^whsec_/);

    const submitted = await call<{ job_id: string }>(
      service.url,
      'POST',
      '/api/v1/image/nano-banana/generate',
      { token: apiKey, body: { prompt: 'a lighthouse keeper and her cat' } },
    );
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    jobId = submitted.body.job_id;
    const [request] = await receiver.waitFor(1, JOB_MS);
    assertSigned(request!, secret, { event: 'job.completed' });
    assert.equal((JSON.parse(request!.body.toString('utf8')) as { job_id: string }).job_id, jobId);

    const log = page.getByRole('region', { name: 'Delivery log' });
    const delivered = log.getByRole('listitem').filter({ hasText: jobId }).filter({ hasText: 'delivered' });
    await eventually(
      'the delivery in the log',
      async () => {
        await log.getByRole('button', { name: 'Refresh', exact: true }).click();
        await sleep(300); // the log's re-read after the click (the list shows no sign of a read under way)
        return delivered.first().isVisible();
      },
      15_000,
    );
    assert.match(await delivered.first().innerText(), /HTTP 200/);
    await checkPage('webhooks');

    // Shown once: a reload shows the URL, never the secret.
    await page.reload();
    await heading('Webhooks').waitFor();
    await eventually(
      'the saved URL',
      async () => (await page.getByLabel('Webhook URL', { exact: true }).inputValue()) === receiver.url,
      10_000,
    );
    assert.equal(await secretField.count(), 0);
    assert.ok(!(await page.content()).includes(secret), 'the page shows the secret again');
  });

  it('shows the balance and the ledger after the job', async () => {
    await nav('Credits').click();
    await heading('Credits').waitFor();
    const row = page.getByRole('row').filter({ hasText: jobId });
    await eventually('the ledger entry of the job', visible(row), 10_000);
    const balance = (await account(apiKey)).body.credits;
    assert.ok(balance < 100_000, `the job was charged: ${balance}`);
    await page.getByText(`Balance: ${balance.toLocaleString('en-US')} credits`).waitFor();
    assert.match(await row.first().innerText(), new RegExp(`\\b${balance.toLocaleString('en-US')}\\b`));
    await checkPage('credits');
  });

  it('revokes the key, which then stops working', async () => {
    await nav('API keys').click();
    await heading('API keys').waitFor();
    const card = page.getByRole('listitem').filter({ hasText: 'Browser key' });
    await card.getByRole('button', { name: 'Revoke', exact: true }).click();
    await card.getByRole('button', { name: 'Confirm revoke', exact: true }).click();
    // A revoked key keeps its card, without its actions (Revoke, Set webhook).
    await eventually(
      'the key shown as revoked',
      async () => (await card.getByRole('link', { name: 'Set webhook', exact: true }).count()) === 0,
      10_000,
    );
    assert.doesNotMatch(await card.innerText(), /Revoked\s+No\b/);
    const answer = await account(apiKey);
    assert.equal(answer.status, 401, JSON.stringify(answer.body));
  });

  it('lists the job and its media', async () => {
    await nav('Jobs').click();
    await heading('Jobs').waitFor();
    await eventually('the job in the list', visible(page.getByText(jobId)), 10_000);
    await checkPage('jobs');
    await nav('Media').click();
    await heading('Media').waitFor();
    await eventually(
      'the generated image',
      visible(page.getByRole('img', { name: `Image 1 of job ${jobId}`, exact: true })),
      10_000,
    );
    await checkPage('media');
  });

  it('creates a project whose name, markup included, is shown as text', async () => {
    await nav('Editor').click();
    await heading('Editor').waitFor();
    await checkPage('editor');
    await page.getByLabel('Project name', { exact: true }).fill(PROJECT_NAME);
    await page.getByRole('button', { name: 'New project', exact: true }).click();
    await page.waitForURL((u) => /^\/editor\/[^/]+$/.test(u.pathname));
    await heading(PROJECT_NAME).waitFor();
    assert.equal(await xss(), undefined);
    // Everything from here on must happen in this one document (no reload).
    await page.evaluate(() => {
      (globalThis as unknown as { __sameDocument?: boolean }).__sameDocument = true;
    });
  });

  it('plans and generates two scenes in the chat, replies and clips appearing live', async () => {
    await instruct('a 2-scene video about a lighthouse', 'Here is the storyboard for a 2-scene video');
    await instruct('continue', 'Scene 1 of 2 is on the timeline');
    await eventually(
      'clip 1 on the timeline',
      visible(clip(1, 'Establishing shot of a lighthouse')),
      TURN_MS,
    );
    await instruct('continue', 'All 2 scenes are on the timeline');
    await eventually('clip 2 on the timeline', visible(clip(2, 'Closing shot of a lighthouse')), TURN_MS);
    assert.ok(await clip(1, 'Establishing shot of a lighthouse').isVisible());
    assert.equal(await sameDocument(), true, 'the page was reloaded');
  });

  it('reorders the two clips with the move buttons of the selected clip', async () => {
    await clip(1, 'Establishing shot').click();
    await page.getByRole('button', { name: 'Move Video clip 1 down', exact: true }).click();
    await eventually(
      'the clips swapped',
      async () =>
        (await clip(1, 'Closing shot').isVisible()) && (await clip(2, 'Establishing shot').isVisible()),
      15_000,
    );
  });

  it('exports the video, and its preview plays to the end', async () => {
    await page.getByRole('button', { name: 'Export', exact: true }).click();
    const video = page.getByLabel('Latest export', { exact: true });
    await eventually(
      'the export preview',
      visible(video),
      EXPORT_MS,
      page.getByRole('region', { name: 'Preview and export' }),
    );
    const played = await video.evaluate(
      (element) =>
        new Promise<{ duration: number; currentTime: number }>((resolve, reject) => {
          const v = element as unknown as {
            duration: number;
            currentTime: number;
            muted: boolean;
            playbackRate: number;
            error: { code: number; message: string } | null;
            play(): Promise<void>;
            addEventListener(type: string, listener: () => void): void;
          };
          v.addEventListener('ended', () => resolve({ duration: v.duration, currentTime: v.currentTime }));
          v.addEventListener('error', () =>
            reject(new Error(`media error ${v.error?.code}: ${v.error?.message}`)),
          );
          v.muted = true;
          v.playbackRate = 4;
          v.play().catch(reject);
        }),
      undefined,
      { timeout: 30_000 },
    );
    assert.ok(played.duration > 9 && played.duration < 11, `two 5-second scenes: ${played.duration} s`);
    assert.ok(played.currentTime >= played.duration - 0.1, JSON.stringify(played));
    await checkPage('project');
  });

  it('shows a prompt with markup as text', async () => {
    await instruct(XSS, XSS);
    await chat().getByText(XSS, { exact: true }).first().waitFor();
    assert.equal(await xss(), undefined);
    assert.equal(await sameDocument(), true, 'the page was reloaded');
  });

  it('signs out, and the pages ask to sign in again', async () => {
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL((u) => u.pathname === '/sign-in');
    await page.goto(url('/credits'));
    await page.waitForURL((u) => u.pathname === '/sign-in' && u.searchParams.get('next') === '/credits');
    await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
  });

  it('has no serious or critical accessibility violation on any page', () => {
    const report = axeFailures.flatMap((f) =>
      f.violations.map(
        (v) => `${f.page} @${f.width}px: ${v.id} (${v.impact}) ${v.help} — ${v.nodes.slice(0, 5).join(', ')}`,
      ),
    );
    assert.deepEqual(report, []);
  });

  it('runs without Content-Security-Policy violations or page errors', () => {
    assert.deepEqual(consoleProblems, []);
  });
});
