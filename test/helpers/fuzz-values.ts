// The values fuzz tests are made of (test/e2e/fuzz.test.ts on the JSON routes, test/fuzz on every route
// family): a seeded picker, hostile JSON texts, ids that are not ids, broken percent-encodings, odd query
// strings and request bodies that are mostly objects with each field omitted, plausible or odd.
import { seededRandom } from './random.ts';

/** A seeded picker: the same seed gives the same corpus. */
export function prng(seed: number) {
  const next = seededRandom(seed);
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  };
}
export type Random = ReturnType<typeof prng>;

export const deepArrays = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth);
export const deepObjects = (depth: number, inner = '1') => '{"a":'.repeat(depth) + inner + '}'.repeat(depth);
/** A JSON object text from [key, value text] pairs (keys may repeat: JSON allows it, the last one wins). */
export const objectText = (entries: Array<[string, string]>) =>
  `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`;

// Broken percent-encoding: a truncated sequence, a lone `%`, non-hex digits, a lead byte alone, an encoded
// surrogate (not UTF-8), an overlong encoding.
export const BROKEN_ENCODINGS = ['%E0%A4%A', '%', '%zz', '%C3', '%ED%A0%80', '%C0%AF', 'med_x%FF.png'];

/** Literal private and local hosts, in every notation the probing used and a few more. */
export const PRIVATE_WEBHOOK_URLS = [
  'https://127.0.0.1',
  'https://127.0.0.1:8443/hook',
  'https://[::1]',
  'https://[::1]:443/hook',
  'https://169.254.169.254/latest/meta-data/',
  'https://10.0.0.1',
  'https://172.16.5.4/hook',
  'https://192.168.0.10',
  'https://100.64.0.1',
  'https://0.0.0.0',
  'https://0',
  'https://[::]',
  'https://2130706433',
  'https://0x7f.0.0.1',
  'https://0x7f000001',
  'https://0177.0.0.1',
  'https://127.1',
  'https://%31%32%37.0.0.1',
  'https://[::ffff:127.0.0.1]',
  'https://[::ffff:a00:1]',
  'https://[fe80::1]',
  'https://[fd00::1]',
  'https://localhost',
  'https://LOCALHOST./hook',
  'https://hooks.localhost',
  'https:\\\\127.0.0.1\\',
];

/** Ids that are not ids: broken encodings, traversal, prototype names, huge, empty-ish. */
export function oddIds(random: Random): string[] {
  return [
    ...BROKEN_ENCODINGS,
    '__proto__',
    'constructor',
    'prototype',
    '..%2F..%2Fetc%2Fpasswd',
    '%2e%2e',
    '%00',
    'x'.repeat(random.pick([101, 3000])),
    '%F0%9F%98%80',
    'job_00000000000000',
    'usr_doesnotexist000',
    'key_doesnotexist000',
    '-0',
    '1e309',
    '%22%7B%7D',
    'med_000000000000000000000000.png',
    `job_${'A'.repeat(14)}`,
  ];
}

/** A raw query string: each name omitted, repeated, or given an odd value (inserted unencoded). */
export function randomQuery(random: Random, names: string[], extraValues: string[] = []): string {
  const values = [
    '1',
    '20',
    '100',
    '1000',
    '0',
    '-0',
    '-1',
    '1.5',
    '1e309',
    '99999999999999999999999',
    '',
    'abc',
    'processing',
    'completed',
    'request',
    'webhook_attempt',
    '__proto__',
    'constructor',
    ...BROKEN_ENCODINGS,
    Buffer.from(`${'9'.repeat(20)}:job_x`).toString('base64url'),
    Buffer.from('[1e309,"usr_x"]').toString('base64url'),
    Buffer.from('{"__proto__":{"a":1}}').toString('base64url'),
    Buffer.from([0xff, 0xfe, 0xed, 0xa0, 0x80]).toString('base64url'),
    '!!!',
    ...extraValues,
  ];
  const parts: string[] = [];
  for (const name of names) {
    const times = random.pick([0, 1, 1, 1, 2]);
    for (let n = 0; n < times; n++) parts.push(`${name}=${random.pick(values)}`);
  }
  if (random.chance(0.1)) parts.push(random.pick(['__proto__[x]=1', 'constructor=1', '%zz=%zz', '=', '&&']));
  return parts.join('&');
}

/**
 * JSON text values of every kind, valid for no field in particular; with `urls`, hostile URL strings too
 * (`ownBase`: the service's base URL, for own-media URLs whose path does not decode).
 */
