// Children started through `tiedToThisThread` die with the process that started them, even when it is killed
// with SIGKILL and can run no clean-up (an export's ffmpeg must not run on as an orphan after a crash).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { until } from '../helpers/wait.ts';

const TIED_CHILD = fileURLToPath(new URL('../../src/processes/tied-child.ts', import.meta.url));

/** A Node process that starts `sleep 60` (tied, or not) and prints the sleeper's pid. */
function parentOfSleeper(tied: boolean) {
  const script = `
    import { spawn } from 'node:child_process';
    import { tiedToThisThread } from ${JSON.stringify(TIED_CHILD)};
    const [command, args] = ${tied} ? tiedToThisThread('/bin/sleep', ['60']) : ['/bin/sleep', ['60']];
    const child = spawn(command, args, { stdio: 'ignore' });
    console.log(child.pid);
    setInterval(() => {}, 1000);
  `;
  const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const childPid = new Promise<number>((resolve) => {
    parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString('utf8').trim())));
  });
  return { parent, childPid };
}

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
      await new Promise((resolve) => setTimeout(resolve, 300));
      try {
        assert.ok(alive(untiedPid), 'the untied child outlived its parent (the test can tell)');
      } finally {
        if (alive(untiedPid)) process.kill(untiedPid, 'SIGKILL');
      }
    });
  },
);
