import { createKeyedSerial } from '../core/keyed-serial.ts';
import type { MongoServer } from './connect.ts';

/** Names of the methods of `R` that return a promise. */
type AsyncMethodOf<R> = {
  [K in keyof R]-?: R[K] extends (...args: never[]) => Promise<unknown> ? K : never;
}[keyof R];

/** The first argument of any of the methods `M` of `R` (what the key is read from). */
type FirstArgOf<R, M extends keyof R> = M extends keyof R
  ? R[M] extends (first: infer A, ...rest: never[]) => unknown
    ? A
    : never
  : never;

/**
 * The workaround for jongodb, the in-memory server of tests and embedded mode: its conditional updates
 * (`updateOne`/`findOneAndUpdate` filtered on a state) are not atomic across connections, so two racing moves
 * of one document can both match. On jongodb this returns `repo` with `methods` queued one at a time per key
 * (`keyOf` their first argument: a job id, a delivery), in arrival order; different keys still run
 * concurrently. On MongoDB, which applies each such update atomically, it returns `repo` itself.
 *
 * What it cannot cover: it orders the calls of this process only. Several processes on one jongodb (the
 * nodes of a cluster test) still race each other's moves of the same document; so do writes made outside
 * the listed methods. `repo` must keep its methods as own properties (as the adapters build them).
 */
export function serialisedOnJongodb<R extends object, M extends AsyncMethodOf<R>>(
  connection: { readonly server: MongoServer },
  repo: R,
  methods: readonly M[],
  keyOf: (first: FirstArgOf<R, M>) => string,
): R {
  if (connection.server.kind !== 'jongodb') return repo;
  const moves = createKeyedSerial();
  const wrapped: R = { ...repo };
  for (const name of methods) {
    const method = repo[name] as (first: FirstArgOf<R, M>, ...rest: unknown[]) => Promise<unknown>;
    const queued = (first: FirstArgOf<R, M>, ...rest: unknown[]) =>
      moves.run(keyOf(first), () => method.call(repo, first, ...rest));
    wrapped[name] = queued as R[M];
  }
  return wrapped;
}
