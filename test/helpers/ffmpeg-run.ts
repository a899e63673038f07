// ffmpeg in export tests: reading an argv the builders made, and running one with its `-progress` parsed.
import { spawn } from 'node:child_process';
import { ProgressParser, type ProgressUpdate } from '../../workers/ffmpeg/progress.ts';

/** The options given before each `-i`, one array per input (the output options after the last one are dropped). */
export function inputsOf(args: string[]): string[][] {
  const found: string[][] = [];
  let current: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    if (args[i] === '-i') {
      found.push([...current, '-i', args[i + 1]!]);
      current = [];
      i += 1;
    } else current.push(args[i]!);
  }
  return found;
}

/** The value following `flag` in an option list. */
export const optionOf = (args: string[], flag: string): string | undefined => {
  const at = args.indexOf(flag);
  return at < 0 ? undefined : args[at + 1];
};

/**
 * Runs `ffmpeg` with its `-progress pipe:1` output parsed against `totalSec`; resolves with the progress
 * updates, the wall time and the log (stderr), rejects with the log's tail on a non-zero exit.
 */
export function renderWithProgress(
  ffmpeg: string,
  args: string[],
  totalSec: number,
): Promise<{ updates: ProgressUpdate[]; ms: number; log: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(ffmpeg, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const parser = new ProgressParser(totalSec);
    const updates: ProgressUpdate[] = [];
    let log = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => updates.push(...parser.push(chunk)));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve({ updates, ms: performance.now() - started, log })
        : reject(new Error(`ffmpeg exited ${code}:\n${log.slice(-3000)}`)),
    );
  });
}
