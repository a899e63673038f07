import type { MongoClientOptions } from 'mongodb';
import { createKeyedSerial } from '../core/keyed-serial.ts';
import type { MongoServer } from './server.ts';

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
 * What the service does differently on the server it is connected to, chosen once at connect from the server's
 * own answer (docs/operator.md, "MongoDB and the embedded server"). Adapters ask this object, never the
 * server's kind. On MongoDB every member is the plain behaviour; on jongodb, the in-memory server of tests and
 * embedded mode, each member emulates one thing jongodb lacks. Code that both servers run alike (no update
 * pipelines, no `$push`, no multi-document transactions, no change streams) needs no member here.
 */
export interface MongoCompat {
  /** The server it was chosen for. */
  readonly server: MongoServer;
  /** The emulations in force, one line each (none on MongoDB): the start-up log names them. */
  readonly emulations: readonly string[];
  /** How the driver watches the server (`auto`: MongoDB's streaming monitor where it can). */
  readonly monitoring: NonNullable<MongoClientOptions['serverMonitoringMode']>;
  /**
   * `repo`, safe when its `methods` are called concurrently in this process. Each listed method is a
   * conditional update of the one document `keyOf` names (from the method's first argument: a job id, a
   * delivery), whose condition must let exactly one of two racing calls through. MongoDB applies such an
   * update atomically, so `repo` itself is returned. `repo` must keep its methods as own properties (as the
   * adapters build them).
   */
  serialised<R extends object, M extends AsyncMethodOf<R>>(
    repo: R,
    methods: readonly M[],
    keyOf: (first: FirstArgOf<R, M>) => string,
  ): R;
}

/** The compatibility of `server`: plain for MongoDB, the emulations for jongodb. */
export function mongoCompatFor(server: MongoServer): MongoCompat {
  return server.kind === 'jongodb' ? jongodbCompat(server) : mongodbCompat(server);
}

/** Real MongoDB: nothing emulated. */
function mongodbCompat(server: MongoServer): MongoCompat {
  return {
    server,
    emulations: [],
    monitoring: 'auto',
    serialised: (repo) => repo,
  };
}

/** jongodb: each member works around one thing it lacks (docs/operator.md lists them with their limits). */
function jongodbCompat(server: MongoServer): MongoCompat {
  return {
    server,
    emulations: [
      'conditional updates queued per document within this process (not atomic across connections)',
      'server state polled (the streaming monitor crashed against it under load)',
    ],
    monitoring: 'poll',
    serialised: serialisedPerKey,
  };
}

/**
 * jongodb's conditional updates (`findOneAndUpdate` above all, filtered on a state) are not atomic across
 * connections: two racing moves of one document can both match (measured: 40 of 300 two-way
 * `findOneAndUpdate` races on a pool of 50 connections). This queues `methods` one at a time per key, in
 * arrival order; different keys still run concurrently, and other methods are left alone.
 *
 * What it cannot cover: it orders the calls of this process only. Several processes on one jongodb (the nodes
 * of a cluster test) still race each other's moves of the same document; so do writes made outside the listed
 * methods.
 */
function serialisedPerKey<R extends object, M extends AsyncMethodOf<R>>(
  repo: R,
  methods: readonly M[],
  keyOf: (first: FirstArgOf<R, M>) => string,
): R {
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
