// How events leave the actors (docs/architecture.md, Actors): a handler emits, subscribers on any node hear.

/** Stops one subscription; calling it again does nothing. */
export type Unsubscribe = () => void;

/**
 * Publish/subscribe by topic (port). Topics are dot-separated tokens, `<kind>.<key>` for an actor's events
 * (`project.<project id>`; over NATS, subject `mf.events.project.<project id>`). Events are JSON values: a
 * subscriber gets a copy, as it would from another node. Delivery is at most once per subscriber and in
 * publish order per topic; subscribers are not told of events published before they subscribed.
 */
export interface EventBus {
  /** Resolves once the event is handed to the bus (not when subscribers have seen it). */
  publish(topic: string, event: unknown): Promise<void>;
  /** Calls `onEvent` for each event later published on `topic`. */
  subscribe(topic: string, onEvent: (event: unknown, topic: string) => void): Unsubscribe;
}
