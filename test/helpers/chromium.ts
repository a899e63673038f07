// Debian's Chromium driven by playwright-core: never a downloaded browser
// (`npx playwright install` cannot work here), always a fresh profile in its own --user-data-dir.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

/** The browser: Debian's `chromium` package (`CHROMIUM_PATH` overrides it). */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Headless switches for a container without a GPU or a session bus (Playwright adds --user-data-dir, our fresh folder, itself). */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * The `skip` option of tests that need Chromium: skipped with a loud notice when it is missing, except in CI
 * (`CI=true`, where .ci/run installs the package) or with MF_REQUIRE_CHROMIUM=1, which make them run and fail.
 */
export function skipWithoutChromium(): string | false {
  if (existsSync(CHROMIUM_PATH)) return false;
  if (process.env.CI === 'true' || process.env.MF_REQUIRE_CHROMIUM === '1') return false;
  const reason = `${CHROMIUM_PATH} is missing (apt-get install chromium): skipping browser tests (set MF_REQUIRE_CHROMIUM=1 to fail instead)`;
  console.warn(`\n*** ${reason}\n`);
  return reason;
}

/** One browser with one fresh profile; `close()` ends it and removes the profile. */
export interface LaunchedChromium {
  context: BrowserContext;
  /** The page Chromium opened with the profile. */
  page: Page;
  userDataDir: string;
  close(): Promise<void>;
}

/** Starts Chromium headless on a new, empty profile folder. */
export async function launchChromium(options: BrowserContextOptions = {}): Promise<LaunchedChromium> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'mf-chromium-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 60_000,
      ...options,
    });
  } catch (err) {
    rmSync(userDataDir, { recursive: true, force: true });
    throw err;
  }
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    userDataDir,
    async close() {
      await context.close().catch(() => {});
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

const require = createRequire(import.meta.url);
let axeSource: string | undefined;

/** One axe-core rule that failed, as the tests report it. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * Runs axe-core on the page as it is now. The source is evaluated through the DevTools protocol, which the
 * page's Content-Security-Policy (`script-src 'self'`, no inline script) does not apply to, unlike a
 * `<script>` element that `page.addScriptTag` would add.
 */
export async function runAxe(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  const loaded = await page.evaluate('typeof window.axe === "object"');
  if (!loaded) await page.evaluate(axeSource);
  return page.evaluate(async () => {
    interface AxeNode {
      target: unknown[];
    }
    interface AxeResult {
      id: string;
      impact?: string | null;
      help: string;
      nodes: AxeNode[];
    }
    const g = globalThis as unknown as {
      document: unknown;
      axe: { run(context: unknown, options: unknown): Promise<{ violations: AxeResult[] }> };
    };
    const results = await g.axe.run(g.document, { resultTypes: ['violations'] });
    return results.violations.map((v) => ({
      id: v.id,
      impact: v.impact ?? null,
      help: v.help,
      nodes: v.nodes.map((n) => n.target.map(String).join(' ')),
    }));
  });
}

/** The violations that fail a test: impact `serious` or `critical`. */
export function seriousViolations(violations: AxeViolation[]): AxeViolation[] {
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
