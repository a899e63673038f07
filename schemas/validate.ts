import type { TSchema, Static } from 'typebox';
import { Compile } from 'typebox/compile';
import type { TLocalizedValidationError } from 'typebox/error';

/** Result of checking a value against a schema: the value (with defaults) or the first message. */
export type Checked<T> = { ok: true; value: T } | { ok: false; message: string; field: string };

/**
 * A check a schema cannot express (a URL rule that needs the service's base URL, a combination of fields),
 * placed at `field` in the property order: it runs once every field up to and including `field` passed the
 * schema, and only a failure of an earlier field answers before it.
 */
export interface FieldRule<T, Context = unknown> {
  field: string;
  /** `context` is what the caller gave `check` (a route: the resource it loaded, e.g. the clip a PATCH changes). */
  check(value: T, context: Context): boolean;
  message: string;
  /** The message when it depends on the value or the context (then `message` is only a summary of them). */
  messageOf?(value: T, context: Context): string;
  /**
   * The rule also judges its field when it holds a number too large for a double (JSON's `1e400` parses as
   * Infinity, which no number schema accepts): a bound answers it as the out-of-range number it is. Other
   * rules never see a value their schema refused.
   */
  judgesNonFinite?: boolean;
}

/**
 * Compiles a schema into a checker that answers one message per failure, for the first failing field in
 * the schema's property order. A property schema may carry `errorMessage`, used word for word (that is how
 * the exact validation messages of docs/errors.md are attached to fields), or a message per failure kind (see
 * `customMessage`); otherwise a readable message is derived.
 */
export function createChecker<S extends TSchema, Context = unknown>(
  schema: S,
  options: { label?: (field: string) => string; rules?: readonly FieldRule<Static<S>, Context>[] } = {},
) {
  const validator = Compile(schema);
  const order = Object.keys((schema as { properties?: object }).properties ?? {});
  const label = options.label ?? ((field: string) => field);
  for (const rule of options.rules ?? []) {
    if (!order.includes(rule.field)) throw new Error(`rule for ${rule.field}: the schema has no such field`);
  }
  const rules = [...(options.rules ?? [])].sort((a, b) => order.indexOf(a.field) - order.indexOf(b.field));
  /** The first rule placed before `limit` (a field's rank) that fails. */
  const failedRule = (value: Static<S>, limit: number, context: Context) =>
    rules.find((rule) => order.indexOf(rule.field) < limit && !rule.check(value, context));
  return {
    schema,
    check(input: unknown, context?: Context): Checked<Static<S>> {
      const value = validator.Default(structuredCloneIfObject(input));
      if (validator.Check(value)) {
        const rule = failedRule(value as Static<S>, Infinity, context as Context);
        return rule
          ? { ok: false, message: messageOf(rule, value as Static<S>, context as Context), field: rule.field }
          : { ok: true, value: value as Static<S> };
      }
      const failures = validator.Errors(value);
      const first = pickFirst(failures, order);
      const field = fieldOf(first);
      // A rule runs only on fields the schema accepted, so it sees the types it was written for — except a
      // bound at a field that holds a non-finite number (`judgesNonFinite`), which answers it first.
      const rank = field === undefined ? -1 : order.indexOf(field);
      const limit = rank === -1 && field !== undefined ? order.length : rank;
      const rule =
        failedRule(value as Static<S>, limit, context as Context) ??
        (rank !== -1 && isNonFiniteNumber(value, field!)
          ? rules.find(
              (r) =>
                r.field === field && r.judgesNonFinite && !r.check(value as Static<S>, context as Context),
            )
          : undefined);
      if (rule) {
        return {
          ok: false,
          message: messageOf(rule, value as Static<S>, context as Context),
          field: rule.field,
        };
      }
      const target = field ? propertySchema(schema, field) : undefined;
      const custom = field
        ? (nestedMessage(target, field, failures) ?? customMessage(target?.errorMessage, first!))
        : undefined;
      const message = custom ?? describe(first, field ? label(field) : 'value', schema, field);
      return { ok: false, message, field: field ?? '' };
    },
  };
}

function messageOf<T, Context>(rule: FieldRule<T, Context>, value: T, context: Context): string {
  return rule.messageOf?.(value, context) ?? rule.message;
}

/**
 * A field's own message for a failure: `errorMessage` is either one message for every failure, or messages by
 * JSON-Schema keyword (`maxLength`, `type`, ...) with `items` for failures inside an array's elements and
 * `default` for the rest (a field like `prompt` has one message when missing and another when too long).
 */
