import type { TSchema, Static } from 'typebox';
import { AppError } from '../domain/errors.ts';
import type { createChecker } from '../../schemas/validate.ts';
import type { RequestContext } from './route.ts';

/** Parses a JSON body; an empty body is `undefined`, anything unparsable is 400 `Invalid JSON body`. */
export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new AppError('invalid_json', 'Invalid JSON body');
  }
}

/** Reads and validates a JSON object body (CONTRACT §6 order: valid JSON → an object → fields in order). */
export async function readBody<S extends TSchema>(
  ctx: RequestContext,
  checker: ReturnType<typeof createChecker<S>>,
): Promise<Static<S>> {
  const body = await ctx.json();
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new AppError('bad_request', 'Request body must be a JSON object');
  }
  return checkOrThrow(checker, body);
}

/** Validates query parameters (strings coerced to the schema's integers and booleans). */
export function readQuery<S extends TSchema>(
  ctx: RequestContext,
  checker: ReturnType<typeof createChecker<S>>,
): Static<S> {
  const properties = (checker.schema as { properties?: Record<string, { type?: string }> }).properties ?? {};
  const values: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(properties)) {
    const raw = ctx.query.get(name);
    if (raw === null) continue;
    values[name] = schema.type === 'integer' && /^-?\d+$/.test(raw) ? Number(raw) : raw;
  }
  return checkOrThrow(checker, values);
}

function checkOrThrow<S extends TSchema>(
  checker: ReturnType<typeof createChecker<S>>,
  value: unknown,
): Static<S> {
  const checked = checker.check(value);
  if (!checked.ok) throw new AppError('bad_request', checked.message);
  return checked.value;
}
