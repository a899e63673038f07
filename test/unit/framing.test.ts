// The body-framing rules the HTTP front applies before any route (docs/api.md#http-rules).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { framingProblem, FRAMING_MESSAGES } from '../../src/platform/http/framing.ts';

const check = (contentLength: string[], transferEncoding: string[] = []) =>
  framingProblem({ contentLength, transferEncoding });

describe('framingProblem', () => {
  it('accepts no framing, one Content-Length, or one chunked coding in any case and spacing', () => {
    for (const [lengths, codings] of [
      [[], []],
      [['0'], []],
      [['1048576'], []],
      [[], ['chunked']],
      [[], ['Chunked']],
      [[], [' CHUNKED ']],
    ] as const)
      assert.equal(check([...lengths], [...codings]), undefined, JSON.stringify([lengths, codings]));
  });

  it('refuses a repeated Content-Length, whether the values differ or not', () => {
    assert.equal(check(['3', '5']), FRAMING_MESSAGES.repeatedLength);
    assert.equal(check(['3', '3']), FRAMING_MESSAGES.repeatedLength);
    assert.equal(check(['0', '0', '0']), FRAMING_MESSAGES.repeatedLength);
  });

  it('refuses Content-Length with Transfer-Encoding, whatever the coding', () => {
    assert.equal(check(['3'], ['chunked']), FRAMING_MESSAGES.lengthAndChunks);
    assert.equal(check(['0'], ['identity']), FRAMING_MESSAGES.lengthAndChunks);
  });

  it('refuses every transfer coding but a single chunked', () => {
    for (const codings of [
      ['gzip'],
      ['gzip, chunked'],
      ['chunked, gzip'],
      ['chunked, chunked'],
      ['chunked', 'chunked'],
      ['gzip', 'chunked'],
      ['identity'],
      ['xchunked'],
      [''],
    ])
      assert.equal(check([], codings), FRAMING_MESSAGES.transferCoding, JSON.stringify(codings));
  });
});
