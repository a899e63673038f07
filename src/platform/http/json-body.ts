import { AppError } from '../core/errors.ts';
import { checkJsonDepth } from './json-depth.ts';

/**
 * Parses a JSON body; an empty body is `undefined`, anything unparsable is 400 `Invalid JSON body`, and a body
 * nested deeper than 64 levels is 400 `Request body is nested too deeply` (checked first, on the text:
 * docs/errors.md, Order of checks).
 */
export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  checkJsonDepth(text);
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('invalid_json', 'Invalid JSON body');
  }
}