function customMessage(
  errorMessage: string | Record<string, string> | undefined,
  error: TLocalizedValidationError,
): string | undefined {
  if (errorMessage === undefined || typeof errorMessage === 'string') return errorMessage;
  const insideElement = error.instancePath.split('/').length > 2;
  if (insideElement && errorMessage.items) return errorMessage.items;
  return errorMessage[error.keyword] ?? errorMessage.default;
}

/**
 * The message of a field's inner property when the field is an object (or a union holding one) that failed
 * inside: the first of its properties, in their order, that failed and carries an `errorMessage`
 * (`transition_in.type must be ...` before `transition_in.duration_sec must be ...`). Undefined when the field
 * failed as a whole (not an object at all): its own message answers.
 */
function nestedMessage(
  target: Annotated | undefined,
  field: string,
  failures: TLocalizedValidationError[],
): string | undefined {
  const objects = [target, ...(target?.anyOf ?? [])].filter(
    (member): member is Annotated => member?.properties !== undefined,
  );
  const base = `/${field}`;
  for (const object of objects) {
    for (const [name, inner] of Object.entries(object.properties!)) {
      const path = `${base}/${name}`;
      const failure = failures.find(
        (error) =>
          error.instancePath === path ||
          error.instancePath.startsWith(`${path}/`) ||
          (error.instancePath === base &&
            error.keyword === 'required' &&
            (error.params as { requiredProperties?: string[] }).requiredProperties?.includes(name)),
      );
      if (failure) return customMessage(inner.errorMessage, failure);
    }
  }
  return undefined;
}

function isNonFiniteNumber(value: unknown, field: string): boolean {
  const property =
    value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[field] : undefined;
  return typeof property === 'number' && !Number.isFinite(property);
}

function structuredCloneIfObject(input: unknown): unknown {
  return input !== null && typeof input === 'object' ? structuredClone(input) : input;
}

function fieldOf(error: TLocalizedValidationError | undefined): string | undefined {
  if (!error) return undefined;
  const fromPath = error.instancePath.split('/')[1];
  if (fromPath) return decodeURIComponent(fromPath);
  if (error.keyword === 'required')
    return (error.params as { requiredProperties: string[] }).requiredProperties[0];
  return undefined;
}

function pickFirst(
  failures: TLocalizedValidationError[],
  order: string[],
): TLocalizedValidationError | undefined {
  const rank = (error: TLocalizedValidationError) => {
    const field = fieldOf(error);
    const index = field === undefined ? -1 : order.indexOf(field);
    return index === -1 ? (field === undefined ? -1 : order.length) : index;
  };
  return [...failures].sort((a, b) => rank(a) - rank(b))[0];
}

type Annotated = TSchema & {
  errorMessage?: string | Record<string, string>;
  type?: string | string[];
  enum?: unknown[];
  anyOf?: Annotated[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  properties?: Record<string, Annotated>;
};

function propertySchema(schema: TSchema, field: string): Annotated | undefined {
  return (schema as { properties?: Record<string, Annotated> }).properties?.[field];
}

function describe(
  error: TLocalizedValidationError | undefined,
  name: string,
  schema: TSchema,
  field: string | undefined,
): string {
  if (!error) return `${name} is invalid`;
  const target = field ? propertySchema(schema, field) : undefined;
  if (error.keyword === 'required') return `${name} is required`;
  const literals = target?.anyOf?.every((member) => 'const' in member)
    ? target.anyOf.map((m) => m.const)
    : target?.enum;
  if (literals) return `${name} must be one of ${literals.join(', ')}`;
  const type = Array.isArray(target?.type) ? target.type[0] : target?.type;
  if (type === 'integer' || type === 'number') {
    const noun = type === 'integer' ? 'an integer' : 'a number';
    if (error.keyword === 'type') return `${name} must be ${noun}`;
    const range = [
      target?.minimum !== undefined ? `at least ${target.minimum}` : '',
      target?.maximum !== undefined ? `at most ${target.maximum}` : '',
    ].filter(Boolean);
    return `${name} must be ${noun} ${range.join(' and ')}`.trim();
  }
  if (type === 'boolean') return `${name} must be a boolean`;
  if (type === 'string') {
    if (error.keyword === 'type') return `${name} must be a string`;
    if (target?.maxLength !== undefined && error.keyword === 'maxLength')
      return `${name} must be at most ${target.maxLength} characters`;
    if (error.keyword === 'minLength') return `${name} must not be empty`;
  }
  if (type === 'array' && error.keyword === 'type') return `${name} must be an array`;
  return `${name} ${error.message}`;
}
