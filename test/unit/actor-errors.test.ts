import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/platform/core/errors.ts';
import { classifyHandlerError } from '../../src/platform/core/actor-errors.ts';

const named = (name: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(name), { name }, extra);

describe('actor handler error classification', () => {
  it('retries infrastructure failures: dropped connections, lost elections, write conflicts, time-outs', () => {
    for (const error of [
      named('MongoNetworkError'),
      named('MongoServerSelectionError'),
      named('MongoNetworkTimeoutError'),
      named('MongoServerError', { code: 112 }), // WriteConflict
      named('MongoServerError', { code: 10107 }), // NotWritablePrimary
      named('MongoServerError', { errorLabels: ['TransientTransactionError'] }),
      named('MongoServerError', { hasErrorLabel: (label: string) => label === 'RetryableWriteError' }),
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      new AppError('unavailable', 'Service temporarily unavailable, try again'),
    ]) {
      assert.equal(classifyHandlerError(error), 'transient', `${error.name} ${error.message}`);
    }
  });

  it('answers command and programming errors at once: retrying gives the same answer', () => {
    for (const error of [
      new AppError('bad_request', 'amount must be a positive integer'),
      new AppError('not_found', 'User not found'),
      new AppError('insufficient_credits', 'Insufficient credits'),
      new TypeError('cannot read properties of undefined'),
      new RangeError('invalid array length'),
      named('MongoServerError', { code: 11000 }), // duplicate key: a fact, not a hiccup
      named('MongoServerError', { code: 2 }), // BadValue
      'a thrown string',
      undefined,
      null,
    ]) {
      assert.equal(classifyHandlerError(error), 'permanent', String(error));
    }
  });
});