export function oddValue(random: Random, urls: { ownBase: string } | undefined): string {
  const pools = [
    // numbers
    [
      '0',
      '-0',
      '1',
      '-1',
      '4',
      '5',
      '15',
      '1e309',
      '-1e309',
      '1e-400',
      '1.5',
      '-2.5',
      '1E2',
      '1e30',
      '86401',
    ],
    ['123456789012345678901234567890', '-123456789012345678901234567890', '9007199254740993', '2147483648'],
    // strings, lone surrogates included
    ['""', '" "', '"x"', '"\\ud800"', '"\\udc00"', '"a\\ud800b"', '"\\ud83d\\ude00"', '"\\u0000"', '"é"'],
    [JSON.stringify('x'.repeat(5000)), '"__proto__"', '"constructor"', '"16:9"', '"720p"', '"1:1"'],
    ['"video:write"', '"models:read"', '"a@b.co"', '"\\ud800@example.com"', '"-0"', '"1e309"'],
    // literals and containers
    ['true', 'false', 'null', '[]', '{}', '[1,2]', '{"a":1}', '["video:write","\\ud800"]'],
    ['{"__proto__":{"polluted":true}}', '{"constructor":{"prototype":{"polluted":true}}}', '[null]'],
    [deepArrays(random.pick([10, 30, 62])), deepObjects(random.pick([10, 30, 62]))],
  ];
  if (urls) {
    const ownMedia = (suffix: string) => JSON.stringify(`${urls.ownBase}/media/${suffix}`);
    pools.push(
      [
        '"https://localhost/a.png"',
        '"https://0.0.0.0/a.png"',
        '"https://127.0.0.1/a.png"',
        '"https://2130706433/a.png"',
        '"https://0x7f.0.0.1/a.png"',
        '"https://[::1]/a.png"',
        '"https://[::ffff:127.0.0.1]/"',
        '"https://169.254.169.254/latest"',
        '"https://10.0.0.1/"',
        '"https:\\\\\\\\127.0.0.1\\\\"',
        '"https://printer.local/a.png"',
        '"https://db.internal/a.png"',
      ],
      [
        '"http://example.com/a.png"',
        '"ftp://x"',
        '"https://%zz"',
        '"https://exa%E0%A4%A.com/x.png"',
        '"javascript:alert(1)"',
        '"data:image/png;base64,AAAA"',
        '"https://"',
        '"//localhost/a.png"',
        ownMedia(random.pick(BROKEN_ENCODINGS)),
        ownMedia('med_doesnotexist000000000000.png'),
        ownMedia('..%2F..%2Fetc%2Fpasswd'),
      ],
    );
    pools.push(['["https://localhost/a.png","https://0.0.0.0/b.png"]', `[${ownMedia('%E0%A4%A')}]`]);
  }
  return random.pick(random.pick(pools));
}

export interface BodyOptions {
  /** A plausible JSON text for a field, so that bodies get past validation often enough. */
  plausible(field: string): string;
  /** An odd JSON text for a field (default: `oddValue` without URLs). */
  odd?(field: string): string;
  /** Fields always set last (they win over a random value of the same name). */
  fixed?: Array<[string, string]>;
}

/**
 * A body for a route with `fields`: mostly an object whose fields are each omitted, plausible or odd, with
 * extra `__proto__`/`constructor`/duplicate keys; sometimes deep, not an object, not JSON, or not UTF-8.
 */
export function randomBody(random: Random, fields: string[], options: BodyOptions): Buffer {
  const odd = options.odd ?? (() => oddValue(random, undefined));
  const shape = random.int(100);
  if (shape < 4) return Buffer.alloc(0);
  if (shape < 10)
    return Buffer.from(random.pick(['[]', '1', '"x"', 'null', 'true', ' ', '-0', '1e309', '[{}]']));
  if (shape < 16) {
    const depth = random.pick([100, 2000, 10_000]);
    const nest = random.chance(0.5) ? deepArrays : deepObjects;
    return Buffer.from(
      random.chance(0.5) ? nest(depth) : objectText([[random.pick([...fields, 'x']), nest(depth)]]),
    );
  }
  const entries: Array<[string, string]> = [];
  for (const field of fields) {
    const roll = random.next();
    if (roll < 0.25) continue;
    entries.push([field, roll < 0.65 ? options.plausible(field) : odd(field)]);
  }
  if (random.chance(0.15))
    entries.push(['__proto__', random.pick(['{"prompt":"x","isAdmin":true}', '{}', 'null', '[]'])]);
  if (random.chance(0.1)) entries.push(['constructor', random.pick(['{"prototype":{"x":1}}', '"x"', '{}'])]);
  if (random.chance(0.05) && fields.length > 0)
    entries.push([random.pick(fields), oddValue(random, undefined)]);
  if (random.chance(0.1))
    entries.push([random.pick(['x', '', '\ud800', 'prototype']), oddValue(random, undefined)]);
  if (random.chance(0.5)) entries.sort(() => random.next() - 0.5);
  entries.push(...(options.fixed ?? []));
  const text = objectText(entries);
  if (shape < 22) {
    // Not JSON: cut short, or trailing garbage.
    return Buffer.from(
      random.chance(0.5)
        ? text.slice(0, random.int(text.length))
        : `${text}${random.pick([',', '}', 'x', '\u0000'])}`,
    );
  }
  if (shape < 30 && text.includes('"')) {
    // Invalid UTF-8 inside a string: bytes a decoder must replace.
    const bytes = Buffer.from(text);
    const quote = bytes.indexOf(0x22, random.int(bytes.length));
    if (quote > 0) {
      const junk = Buffer.from(
        random.pick([
          [0xff],
          [0xfe, 0xff],
          [0xc3],
          [0xed, 0xa0, 0x80],
          [0xf4, 0x90, 0x80, 0x80],
          [0xc0, 0xaf],
        ]),
      );
      return Buffer.concat([bytes.subarray(0, quote + 1), junk, bytes.subarray(quote + 1)]);
    }
  }
  return Buffer.from(text);
}

/** Plausible values of the generation routes' fields, input images chosen from `urls`. */
export function plausibleJobValues(random: Random, urls: string[]): Record<string, unknown[]> {
  return {
    prompt: ['a lighthouse', 'é\ud800', '[sandbox:hang] x'],
    image_url: urls,
    image_urls: [[], [random.pick(urls)], [random.pick(urls), random.pick(urls)]],
    fast: [true, false],
    duration_seconds: [4, 5, 10],
    aspect_ratio: ['16:9', '1:1', '9:16'],
    resolution: ['480p', '720p'],
    generate_audio: [true, false],
    seed: [0, 42, 2147483647],
    num_images: [1, 4],
  };
}
