// The sandbox's emulated upstream requests, kept in `sandbox_requests` like a real provider's database, and
// the claims by which one process renders each of them: a claim is a lease, renewed while its owner renders,
// so a request whose process died is rendered by the next one that looks at it (docs/operator.md, Providers).
import { randomUUID } from 'node:crypto';
import type { Collection } from 'mongodb';
import type { Logger } from 'pino';
import type { Clock } from '../../../platform/index.ts';
import type { Generation } from '../../ports/media-provider.ts';
import type { SandboxBehaviour } from './markers.ts';

/** One emulated upstream request, kept in the sandbox's own collection like a real provider's database. */
export interface SandboxRequestDoc {
  _id: string;
  endpoint: string;
  generation: Generation;
  behaviour: SandboxBehaviour;
  state: 'pending' | 'rendered' | 'render_failed' | 'cancelled';
  /** When the emulated processing time is over. */
  ready_at: Date;
  outputs: Array<{ media_id: string; content_type: string }>;
  error: string | null;
  /** Which process renders it, and until when that claim holds unless renewed (a restart lets it lapse). */
  render_owner: string | null;
  render_lease_until: Date | null;
  created_at: Date;
}

/** This process's claims on the requests it renders. */
export interface RenderClaims {
  /** This process as a claim's owner: a restarted service is someone else. */
  readonly owner: string;
  /** Until when a claim taken at `now` holds unless renewed. */
  leaseUntil(now: number): Date;
  /** Claims a pending request nobody holds (or whose lease lapsed); true when this process now renders it. */
  claim(request: SandboxRequestDoc): Promise<boolean>;
  /** Stops renewing the claims. */
  stopRenewing(): void;
  /** Hands the unfinished claims back, so the next process need not wait for their leases to lapse. */
  releaseAll(): Promise<void>;
}

/** Options of {@link createRenderClaims}. */
export interface RenderClaimsOptions {
  requests: Collection<SandboxRequestDoc>;
  clock: Clock;
  logger: Logger;
  /** How long a claim lasts without renewal (renewed every third of it while rendering). */
  leaseMs: number;
  /** Whether this process is rendering anything (nothing to renew otherwise). */
  rendering(): boolean;
}

/** Claims for this process, renewed every third of a lease while it renders. */
export function createRenderClaims(options: RenderClaimsOptions): RenderClaims {
  const { requests, clock, logger, leaseMs } = options;
  const owner = randomUUID();
  const leaseUntil = (now: number) => new Date(now + leaseMs);
  // One write renews every claim of this process, however many renders wait in its queue: a write per
  // queued request would compete with the API's own writes.
  const renewal = setInterval(() => {
    if (!options.rendering()) return;
    void requests
      .updateMany(
        { render_owner: owner, state: 'pending' },
        { $set: { render_lease_until: leaseUntil(clock.now()) } },
      )
      .catch((error: unknown) => logger.warn({ err: error }, 'sandbox render claims not renewed'));
  }, leaseMs / 3);
  renewal.unref();

  return {
    owner,
    leaseUntil,

    async claim(request) {
      const now = new Date(clock.now());
      const claimed = await requests.updateOne(
        {
          _id: request._id,
          state: 'pending',
          $or: [{ render_owner: null }, { render_lease_until: { $lt: now } }],
        },
        { $set: { render_owner: owner, render_lease_until: leaseUntil(now.getTime()) } },
      );
      return claimed.modifiedCount === 1;
    },

    stopRenewing() {
      clearInterval(renewal);
    },

    async releaseAll() {
      await requests
        .updateMany(
          { render_owner: owner, state: 'pending' },
          { $set: { render_owner: null, render_lease_until: null } },
        )
        .catch((error: unknown) => logger.warn({ err: error }, 'sandbox render claims not released'));
    },
  };
}
