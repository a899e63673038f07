import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createStopSignalPolicy, type StopSignal } from '../../src/cli/index.ts';

/** The decisions for `signals`, each sent at its time in ms. */
function decisions(signals: Array<[StopSignal, number]>, echoWindowMs = 500) {
  let time = 0;
  const decide = createStopSignalPolicy({ echoWindowMs, now: () => time });
  return signals.map(([signal, at]) => {
    time = at;
    return decide(signal);
  });
}

describe('stop signals', () => {
  it('drains on the first SIGTERM and ignores every later one (npm forwards a group signal)', () => {
    assert.deepEqual(
      decisions([
        ['SIGTERM', 0],
        ['SIGTERM', 3],
        ['SIGTERM', 200],
        ['SIGTERM', 60_000],
      ]),
      ['drain', 'ignore', 'ignore', 'ignore'],
    );
  });

  it('drains on one Ctrl-C that arrives twice, and exits at once on a second press', () => {
    assert.deepEqual(
      decisions([
        ['SIGINT', 1000],
        ['SIGINT', 1020],
        ['SIGINT', 1499],
        ['SIGINT', 1500],
      ]),
      ['drain', 'ignore-echo', 'ignore-echo', 'exit-now'],
    );
  });

  it('exits at once on a SIGINT during a drain that a SIGTERM started, and ignores a SIGTERM after a SIGINT', () => {
    assert.deepEqual(
      decisions([
        ['SIGTERM', 0],
        ['SIGINT', 1],
      ]),
      ['drain', 'exit-now'],
    );
    assert.deepEqual(
      decisions([
        ['SIGINT', 0],
        ['SIGTERM', 5000],
        ['SIGINT', 5001],
      ]),
      ['drain', 'ignore', 'exit-now'],
    );
  });
});
