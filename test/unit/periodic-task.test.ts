import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { startPeriodicTask } from '../../src/platform/scheduling/periodic-task.ts';

const logger = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('periodic task', () => {
  it('never overlaps a run with itself when a run takes longer than the interval', async () => {
    let active = 0;
    let most = 0;
    let runs = 0;
    const task = startPeriodicTask({
      name: 'slow',
      intervalMs: 5,
      logger,
      run: async () => {
        active++;
        most = Math.max(most, active);
        runs++;
        await sleep(30);
        active--;
      },
    });
    // Several runs, each 6 intervals long, however slowly a loaded machine gets there.
    for (const deadline = Date.now() + 10_000; runs < 4 && Date.now() < deadline;) await sleep(10);
    await task.stop();
    assert.ok(runs >= 4, `ran ${runs} times`);
    assert.equal(most, 1, 'two runs overlapped');
  });

  it('waits on stop for the run in progress, and runs no more after it', async () => {
    let finished = 0;
    let started = 0;
    const task = startPeriodicTask({
      name: 'stoppable',
      intervalMs: 1,
      logger,
      run: async () => {
        started++;
        await sleep(50);
        finished++;
      },
    });
    while (started === 0) await sleep(1); // stop while the first run is in progress
    await task.stop();
    assert.equal(started, 1);
    assert.equal(finished, 1);
    await sleep(30); // a wait for nothing: 30 intervals without a run after stop
    assert.equal(started, 1);
  });

  it('goes on after a failed run', async () => {
    let runs = 0;
    const task = startPeriodicTask({
      name: 'failing',
      intervalMs: 2,
      logger,
      run: () => {
        runs++;
        throw new Error('boom');
      },
    });
    for (const deadline = Date.now() + 10_000; runs < 2 && Date.now() < deadline;) await sleep(2);
    await task.stop();
    assert.ok(runs >= 2, `ran ${runs} times`);
  });
});
