import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { watchProcess, stopProcess } from './processes.ts';

/** A nats-server with JetStream for one test file. */
export interface TestNats {
  url: string;
  /** Stops the server and starts it again on the same port with the same JetStream storage. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** True when a `nats-server` binary is on PATH. */
export function natsServerAvailable(): boolean {
  try {
    execFileSync('nats-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * The `skip` option for tests that need nats-server: skipped with a loud notice when it is missing,
 * unless MF_REQUIRE_NATS=1, which makes such tests run (and fail) instead.
 */
export function skipWithoutNats(): string | false {
  if (natsServerAvailable() || process.env.MF_REQUIRE_NATS === '1') return false;
  const notice =
    'nats-server is not on PATH: skipping tests that need it (set MF_REQUIRE_NATS=1 to fail instead)';
  console.warn(`\n*** ${notice} ***\n`);
  return notice;
}

/** Starts nats-server with JetStream on a random loopback port and its own storage folder. */
export async function startNats(): Promise<TestNats> {
  const storeDir = mkdtempSync(join(tmpdir(), 'mf-nats-'));
  const launch = async (port: string) => {
    const proc = watchProcess('nats-server', ['-a', '127.0.0.1', '-p', port, '-js', '-sd', storeDir]);
    const match = await proc.waitForLine(/Listening for client connections on (\S+)/);
    await proc.waitForLine(/Server is ready/);
    return { proc, address: match[1]! };
  };
  const first = await launch('-1');
  let proc = first.proc;
  const address = first.address;
  const port = address.split(':').at(-1)!;
  return {
    url: `nats://${address}`,
    async restart() {
      await stopProcess(proc, 'SIGTERM', 5000);
      ({ proc } = await launch(port));
    },
    stop: async () => {
      await stopProcess(proc, 'SIGTERM', 5000);
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
