import type { ActorMetrics } from '../core/actor-metrics.ts';
import type { MetricsRegistry } from './metrics.ts';

/**
 * `mf_actor_messages_total{kind,command,outcome}` (outcome: ok, error, retry) and
 * `mf_actor_handler_duration_seconds{kind,command}`, fed by the actor dispatcher on the node that handles.
 */
export function actorMetrics(registry: MetricsRegistry): ActorMetrics {
  const messages = registry.counter({
    name: 'mf_actor_messages_total',
    help: 'Actor handler runs on this node, by actor kind, command and outcome (ok, error, retry).',
    labels: ['kind', 'command', 'outcome'],
  });
  const duration = registry.histogram({
    name: 'mf_actor_handler_duration_seconds',
    help: 'Actor handler run time on this node, by actor kind and command.',
    labels: ['kind', 'command'],
  });
  return {
    record(kind, command, outcome, seconds) {
      messages.inc([kind, command, outcome]);
      duration.observe([kind, command], seconds);
    },
  };
}
