/** Handler outcomes for metrics: answered, answered with an error, or a transient failure that was retried. */
export type HandlerOutcome = 'ok' | 'error' | 'retry';

/** Where the runtime reports each handler run (the app adapts it to Prometheus metrics). */
export interface ActorMetrics {
  record(kind: string, command: string, outcome: HandlerOutcome, seconds: number): void;
}
