// The in-process domain-event channel: every handler of a name is called with the payload, publish answers
// whether all of them succeeded, a failing handler (thrown, rejected, or not handled yet) touches neither the
// publisher nor the other handlers and is logged, and unsubscribing stops later calls only.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDomainEvents, NotHandledYet } from '../../src/platform/core/domain-events.ts';

type TestEvents = {
  'thing.done': { id: string };
  'other.done': number;
};

function recordingLog() {
  const lines: Array<{ level: 'warn' | 'debug'; fields: Record<string, unknown>; message: string }> = [];
  return {
    lines,
    log: {
      warn: (fields: object, message: string) =>
        void lines.push({ level: 'warn', fields: fields as Record<string, unknown>, message }),
      debug: (fields: object, message: string) =>
        void lines.push({ level: 'debug', fields: fields as Record<string, unknown>, message }),
    },
  };
}

describe('createDomainEvents', () => {
  it('calls every handler of the name with the payload itself, and only those', async () => {
    const { log, lines } = recordingLog();
    const events = createDomainEvents<TestEvents>({ log });
    const heard: string[] = [];
    const payload = { id: 'a' };
    events.subscribe('thing.done', (thing) => {
      assert.equal(thing, payload);
      heard.push(`first ${thing.id}`);
    });
    events.subscribe('thing.done', async (thing) => {
      await sleep(5);
      heard.push(`second ${thing.id}`);
    });
    events.subscribe('other.done', (n) => void heard.push(`other ${n}`));
    assert.equal(await events.publish('thing.done', payload), true);
    assert.deepEqual(heard, ['first a', 'second a'], 'publish resolves once the slow handler is done');
    assert.equal(await events.publish('other.done', 7), true);
    assert.deepEqual(heard.at(-1), 'other 7');
    assert.deepEqual(lines, []);
  });

  it('answers true with no handler at all', async () => {
    const events = createDomainEvents<TestEvents>({ log: recordingLog().log });
    assert.equal(await events.publish('thing.done', { id: 'nobody' }), true);
  });

  it('isolates a handler that throws or rejects: the others run, publish answers false, the failure is logged', async () => {
    const { log, lines } = recordingLog();
    const events = createDomainEvents<TestEvents>({ log });
    const heard: string[] = [];
    events.subscribe('thing.done', () => {
      throw new Error('sync boom');
    });
    events.subscribe('thing.done', async () => {
      throw new Error('async boom');
    });
    events.subscribe('thing.done', (thing) => void heard.push(thing.id));
    assert.equal(await events.publish('thing.done', { id: 'b' }), false);
    assert.deepEqual(heard, ['b']);
    assert.deepEqual(
      lines.map((line) => [line.level, line.fields.event, (line.fields.err as Error).message]),
      [
        ['warn', 'thing.done', 'sync boom'],
        ['warn', 'thing.done', 'async boom'],
      ],
    );
  });

  it('takes NotHandledYet as "not handled", logged at debug, not as a failure', async () => {
    const { log, lines } = recordingLog();
    const events = createDomainEvents<TestEvents>({ log });
    events.subscribe('thing.done', () => {
      throw new NotHandledYet('someone else is on it');
    });
    assert.equal(await events.publish('thing.done', { id: 'c' }), false);
    assert.deepEqual(
      lines.map((line) => [line.level, line.fields.reason]),
      [['debug', 'someone else is on it']],
    );
  });

  it('stops calling a handler once unsubscribed; one function subscribed twice is two subscriptions', async () => {
    const events = createDomainEvents<TestEvents>({ log: recordingLog().log });
    let calls = 0;
    const handler = () => void calls++;
    const first = events.subscribe('thing.done', handler);
    events.subscribe('thing.done', handler);
    await events.publish('thing.done', { id: 'd' });
    assert.equal(calls, 2);
    first();
    first(); // a second call does nothing
    await events.publish('thing.done', { id: 'e' });
    assert.equal(calls, 3);
  });

  it('leaves a publish in progress untouched by handlers that subscribe or unsubscribe meanwhile', async () => {
    const events = createDomainEvents<TestEvents>({ log: recordingLog().log });
    const heard: string[] = [];
    let stopLate = () => undefined as void;
    events.subscribe('thing.done', (thing) => {
      heard.push(`early ${thing.id}`);
      stopLate();
      events.subscribe('thing.done', (again) => void heard.push(`added ${again.id}`));
    });
    stopLate = events.subscribe('thing.done', (thing) => void heard.push(`late ${thing.id}`));
    await events.publish('thing.done', { id: 'f' });
    assert.deepEqual(heard, ['early f', 'late f']);
    await events.publish('thing.done', { id: 'g' });
    assert.deepEqual(heard.slice(2), ['early g', 'added g']);
  });
});
