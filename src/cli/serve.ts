import { loadConfig, ConfigError } from '../platform/index.ts';
import { startApp, type StartedApp } from '../app/index.ts';
import { createStopSignalPolicy, type StopSignal } from './stop-signals.ts';

/** How long closing connections, pools and the audit log may take once the grace has ended. */
const CLOSE_AFTER_GRACE_MS = 15_000;

/**
 * `mediaforge serve` / `npm start`: runs the service until SIGTERM or SIGINT, then drains and shuts down cleanly
 * (a second SIGTERM is ignored, a second SIGINT exits at once: ./stop-signals.ts).
 */
export async function serve(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`mediaforge: configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }

  let app: StartedApp;
  try {
    app = await startApp(config);
  } catch (error) {
    process.stderr.write(`mediaforge: cannot start: ${(error as Error).message}\n`);
    process.exit(1);
  }

  if (config.mode === 'embedded') printEmbeddedBanner(app);
  process.stdout.write(`listening on ${app.url}\n`);

  const decide = createStopSignalPolicy();
  const onSignal = (signal: StopSignal) => {
    const decision = decide(signal);
    if (decision === 'ignore') {
      app.log.warn({ signal }, `${signal} again while draining: ignored, the drain goes on`);
    } else if (decision === 'ignore-echo') {
      app.log.info({ signal }, `${signal} again at once: the same interrupt forwarded (npm), ignored`);
    } else if (decision === 'exit-now') {
      process.stderr.write(`mediaforge: ${signal} again, exiting now\n`);
      process.exit(1);
    } else {
      app.log.info(
        { signal, grace_ms: config.shutdownGraceMs },
        `${signal}: draining (a second SIGINT exits at once)`,
      );
      drain();
    }
  };
  const drain = () => {
    // After the grace, what still runs ends as on a crashed node (docs/operator.md): closing is bounded too.
    setTimeout(() => {
      process.stderr.write('mediaforge: shutdown did not finish in time, exiting now\n');
      process.exit(1);
    }, config.shutdownGraceMs + CLOSE_AFTER_GRACE_MS).unref();
    app.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`mediaforge: shutdown failed: ${(error as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/**
 * The one place secrets are printed (docs/operator.md, Modes; docs/decisions.md, Logs): the generated admin
 * token, the demo key and the demo user's password, once.
 */
function printEmbeddedBanner(app: StartedApp): void {
  const lines = [
    '',
    '  MediaForge is running in EMBEDDED mode: data is kept in memory only and is LOST when it stops.',
    '  Set MONGO_URL (and ADMIN_TOKEN) to keep data.',
    '',
    app.generatedAdminToken
      ? `  admin token:  ${app.generatedAdminToken}`
      : '  admin token:  (from ADMIN_TOKEN)',
  ];
  if (app.demo) {
    lines.push(
      `  demo user:    ${app.demo.email} (${app.demo.userId}), ${app.demo.credits} credits`,
      `  demo API key: ${app.demo.apiKey}`,
      `  dashboard:    ${app.url}/  (sign in as ${app.demo.email} with the password ${app.demo.password})`,
      '',
      `  try: curl -H "Authorization: Bearer ${app.demo.apiKey}" ${app.url}/api/v1/models`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
}
