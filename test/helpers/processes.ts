import { spawn, type ChildProcess } from 'node:child_process';

/** A child process whose output lines are collected and can be awaited. */
export interface WatchedProcess {
  child: ChildProcess;
  lines: string[];
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns a command, collecting stdout and stderr line by line. */
export function watchProcess(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  options: { stdin?: boolean; detached?: boolean } = {},
): WatchedProcess {
  const child = spawn(command, args, {
    env,
    stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    // Leading a process group of its own, as a command started from a shell does (`kill -- -<pgid>`).
    detached: options.detached ?? false,
  });
  const lines: string[] = [];
  const waiters = new Set<(line: string) => void>();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  for (const stream of [child.stdout, child.stderr]) {
    let partial = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        for (const waiter of waiters) waiter(line);
      }
    });
  }
  function waitForLine(pattern: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
    const seen = lines.map((l) => l.match(pattern)).find(Boolean);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const onLine = (line: string) => {
        const match = line.match(pattern);
        if (match) finish(() => resolve(match));
      };
      const timer = setTimeout(
        () =>
          finish(() =>
            reject(new Error(`timed out waiting for ${pattern} from ${command}:\n${lines.join('\n')}`)),
          ),
        timeoutMs,
      );
      const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
        finish(() =>
          reject(
            new Error(
              `${command} exited (code ${code}, signal ${signal}) before printing ${pattern}:\n${lines.join('\n')}`,
            ),
          ),
        );
      child.once('exit', onExit);
      function finish(settle: () => void) {
        clearTimeout(timer);
        waiters.delete(onLine);
        child.off('exit', onExit);
        settle();
      }
      waiters.add(onLine);
    });
  }
  return { child, lines, waitForLine, exited };
}

/** Sends a signal and waits for the process to exit, escalating to SIGKILL after a grace period. */
export async function stopProcess(
  proc: WatchedProcess,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 10_000,
) {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return proc.exited;
  proc.child.kill(signal);
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs);
  const result = await proc.exited;
  clearTimeout(timer);
  return result;
}
