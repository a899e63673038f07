import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createKeyedSerial } from '../../src/platform/core/keyed-serial.ts';

describe('createKeyedSerial', () => {
  it('runs the tasks of one key one at a time, in arrival order', async () => {
    const serial = createKeyedSerial();
    const events: string[] = [];
    let running = 0;
    const task = (name: string, ms: number) => async () => {
      running++;
      assert.equal(running, 1, 'two tasks of one key overlapped');
      events.push(`start ${name}`);
      await sleep(ms);
      events.push(`end ${name}`);
      running--;
      return name;
    };
    const results = await Promise.all([
      serial.run('k', task('a', 20)),
      serial.run('k', task('b', 1)),
      serial.run('k', task('c', 5)),
    ]);
    assert.deepEqual(results, ['a', 'b', 'c']);
    assert.deepEqual(events, ['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });

  it('runs different keys concurrently', async () => {
    const serial = createKeyedSerial();
    let concurrent = 0;
    let peak = 0;
    const task = async () => {
      peak = Math.max(peak, ++concurrent);
      await sleep(10);
      concurrent--;
    };
    await Promise.all(['a', 'b', 'c'].map((key) => serial.run(key, task)));
    assert.equal(peak, 3);
  });

  it('keeps going after a failing task and forgets idle keys', async () => {
    const serial = createKeyedSerial();
    await assert.rejects(
      serial.run('k', async () => Promise.reject(new Error('boom'))),
      /boom/,
    );
    assert.equal(await serial.run('k', async () => 'next'), 'next');
    await sleep(0);
    assert.equal(serial.activeKeys, 0);
  });
});
