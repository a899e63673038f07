import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RollingWindowLimiter } from '../../src/platform/core/rolling-window.ts';
import { createManualClock } from '../../src/platform/core/clock.ts';

describe('RollingWindowLimiter', () => {
  it('allows the limit within a minute and refuses the next with the seconds until a slot frees', () => {
    const clock = createManualClock(1_000_000_000_000);
    const limiter = new RollingWindowLimiter(3, clock.now);
    assert.equal(limiter.hit('k').remaining, 2);
    clock.advance(10_000);
    assert.equal(limiter.hit('k').remaining, 1);
    assert.equal(limiter.hit('k').remaining, 0);
    clock.advance(5_000);
    const refused = limiter.hit('k');
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfter, 45);
    assert.equal(refused.resetAt, 1_000_000_000 + 60);
  });

  it('frees slots as events leave the rolling minute, oldest first', () => {
    const clock = createManualClock(1_000_000_000_000);
    const limiter = new RollingWindowLimiter(2, clock.now);
    limiter.hit('k');
    clock.advance(30_000);
    limiter.hit('k');
    clock.advance(29_000);
    assert.equal(limiter.hit('k').allowed, false);
    clock.advance(1_000); // the first event is now 60 s old
    const decision = limiter.hit('k');
    assert.equal(decision.allowed, true);
    assert.equal(decision.remaining, 0);
    assert.equal(decision.resetAt, 1_000_000_000 + 30 + 60);
  });

  it('does not count refused attempts', () => {
    const clock = createManualClock(1_000_000_000_000);
    const limiter = new RollingWindowLimiter(1, clock.now);
    limiter.hit('k');
    for (let i = 0; i < 10; i++) limiter.hit('k');
    clock.advance(60_000);
    assert.equal(limiter.hit('k').allowed, true);
  });

  it('keeps keys apart and peeks without counting', () => {
    const clock = createManualClock(1_000_000_000_000);
    const limiter = new RollingWindowLimiter(1, clock.now);
    limiter.hit('a');
    assert.equal(limiter.peek('a').allowed, false);
    assert.equal(limiter.peek('b').allowed, true);
    assert.equal(limiter.peek('b').remaining, 1);
    assert.equal(limiter.hit('b').allowed, true);
  });

  it('forgets idle keys on sweep', () => {
    const clock = createManualClock(1_000_000_000_000);
    const limiter = new RollingWindowLimiter(5, clock.now);
    limiter.hit('a');
    limiter.hit('b');
    clock.advance(61_000);
    limiter.hit('b');
    limiter.sweep();
    assert.equal(limiter.size, 1);
  });
});
