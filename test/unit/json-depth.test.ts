// The nesting limit of JSON bodies (docs/errors.md, Validation): deeper than 64 levels answers 400 `Request body is nested too
// deeply`, checked right after `Invalid JSON body`, without recursion at any depth a 1 MiB body can reach.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_JSON_DEPTH, exceedsJsonDepth, isJsonText } from '../../src/platform/http/json-depth.ts';
import { parseJson } from '../../src/platform/http/json-body.ts';
import { AppError } from '../../src/platform/core/errors.ts';

const arrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const objects = (depth: number) => '{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1);
const mixed = (depth: number) => {
  let text = '1';
  for (let level = 0; level < depth; level++) text = level % 2 ? `{"k":${text}}` : `[0,${text}]`;
  return text;
};

/** What parseJson answers for `text`: the value, or the error's status and message. */
function parsed(text: string | Buffer): unknown {
  try {
    return { value: parseJson(Buffer.isBuffer(text) ? text : Buffer.from(text)) };
  } catch (error) {
    assert.ok(error instanceof AppError, `not an AppError: ${String(error)}`);
    return { status: error.status, error: error.message };
  }
}
const TOO_DEEP = { status: 400, error: 'Request body is nested too deeply' };
const INVALID = { status: 400, error: 'Invalid JSON body' };

describe('exceedsJsonDepth', () => {
  it('allows exactly 64 levels of arrays, objects or both, and refuses 65', () => {
    assert.equal(MAX_JSON_DEPTH, 64);
    for (const shape of [arrays, objects, mixed]) {
      assert.equal(exceedsJsonDepth(shape(64)), false, shape(64).slice(0, 20));
      assert.equal(exceedsJsonDepth(shape(65)), true, shape(65).slice(0, 20));
      assert.equal(JSON.parse(shape(65)) !== undefined, true, 'the shapes are valid JSON');
    }
  });

  it('counts siblings once: width is not depth', () => {
    assert.equal(exceedsJsonDepth(`[${Array.from({ length: 10_000 }, () => '[[]]').join(',')}]`), false);
    assert.equal(
      exceedsJsonDepth(`{${Array.from({ length: 500 }, (_, i) => `"k${i}":${arrays(63)}`)}}`),
      false,
    );
  });

  it('ignores brackets inside strings, escaped quotes and escaped backslashes included', () => {
    const inString = JSON.stringify({ text: '['.repeat(1000) + '{'.repeat(1000) });
    assert.equal(exceedsJsonDepth(inString), false);
    // `"\""` does not end the string at its escaped quote; `"\\"` does end at its second quote.
    const escapedQuote = JSON.stringify(['"' + '['.repeat(100)]);
    assert.equal(exceedsJsonDepth(escapedQuote), false, escapedQuote.slice(0, 20));
    const escapedBackslash = `["\\\\",${arrays(64)}]`;
    assert.equal(JSON.parse(escapedBackslash).length, 2);
    assert.equal(exceedsJsonDepth(escapedBackslash), true, 'the string ends at the quote after \\\\');
    assert.equal(exceedsJsonDepth(`["\\\\",${arrays(63)}]`), false);
    // Keys with brackets, and unicode escapes.
    assert.equal(exceedsJsonDepth(`{"[[[[": "\\u005b\\u005b", "}}}}": ${arrays(63)}}`), false);
  });

  it('takes a custom limit', () => {
    assert.equal(exceedsJsonDepth('[[1]]', 1), true);
    assert.equal(exceedsJsonDepth('[[1]]', 2), false);
    assert.equal(exceedsJsonDepth('1', 0), false);
  });

  it('scans a body nested half a million levels (a 1 MiB body) without recursing', () => {
    const deepest = arrays(512 * 1024);
    assert.equal(deepest.length, 1024 * 1024);
    assert.equal(exceedsJsonDepth(deepest), true);
  });
});

