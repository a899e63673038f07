import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppError, ProjectNotFound } from '../../src/platform/core/errors.ts';
import {
  ActorUnavailableError,
  classifyHandlerError,
  RetryableError,
} from '../../src/platform/core/actor-errors.ts';

const named = (name: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(name), { name }, extra);

describe('actor handler error classification', () => {
  it('retries a RetryableError, by its type, whatever its message or cause', () => {
    for (const error of [
      new RetryableError('The project was changed concurrently'),
      new RetryableError('upstream hiccup', { cause: new TypeError('not a hiccup by itself') }),
      new (class extends RetryableError {})('a subclass is still retryable'),
    ]) {
      assert.equal(classifyHandlerError(error), 'retryable', error.message);
    }
    const cause = named('MongoNetworkError');
    assert.equal(new RetryableError('lost the connection', { cause }).cause, cause, 'the cause is kept');
  });

  it('retries infrastructure failures recognised by their shape: dropped connections, lost elections, write conflicts, time-outs', () => {
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
    ]) {
      assert.equal(classifyHandlerError(error), 'retryable', `${error.name} ${error.message}`);
    }
  });

  it('answers every AppError at once, whatever its code: it is the answer, not a signal to retry', () => {
    for (const error of [
      new AppError('bad_request', 'amount must be a positive integer'),
      new AppError('not_found', 'User not found'),
      new AppError('insufficient_credits', 'Insufficient credits'),
      new AppError('unavailable', 'Service temporarily unavailable, try again'),
      new AppError('timeout', 'Timed out'),
      new ProjectNotFound(),
      new ActorUnavailableError(),
      // An AppError dressed as a driver error is still an answer: its type decides, not its shape.
      Object.assign(new AppError('conflict', 'No'), { name: 'MongoNetworkError' }),
    ]) {
      assert.equal(classifyHandlerError(error), 'terminal', `${error.name} ${error.message}`);
    }
  });

  it('answers command and programming errors at once: retrying gives the same answer', () => {
    for (const error of [
      new TypeError('cannot read properties of undefined'),
      new RangeError('invalid array length'),
      new Error('Service temporarily unavailable, try again'), // a message decides nothing
      named('MongoServerError', { code: 11000 }), // duplicate key: a fact, not a hiccup
      named('MongoServerError', { code: 2 }), // BadValue
      'a thrown string',
      undefined,
      null,
    ]) {
      assert.equal(classifyHandlerError(error), 'terminal', String(error));
    }
  });

  it('gives the typed errors the status and body their plain AppError had', () => {
    const missing = new ProjectNotFound();
    assert.ok(missing instanceof AppError);
    assert.deepEqual(
      [missing.code, missing.status, missing.toBody(), missing.name],
      ['not_found', 404, { error: 'Project not found' }, 'ProjectNotFound'],
    );
    const unavailable = new ActorUnavailableError();
    assert.ok(unavailable instanceof AppError);
    assert.deepEqual(
      [unavailable.code, unavailable.status, unavailable.toBody(), unavailable.name],
      ['unavailable', 503, { error: 'Service temporarily unavailable, try again' }, 'ActorUnavailableError'],
    );
    assert.ok(
      !(new AppError('not_found', 'Project not found') instanceof ProjectNotFound),
      'by type, not text',
    );
  });
});
