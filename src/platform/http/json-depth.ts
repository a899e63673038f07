// How deeply a JSON text nests, measured without recursion (docs/errors.md: deeper than 64 levels answers 400
// `Request body is nested too deeply`, right after `Invalid JSON body`). Everything downstream of the parser —
// schema defaults and checks, structuredClone, the actor envelope — walks a parsed body recursively, so the
// depth is bounded here, before JSON.parse and before any of them sees the body. Scanning first also spares the
// parser: V8 parses half a million levels (a 1 MiB body) without overflowing, but spends ~0.5 s of the event
// loop on it, while the scan stops at level 65 and a too-deep text is only checked for syntax (no values built).
import { AppError } from '../core/errors.ts';

/** Deepest nesting of objects and arrays a JSON body may have (`{}` and `[]` are one level). */
export const MAX_JSON_DEPTH = 64;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
/** The characters after a backslash that need nothing more: `" \ / b f n r t`. */
const SIMPLE_ESCAPES = new Set([...'"\\/bfnrt'].map((c) => c.charCodeAt(0)));

/**
 * True when `text` nests objects and arrays deeper than `maxDepth`. One pass over the characters, counting
 * `{`/`[` against `}`/`]` outside strings (a backslash inside a string escapes the next character, so `"\""`
 * and `"\\"` end where they should); it stops at the first level past the limit. Malformed text is scanned as
 * it comes: {@link checkJsonDepth} decides between the two messages.
 */
export function exceedsJsonDepth(text: string, maxDepth: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

/**
 * The nesting rule (docs/errors.md, Order of checks) for a body's text, before it is parsed: nested deeper
 * than {@link MAX_JSON_DEPTH} → 400 `Request body is nested too deeply` if it is valid JSON, else 400
 * `Invalid JSON body` (that message comes first). Text within the limit passes; JSON.parse then judges it.
 */
export function checkJsonDepth(text: string): void {
  if (!exceedsJsonDepth(text)) return;
  if (!isJsonText(text)) throw new AppError('invalid_json', 'Invalid JSON body');
  throw new AppError('bad_request', 'Request body is nested too deeply');
}

/**
 * True exactly when JSON.parse would accept `text` (RFC 8259 grammar as ECMAScript's JSON.parse applies it:
 * whitespace is space, tab, CR and LF; no BOM; lone surrogates allowed in strings). Iterative — an explicit
 * stack of open containers — and builds no values, so any depth costs one linear pass.
 */
export function isJsonText(text: string): boolean {
  const n = text.length;
  /** Open containers, innermost last (1 for an object, 0 for an array); there can be no more than characters. */
  const open = new Uint8Array(n);
  let depth = 0;
  let i = skipSpace(text, 0);

  for (;;) {
    // A value starts at i.
    const c = text.charCodeAt(i);
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const isObject = c === OPEN_OBJECT;
      i = skipSpace(text, i + 1);
      if (text.charCodeAt(i) === (isObject ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        i++; // empty container: a complete value
      } else {
        open[depth++] = isObject ? 1 : 0;
        if (isObject) {
          i = memberKey(text, i);
          if (i < 0) return false;
        }
        continue; // its first value
      }
    } else if (c === QUOTE) {
      i = stringEnd(text, i);
    } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      i = numberEnd(text, i);
    } else if (text.startsWith('true', i)) {
      i += 4;
    } else if (text.startsWith('false', i)) {
      i += 5;
    } else if (text.startsWith('null', i)) {
      i += 4;
    } else {
      return false;
    }
    if (i < 0) return false;

    // A value ended at i: close containers, or go on to the next element or member.
    for (;;) {
      i = skipSpace(text, i);
      if (depth === 0) return i === n;
      const isObject = open[depth - 1] === 1;
      const next = text.charCodeAt(i);
      if (next === (isObject ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        depth--;
        i++;
        continue;
      }
      if (next !== COMMA) return false;
      i = skipSpace(text, i + 1);
      if (isObject) {
        i = memberKey(text, i);
        if (i < 0) return false;
      }
      break;
    }
  }
}

/** Skips JSON whitespace (space, tab, LF, CR) from i. */
function skipSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return i;
    i++;
  }
}

/** `"key" :` and the whitespace after it, from i; the index of the member's value, or -1. */
function memberKey(text: string, i: number): number {
  if (text.charCodeAt(i) !== QUOTE) return -1;
  i = stringEnd(text, i);
  if (i < 0) return -1;
  i = skipSpace(text, i);
  if (text.charCodeAt(i) !== COLON) return -1;
  return skipSpace(text, i + 1);
}

/** The index after the string that opens at i (a quote), or -1: escapes checked, no raw control characters. */
function stringEnd(text: string, i: number): number {
  const n = text.length;
  for (i++; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) return i + 1;
    if (c < 0x20) return -1;
    if (c !== BACKSLASH) continue;
    const escaped = text.charCodeAt(++i);
    if (escaped === 0x75) {
      // \uXXXX
      if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) return -1;
      i += 4;
    } else if (!SIMPLE_ESCAPES.has(escaped)) {
      return -1;
    }
  }
  return -1;
}

/** The index after the number that starts at i, or -1: `-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`. */
function numberEnd(text: string, i: number): number {
  const digits = (from: number) => {
    let j = from;
    while (isDigit(text.charCodeAt(j))) j++;
    return j;
  };
  if (text.charCodeAt(i) === MINUS) i++;
  if (text.charCodeAt(i) === ZERO) i++;
  else if (isDigit(text.charCodeAt(i))) i = digits(i);
  else return -1;
  if (text.charCodeAt(i) === DOT) {
    const end = digits(i + 1);
    if (end === i + 1) return -1;
    i = end;
  }
  const e = text.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    i++;
    const sign = text.charCodeAt(i);
    if (sign === PLUS || sign === MINUS) i++;
    const end = digits(i);
    if (end === i) return -1;
    i = end;
  }
  return i;
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}
