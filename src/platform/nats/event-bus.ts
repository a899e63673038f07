import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { EventBus } from '../core/event-bus.ts';

/** The NATS subject of an event-bus topic (`mf.events.project.<project id>`: docs/architecture.md). */
export const eventSubject = (topic: string) => `mf.events.${topic}`;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The cluster's event bus over core NATS: a topic is the subject `mf.events.<topic>`, so an event published on
 * any node reaches the subscribers of every node. One NATS subscription per topic per node, however many local
 * subscribers it has (the WebSocket front subscribes once per watched project), dropped with the last one.
 * Delivery is at most once, in publish order per topic from one publisher (the project's actor): a subscriber
 * that missed events catches up from the history, as the port says.
 */
export function createNatsEventBus(options: { connection: NatsConnection; logger: Logger }): EventBus {
  const { connection, logger } = options;
  const topics = new Map<string, { subscription: Subscription; listeners: Set<(event: unknown) => void> }>();

  function open(topic: string) {
    const listeners = new Set<(event: unknown) => void>();
    const subscription = connection.subscribe(eventSubject(topic), {
      callback: (error, message) => {
        if (error) return logger.warn({ err: error, topic }, 'event subscription failed');
        let event: unknown;
        try {
          event = JSON.parse(decoder.decode(message.data));
        } catch (parseError) {
          return logger.warn({ err: parseError, topic }, 'unreadable event dropped');
        }
        for (const listener of [...listeners]) {
          try {
            // Each listener its own copy, as the in-process bus gives (a listener may change what it got).
            listener(listeners.size > 1 ? structuredClone(event) : event);
          } catch (listenerError) {
            logger.error({ err: listenerError, topic }, 'event subscriber failed');
          }
        }
      },
    });
    const entry = { subscription, listeners };
    topics.set(topic, entry);
    return entry;
  }

  return {
    async publish(topic, event) {
      connection.publish(eventSubject(topic), encoder.encode(JSON.stringify(event ?? null)));
    },
    subscribe(topic, onEvent) {
      const entry = topics.get(topic) ?? open(topic);
      const listener = (event: unknown) => onEvent(event, topic);
      entry.listeners.add(listener);
      let active = true;
      return () => {
        if (!active) return;
        active = false;
        entry.listeners.delete(listener);
        if (entry.listeners.size === 0 && topics.get(topic) === entry) {
          topics.delete(topic);
          entry.subscription.unsubscribe();
        }
      };
    },
  };
}
