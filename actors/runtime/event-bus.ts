import type { Logger } from 'pino';
import { type EventBus, decode, encode } from '../../src/platform/core/index.ts';

/**
 * The single-node event bus: subscribers of a topic are called synchronously, in subscription order, each with
 * its own JSON copy of the event (the shape a subscriber on another node would get). A subscriber that throws
 * is logged and skipped; the publisher and the other subscribers carry on.
 */
export function createInProcessEventBus(options: { logger?: Logger } = {}): EventBus {
  const topics = new Map<string, Set<(event: unknown, topic: string) => void>>();
  return {
    async publish(topic, event) {
      const subscribers = topics.get(topic);
      if (!subscribers?.size) return;
      const wire = encode(event ?? null);
      for (const onEvent of [...subscribers]) {
        try {
          onEvent(decode(wire), topic);
        } catch (error) {
          options.logger?.error({ err: error, topic }, 'event subscriber failed');
        }
      }
    },
    subscribe(topic, onEvent) {
      // A wrapper per subscription, so one function subscribed twice is two subscriptions.
      const subscription = (event: unknown, at: string) => onEvent(event, at);
      let subscribers = topics.get(topic);
      if (!subscribers) topics.set(topic, (subscribers = new Set()));
      subscribers.add(subscription);
      return () => {
        subscribers.delete(subscription);
        if (subscribers.size === 0 && topics.get(topic) === subscribers) topics.delete(topic);
      };
    },
  };
}
