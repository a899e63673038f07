import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync, writeFileSync } from 'node:fs';
import { basename, isAbsolute } from 'node:path';

// Children that die with their parent, and only with it. A process killed with SIGKILL cannot stop its
// children, and ffmpeg outlives its parent (it ignores SIGPIPE, so its progress writes just fail): an export, a
// render or the embedded database would run on as an orphan after a crash. On Linux, util-linux's
// `setpriv --pdeathsig KILL` has the kernel kill the child when the thread that started it ends, then execs the
// command (same pid, so killing by pid still works).
//
// Such a child also runs in a session (so a process group) of its own: a signal sent to the service's whole
// group — `kill -- -<pgid>` of `npm start`, Ctrl-C in a terminal — must not kill the database or the ffmpeg that
// the drain is waiting for (docs/operator.md, "Health and shutdown"). The service ends them itself when it
// stops, and the kernel does when the service dies. Without setpriv the command runs as it is and stays in the
// service's group: a group signal then reaches it, but nothing can outlive the service.
//
// A child leaves the service's group only once it runs (libuv calls setsid between fork and exec). A group
// signal that lands in that moment stays pending in the child, which has every signal blocked, and kills it just
// before the exec: the command never ran. On a busy service that happens to about one spawn in six while the
// signal arrives (measured with a worker thread spawning as the group is signalled), so whoever spawns a tied
// child asks `diedUnborn` and starts it again (`restartingUnborn`) (docs/operator.md, "Health and shutdown").

const SETPRIV = '/usr/bin/setpriv';

/** How many times a child that a stop signal killed unborn is started again before its death is reported. */
const UNBORN_RESTARTS = 10;

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

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

const onPath = new Map<string, string | null>();

/**
 * The file `command` runs: itself when it is a path, else the first executable of that name on PATH, the way
 * `spawn` (execvp) finds it — a system ffmpeg is configured as the bare name `ffmpeg`. Null when none can run.
 * The shell's `command -v` searches PATH for us (once per name), so configuration stays the only reader of the
 * environment.
 */
function executableFor(command: string): string | null {
  if (command.includes('/')) return isExecutableFile(command) ? command : null;
  if (!onPath.has(command)) {
    // The shell runs in the service's process group: a stop signal to that group kills it, which says nothing
    // about the command, so it asks again (and a lookup that never got an answer is not remembered).
    for (let attempt = 0; attempt <= UNBORN_RESTARTS && !onPath.has(command); attempt++) {
      const found = spawnSync('/bin/sh', ['-c', 'command -v -- "$1"', 'sh', command], { encoding: 'utf8' });
      if (found.signal !== null) continue;
      const path = found.status === 0 ? found.stdout.trim() : '';
      onPath.set(command, isAbsolute(path) && isExecutableFile(path) ? path : null);
    }
  }
  return onPath.get(command) ?? null;
}

/** What to pass to `spawn` for a tied child: the command, its arguments and the `detached` option. */
export interface TiedCommand {
  command: string;
  args: string[];
  /** True when the child is tied: it then gets a process group of its own (`detached` is setsid on Linux). */
  detached: boolean;
}

/**
 * How to spawn `command args` as a child killed when its starting thread ends, in a process group of its own.
 * A command that cannot run is left as it is, so that spawning it fails as before (ENOENT), not as setpriv's
 * exit code. Spread the result into `spawn(command, args, { detached, ... })`.
 */
export function tiedToThisThread(command: string, args: readonly string[]): TiedCommand {
  const wrapper = findSetpriv();
  const executable = wrapper ? executableFor(command) : null;
  return wrapper && executable
    ? { command: wrapper, args: ['--pdeathsig', 'KILL', '--', executable, ...args], detached: true }
    : { command, args: [...args], detached: false };
}

/** A process's (or thread's) command name from /proc, '' when it cannot be read. */
function commandName(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
}

/** The kernel keeps 15 bytes of a command name. */
const COMM_BYTES = 15;

/**
 * Whether the child `spawn` has just returned died before it ran `command`. `spawn` returns once the child has
 * exec'd or died; a child that died first is a zombie that still bears the name of the thread that forked it,
 * while one that ran bears its program's name (setpriv, nice, then the command itself). Call it right after
 * `spawn`, before the event loop can reap the child. False wherever /proc cannot tell.
 */
export function diedUnborn(pid: number | undefined, command: string): boolean {
  if (pid === undefined || process.platform !== 'linux') return false;
  const child = commandName(`/proc/${pid}/comm`);
  return (
    child !== '' &&
    child === commandName('/proc/thread-self/comm') &&
    child !== basename(command).slice(0, COMM_BYTES)
  );
}

/**
 * Runs `once` (one spawn of a tied child) again while a stop signal killed its child unborn (`diedUnborn`), at
 * most UNBORN_RESTARTS times, and answers the last run's result: a child that never ran did nothing, and the
 * drain that signal began expects the work to finish.
 */
export async function restartingUnborn<T>(once: () => Promise<{ result: T; unborn: boolean }>): Promise<T> {
  for (let restarts = 0; ; restarts++) {
    const { result, unborn } = await once();
    if (!unborn || restarts === UNBORN_RESTARTS) return result;
  }
}

/**
 * Makes a detached child yield the CPU as its nice value says. Linux schedules each session as one autogroup
 * (`kernel.sched_autogroup_enabled`), and a nice value only ranks threads within their group: a child in a
 * session of its own would otherwise get as much CPU as the whole service, and 4 renders starved the API's
 * actors into 503s. So the child's autogroup gets the same niceness. Without autogroups there is nothing to do.
 */
export function niceAutogroup(pid: number, niceness: number): void {
  try {
    writeFileSync(`/proc/${pid}/autogroup`, String(niceness));
  } catch {
    // No autogroups (or the child has already exited): its own nice value is all there is.
  }
}
