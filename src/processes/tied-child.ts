import { accessSync, constants } from 'node:fs';

// Children that die with their parent. A process killed with SIGKILL cannot stop its children, and ffmpeg
// outlives its parent (it ignores SIGPIPE, so its progress writes just fail): an export, a render or the
// embedded database would run on as an orphan after a crash. On Linux, util-linux's `setpriv --pdeathsig KILL`
// has the kernel kill the child when the thread that started it ends, then execs the command (same pid, so
// killing by pid still works). Without setpriv the command runs as it is.

const SETPRIV = '/usr/bin/setpriv';

let setpriv: string | null | undefined;
function findSetpriv(): string | null {
  if (setpriv !== undefined) return setpriv;
  try {
    if (process.platform !== 'linux') throw new Error('not Linux');
    accessSync(SETPRIV, constants.X_OK);
    setpriv = SETPRIV;
  } catch {
    setpriv = null;
  }
  return setpriv;
}

/** Whether `command` is a path to a file that can be run (a bare name runs untied: reading PATH is config's). */
function runnable(command: string): boolean {
  if (!command.includes('/')) return false;
  try {
    accessSync(command, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The command and arguments that run `command args` as a child killed when its starting thread ends. A command
 * that cannot run is left as it is, so that spawning it fails as before (ENOENT), not as setpriv's exit code.
 */
export function tiedToThisThread(command: string, args: readonly string[]): [string, string[]] {
  const wrapper = findSetpriv();
  return wrapper && runnable(command)
    ? [wrapper, ['--pdeathsig', 'KILL', '--', command, ...args]]
    : [command, [...args]];
}
