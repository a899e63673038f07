import type { Unsubscribe } from './event-bus.ts';

// How one slice tells others that something happened to what it owns (a job ended), without knowing who
// listens: the app creates one channel per event map and hands it to the slices that publish or subscribe.

/** Event names and their payloads (a slice exports its own, e.g. the jobs slice's `JobEvents`). */
export type DomainEventMap = Record<string, unknown>;

/**
 * One subscriber. A handler whose work must not be lost returns a promise that settles once it is done, and
 * rejects to say it is not (the publisher may then tell it again: the jobs outbox does).
 */
export type DomainEventHandler<Payload> = (payload: Payload) => void | Promise<void>;

/** Where a channel reports its handlers' failures (a pino logger fits). */
export interface DomainEventsLog {
  warn(fields: object, message: string): void;
  debug(fields: object, message: string): void;
}

/**
 * Thrown (or rejected with) by a handler that cannot handle the event yet and wants it again later: another
 * part of the system is about to do the work, or must first let go of it. Not a failure: logged at debug.
 */
export class NotHandledYet extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'NotHandledYet';
  }
}

/** A typed in-process publish/subscribe channel of domain events (within one process, never across nodes). */
export interface DomainEvents<Events extends DomainEventMap> {
  /**
   * Calls every handler of `name` with `payload` (all at once, each on its own) and resolves once all have
   * settled: true when every one succeeded. Never rejects: a handler's failure is logged and touches neither
   * the publisher nor the other handlers. Handlers get the payload itself, not a copy: they must not change it.
   */
  publish<Name extends keyof Events & string>(name: Name, payload: Events[Name]): Promise<boolean>;
  /** Calls `handler` for each later `publish` of `name`. */
  subscribe<Name extends keyof Events & string>(
    name: Name,
    handler: DomainEventHandler<Events[Name]>,
  ): Unsubscribe;
}

/** A channel for the events of `Events`. */
export function createDomainEvents<Events extends DomainEventMap>(options: {
  log: DomainEventsLog;
}): DomainEvents<Events> {
  const handlers = new Map<string, Set<DomainEventHandler<never>>>();

  async function settle(name: string, handler: DomainEventHandler<unknown>, payload: unknown) {
    try {
      await handler(payload);
      return true;
    } catch (error) {
      if (error instanceof NotHandledYet) {
        options.log.debug({ event: name, reason: error.message }, 'domain event not handled yet');
      } else {
        options.log.warn({ err: error, event: name }, 'domain event handler failed');
      }
      return false;
    }
  }

  return {
    async publish(name, payload) {
      // A copy: a handler that unsubscribes (or subscribes) while called changes only later publishes.
      const called = [...(handlers.get(name) ?? [])] as DomainEventHandler<unknown>[];
      const outcomes = await Promise.all(called.map((handler) => settle(name, handler, payload)));
      return outcomes.every(Boolean);
    },
    subscribe(name, handler) {
      // A wrapper per subscription, so one function subscribed twice is two subscriptions.
      const subscription: DomainEventHandler<never> = (payload) => handler(payload);
      let set = handlers.get(name);
      if (!set) handlers.set(name, (set = new Set()));
      set.add(subscription);
      return () => {
        set.delete(subscription);
        if (set.size === 0 && handlers.get(name) === set) handlers.delete(name);
      };
    },
  };
}
