import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { tiedToThisThread } from '../core/tied-child.ts';

/** An in-memory MongoDB-wire server started by this process (embedded mode). */
export interface EmbeddedMongo {
  uri: string;
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);
const STARTUP_TIMEOUT_MS = 30_000;

/** Starts jongodb (an optional dependency) on a free loopback port and reads its URI from stdout. */
export function startEmbeddedMongo(): Promise<EmbeddedMongo> {
  let binary: string;
  try {
    binary = require.resolve('@jongodb/memory-server-bin-linux-x64-gnu/bin/jongodb');
  } catch {
    return Promise.reject(
      new Error(
        'embedded mode needs the optional dependency @jongodb/memory-server-bin-linux-x64-gnu (Linux x64, glibc); ' +
          'install it, or set MONGO_URL to use your own MongoDB',
      ),
    );
  }
  // In a process group of its own (docs/operator.md, "Health and shutdown"): the drain still needs the
  // database when a signal reaches the service's whole group; `stop` ends it last.
  const tied = tiedToThisThread(binary, [
    '--host=127.0.0.1',
    '--port=0',
    '--topology-profile=singleNodeReplicaSet',
    '--replica-set-name=rs0',
  ]);
  const child = spawn(tied.command, tied.args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: tied.detached,
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(
      () => fail(new Error(`jongodb did not start within ${STARTUP_TIMEOUT_MS} ms`)),
      STARTUP_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = /JONGODB_URI=(\S+)/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.stdout.resume(); // keep draining its output so it never blocks on a full pipe
      child.stderr.resume();
      resolve({
        uri: match[1]!,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
          await exited;
          clearTimeout(killer);
        },
      });
    };
    function fail(error: Error) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    }
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString('utf8')));
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`jongodb exited (${code}) before it was ready:\n${output}`)));
  });
}
