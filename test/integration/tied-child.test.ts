// Children started through `tiedToThisThread` die with the process that started them, even when it is killed
// with SIGKILL and can run no clean-up (an export's ffmpeg must not run on as an orphan after a crash), and only
// with it: a signal to the parent's process group does not reach them (the drain still needs them).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { until } from '../helpers/wait.ts';
import { readFileSync } from 'node:fs';
import { niceAutogroup, tiedToThisThread } from '../../src/platform/core/tied-child.ts';
import { spawnsUnderGroupSignals } from '../helpers/spawns-under-group-signals.ts';

const TIED_CHILD = fileURLToPath(new URL('../../src/platform/core/tied-child.ts', import.meta.url));

/**
 * A Node process that starts `sleep 60` (tied, or not) and prints the sleeper's pid. In `ownGroup` it leads a
 * process group of its own and ignores SIGTERM, as a draining service does.
 */
function parentOfSleeper(tied: boolean, ownGroup = false) {
  const script = `
    import { spawn } from 'node:child_process';
    import { tiedToThisThread } from ${JSON.stringify(TIED_CHILD)};
    const { command, args, detached } = ${tied}
      ? tiedToThisThread('/bin/sleep', ['60'])
      : { command: '/bin/sleep', args: ['60'], detached: false };
    const child = spawn(command, args, { stdio: 'ignore', detached });
    process.on('SIGTERM', () => {});
    console.log(child.pid);
    setInterval(() => {}, 1000);
  `;
  const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: ownGroup,
  });
  const printedPid = new Promise<number>((resolve) => {
    parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString('utf8').trim())));
  });
  // A tied child is setpriv until it has set its death signal and become the sleeper: killing the parent
  // before then would test nothing (and on a busy machine leaves the child untied), so wait for the exec.
  const childPid = printedPid.then(async (pid) => {
    await until(
      `pid ${pid} to be /bin/sleep`,
      () => commandOf(pid),
      (command) => command === 'sleep',
      5000,
    );
    return pid;
  });
  return { parent, childPid };
}

/** The process's command name, '' once it is gone. */
const commandOf = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
};

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe(
  'children tied to their parent (setpriv --pdeathsig)',
  { skip: process.platform !== 'linux' },
  () => {
    it('a tied child is killed with its parent (SIGKILL); an untied one outlives it', async () => {
      const tied = parentOfSleeper(true);
      const untied = parentOfSleeper(false);
      const [tiedPid, untiedPid] = await Promise.all([tied.childPid, untied.childPid]);
      assert.ok(alive(tiedPid) && alive(untiedPid));
      tied.parent.kill('SIGKILL');
      untied.parent.kill('SIGKILL');
      await until(
        'the tied child to die',
        () => alive(tiedPid),
        (isAlive) => !isAlive,
        5000,
      );
      // A wait for nothing: the untied child must still be alive a while after its tied sibling died.
      await new Promise((resolve) => setTimeout(resolve, 300));
      try {
        assert.ok(alive(untiedPid), 'the untied child outlived its parent (the test can tell)');
      } finally {
        if (alive(untiedPid)) process.kill(untiedPid, 'SIGKILL');
      }
    });

    it('ties a command named without a path (a system ffmpeg on PATH) as spawn finds it; cannot tie what cannot run', () => {
      const onPath = tiedToThisThread('sleep', ['60']);
      assert.equal(onPath.detached, true);
      assert.match(onPath.args.join(' '), /^--pdeathsig KILL -- \/\S*\/sleep 60$/);
      assert.deepEqual(tiedToThisThread('no-such-command-mf', ['x']), {
        command: 'no-such-command-mf',
        args: ['x'],
        detached: false,
      });
    });

    it("a signal to the parent's process group reaches an untied child but not a tied one", async () => {
      const tied = parentOfSleeper(true, true);
      const untied = parentOfSleeper(false, true);
      const [tiedPid, untiedPid] = await Promise.all([tied.childPid, untied.childPid]);
      try {
        process.kill(-tied.parent.pid!, 'SIGTERM');
        process.kill(-untied.parent.pid!, 'SIGTERM');
        await until(
          'the untied child to die of the group signal',
          () => alive(untiedPid),
          (isAlive) => !isAlive,
          5000,
        );
        assert.ok(alive(tiedPid), 'the tied child did not get the group signal');
        assert.ok(alive(tied.parent.pid!), 'its parent ignored it');
        tied.parent.kill('SIGKILL');
        await until(
          'the tied child to die with its parent',
          () => alive(tiedPid),
          (isAlive) => !isAlive,
          5000,
        );
      } finally {
        for (const pid of [tied.parent.pid!, untied.parent.pid!, tiedPid, untiedPid]) {
          if (alive(pid)) process.kill(pid, 'SIGKILL');
        }
      }
    });

    it('a group signal that lands while a tied child starts kills it before it runs, and diedUnborn names exactly those', async () => {
      const report = await spawnsUnderGroupSignals('tied', 300);
      assert.ok(report.killed > 0, `signals every few ms killed some of ${report.spawns} children unborn`);
      assert.equal(report.unborn, report.killed, 'every child named unborn died of the signal, and no other');
      assert.equal(report.killedUnborn, report.killed);
    });

    it('a tied child in a session of its own yields the CPU: its autogroup gets its niceness', (t) => {
      let autogroups = '0';
      try {
        autogroups = readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim();
      } catch {
        // no such setting: no autogroups
      }
      if (autogroups !== '1') return t.skip('scheduler autogroups are off: nice values apply as they are');
      const tied = tiedToThisThread('sleep', ['5']);
      assert.equal(tied.detached, true);
      const child = spawn(tied.command, tied.args, { stdio: 'ignore', detached: tied.detached });
      try {
        const before = readFileSync(`/proc/${child.pid}/autogroup`, 'utf8');
        assert.notEqual(before, readFileSync('/proc/self/autogroup', 'utf8'), 'a session of its own');
        assert.match(before, /nice 0$/m);
        niceAutogroup(child.pid!, 10);
        assert.match(readFileSync(`/proc/${child.pid}/autogroup`, 'utf8'), /nice 10$/m);
      } finally {
        child.kill('SIGKILL');
      }
    });
  },
);
