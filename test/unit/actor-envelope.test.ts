import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppError, ProjectNotFound } from '../../src/platform/core/errors.ts';
import { ActorUnavailableError, RetryableError } from '../../src/platform/core/actor-errors.ts';
import { decode, encode, errorReply, unwrapReply } from '../../src/platform/core/actor-envelope.ts';
import type { ActorReply } from '../../src/platform/core/actor-transport.ts';

/** A handler's failure as the caller gets it: encoded to bytes and decoded, as both transports carry it. */
function overTheWire(error: unknown): unknown {
  const reply = decode<ActorReply>(encode(errorReply(error)));
  try {
    unwrapReply(reply);
  } catch (thrown) {
    return thrown;
  }
  return assert.fail('an error reply must throw');
}

describe('actor envelope: errors across the wire', () => {
  it('keeps a ProjectNotFound a ProjectNotFound, with its 404 body', () => {
    const error = overTheWire(new ProjectNotFound());
    assert.ok(error instanceof ProjectNotFound);
    assert.deepEqual([error.status, error.toBody()], [404, { error: 'Project not found' }]);
  });

  it('keeps an ActorUnavailableError an ActorUnavailableError, with its 503 body', () => {
    const error = overTheWire(new ActorUnavailableError());
    assert.ok(error instanceof ActorUnavailableError);
    assert.deepEqual(
      [error.status, error.toBody()],
      [503, { error: 'Service temporarily unavailable, try again' }],
    );
  });

  it('names the subclass on the wire with a `kind`, and only for the typed ones', () => {
    assert.deepEqual(errorReply(new ProjectNotFound()), {
      ok: false,
      error: { code: 'not_found', message: 'Project not found', details: {}, kind: 'project_not_found' },
    });
    assert.deepEqual(errorReply(new ActorUnavailableError()), {
      ok: false,
      error: {
        code: 'unavailable',
        message: 'Service temporarily unavailable, try again',
        details: {},
        kind: 'actor_unavailable',
      },
    });
    assert.deepEqual(errorReply(new AppError('conflict', 'No', { revision: 3 })), {
      ok: false,
      error: { code: 'conflict', message: 'No', details: { revision: 3 } },
    });
  });

  it('gives a plain AppError back as a plain AppError with its code, message and fields', () => {
    for (const sent of [
      new AppError('insufficient_credits', 'Insufficient credits', { credits_required: 5 }),
      new AppError('not_found', 'Project not found'), // the same text, but not the type
      new AppError('unavailable', 'The turn was dropped before it ran; try again'),
    ]) {
      const error = overTheWire(sent);
      assert.ok(error instanceof AppError);
      assert.ok(
        !(error instanceof ProjectNotFound) && !(error instanceof ActorUnavailableError),
        sent.message,
      );
      assert.deepEqual([error.code, error.message, error.details], [sent.code, sent.message, sent.details]);
    }
  });

  it('hides anything else behind 500 internal, a RetryableError that escaped its retries included', () => {
    for (const sent of [new TypeError('secret detail'), new RetryableError('secret hiccup'), 'a string']) {
      const error = overTheWire(sent);
      assert.ok(error instanceof AppError && !(error instanceof ActorUnavailableError));
      assert.deepEqual([error.code, error.message], ['internal', 'Internal server error']);
    }
  });

  it("reads a kind it does not know (a newer node's) as a plain AppError of the code sent", () => {
    const reply = {
      ok: false,
      error: { code: 'not_found', message: 'Video not found', details: {}, kind: 'video_not_found' },
    } as unknown as ActorReply;
    assert.throws(
      () => unwrapReply(reply),
      (error: unknown) =>
        error instanceof AppError &&
        error.constructor === AppError &&
        error.code === 'not_found' &&
        error.message === 'Video not found',
    );
    const inherited = { ok: false, error: { code: 'conflict', message: 'No', kind: 'toString' } };
    assert.throws(
      () => unwrapReply(inherited as unknown as ActorReply),
      (error: unknown) =>
        error instanceof AppError && error.constructor === AppError && error.code === 'conflict',
      'an inherited property is not a kind',
    );
  });

  it('reads an unknown code as 500 internal, and passes a value through', () => {
    const reply = { ok: false, error: { code: 'teapot', message: 'short and stout' } };
    assert.throws(() => unwrapReply(reply as unknown as ActorReply), { code: 'internal' });
    assert.deepEqual(unwrapReply(decode<ActorReply>(encode({ ok: true, value: { n: 1 } }))), { n: 1 });
  });
});