describe('isJsonText', () => {
  /** JSON.parse's verdict, the reference. */
  const parses = (text: string) => {
    try {
      JSON.parse(text);
      return true;
    } catch {
      return false;
    }
  };
  const SNIPPETS = [
    ...[
      '0',
      '-0',
      '1',
      '-1',
      '10',
      '1.5',
      '-1.5e10',
      '1e309',
      '1E+2',
      '1e-2',
      '123456789012345678901234567890',
    ],
    ...['01', '-', '+1', '1.', '.5', '1e', '1e+', '0x10', 'NaN', 'Infinity', '- 1', '1.e5', '00'],
    ...['true', 'false', 'null', 'tru', 'nul', 'True', 'undefined', 'truex', 'true false'],
    ...['""', '"a"', '"\\"', '"\\""', '"\\"', '"\\u00e9"', '"\\ud800"', '"\\u12"', '"\\u12g4"', '"\\x41"'],
    ...['"\\/\\b\\f\\n\\r\\t"', '"\t"', '"\n"', '"\u0001"', '"\u007f"', '"\u2028"', '"unterminated', '"a"b"'],
    ...['[]', '[1]', '[1,2]', '[1,]', '[,1]', '[1 2]', '[', ']', '[[]]', '[[],[]]', '[[]', '[]]', '[] []'],
    ...[
      '{}',
      '{"a":1}',
      '{"a":1,}',
      '{"a"}',
      '{"a":}',
      '{a:1}',
      "{'a':1}",
      '{"a":1 "b":2}',
      '{"a" : 1 , "b" : [ ] }',
    ],
    ...[
      '{"__proto__":{"x":1}}',
      '{"a":1,"a":2}',
      '{1:2}',
      '{"a":1}}',
      '{{}}',
      '{"a":{"b":{}}}',
      '{,}',
      '{"a",1}',
    ],
    ...[
      ' 1 ',
      '\t[\n]\r',
      '\u00a0[]',
      '\ufeff[]',
      '[]\u0000',
      '',
      ' ',
      '\v[]',
      '[1]\n\n',
      '/*c*/[]',
      '[] // x',
    ],
  ];

  it('agrees with JSON.parse on valid and invalid snippets, shallow and nested 100 levels deep', () => {
    for (const text of SNIPPETS) {
      for (const wrapped of [text, `[${text}]`, `{"k":${text}}`, '['.repeat(100) + text + ']'.repeat(100)]) {
        assert.equal(isJsonText(wrapped), parses(wrapped), JSON.stringify(wrapped.slice(0, 130)));
      }
    }
  });

  it('agrees with JSON.parse on 20 000 random mutations of JSON texts (seeded)', () => {
    let seed = 20240607;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const alphabet = '[]{}",:0123456789-+.eE\\ \t\ntruefalsnulx\u00e9\ud800';
    const bases = [
      '{"a":[1,2.5e-3,{"b":"c\\"d"},null,true,false],"e":{"f":[[],{}]},"g":"\\u0041"}',
      JSON.stringify({ deep: JSON.parse(arrays(70)), s: 'x[y{z' }),
      '[' + '{"k":['.repeat(40) + '0' + ']}'.repeat(40) + ']',
    ];
    let disagreements = 0;
    for (let round = 0; round < 20_000; round++) {
      let text = bases[round % bases.length]!;
      for (let edits = 1 + Math.floor(random() * 3); edits > 0; edits--) {
        const at = Math.floor(random() * (text.length + 1));
        const char = alphabet[Math.floor(random() * alphabet.length)]!;
        const kind = random();
        if (kind < 0.4) text = text.slice(0, at) + char + text.slice(at);
        else if (kind < 0.8) text = text.slice(0, at) + text.slice(at + 1);
        else text = text.slice(0, at) + char + text.slice(at + 1);
      }
      if (isJsonText(text) !== parses(text)) {
        disagreements++;
        assert.fail(`disagrees with JSON.parse (${parses(text)}) on ${JSON.stringify(text)}`);
      }
    }
    assert.equal(disagreements, 0);
  });

  it('checks a 1 MiB text nested half a million levels without recursing', () => {
    assert.equal(isJsonText(arrays(512 * 1024)), true);
    assert.equal(isJsonText(objects(200_000)), true);
    assert.equal(isJsonText(arrays(512 * 1024).slice(0, -1)), false);
  });
});

describe('parseJson', () => {
  it('answers the value of a body within the limit, and undefined for an empty body', () => {
    assert.deepEqual(parsed('{"a":[1,{"b":null}]}'), { value: { a: [1, { b: null }] } });
    assert.deepEqual(parsed(arrays(64)), { value: JSON.parse(arrays(64)) });
    assert.deepEqual(parsed(''), { value: undefined });
  });

  it('answers 400 Request body is nested too deeply past 64 levels, at any depth, objects and arrays', () => {
    for (const depth of [65, 100, 2000, 10_000, 100_000, 512 * 1024]) {
      assert.deepEqual(parsed(arrays(depth)), TOO_DEEP, `arrays ${depth}`);
      if (depth <= 100_000) assert.deepEqual(parsed(objects(depth)), TOO_DEEP, `objects ${depth}`);
    }
  });

  it('refuses a 1 MiB body nested half a million levels without ever handing it to JSON.parse', (t) => {
    // JSON.parse would build half a million arrays; the depth scan and the syntax check build none. Checked by
    // what runs, not by timing (a timed assertion flakes on a loaded machine).
    const body = Buffer.from(arrays(512 * 1024));
    const parse = t.mock.method(JSON, 'parse');
    assert.deepEqual(parsed(body), TOO_DEEP);
    assert.equal(parse.mock.callCount(), 0, 'JSON.parse was called');
    assert.deepEqual(parsed('[[1]]'), { value: [[1]] });
    assert.equal(parse.mock.callCount(), 1, 'a shallow body is parsed');
  });

  it('answers Invalid JSON body first for a deep body that does not parse', () => {
    for (const text of [
      '['.repeat(10_000), // never closed
      arrays(10_000) + ',', // trailing garbage
      '{"a":'.repeat(5000) + '}'.repeat(5000), // no value
      `[${arrays(100)}`,
      '[1,]',
    ]) {
      assert.deepEqual(parsed(text), INVALID, text.slice(-20));
    }
  });

  it('still parses invalid UTF-8 bytes and lone surrogate escapes (the schemas judge the strings)', () => {
    assert.deepEqual(parsed(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])), {
      value: { a: '\ufffd\ufffd' },
    });
    assert.deepEqual(parsed('["\\ud800"]'), { value: ['\ud800'] });
  });
});
