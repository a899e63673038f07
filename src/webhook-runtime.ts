import type { NatsConnection } from '@nats-io/transport-node';
import { createJetStreamWorkQueue } from './adapters/nats/work-queue.ts';
import { createWebhooks, type Webhooks, type WebhooksDeps } from './services/webhooks.ts';
import { createInProcessScheduler } from './services/work-scheduler.ts';

/**
 * Webhook attempts one node runs at once (cluster mode). Attempts mostly wait on the network, so this is
 * high: 50 endpoints hanging until WEBHOOK_TIMEOUT_MS must not hold a healthy endpoint's delivery back.
 */
const WEBHOOK_ATTEMPTS_PER_NODE = 512;
/** Deliveries waiting for an attempt at once, cluster-wide (delayed naks stay pending until redelivered). */
const MAX_PENDING_WEBHOOKS = 1_000_000;
/** A node that died mid-attempt hands it over after this (at least twice an attempt's time-out). */
const MIN_ACK_WAIT_MS = 30_000;

/**
 * The webhook service with what times its attempts: the `MF_WEBHOOKS` work queue shared by every node when
 * NATS is given (cluster mode), one timer per delivery otherwise (a restart resumes them from MongoDB).
 */
export async function startWebhookRuntime(
  deps: Omit<WebhooksDeps, 'schedule'> & { nats?: NatsConnection; natsReplicas: number },
): Promise<{ webhooks: Webhooks; close(): Promise<void> }> {
  const { nats, natsReplicas, ...webhookDeps } = deps;
  const webhooks = createWebhooks({
    ...webhookDeps,
    schedule: (id, delayMs) => queue.schedule(id, delayMs), // called only once the queue exists
  });
  const work = (id: string) => webhooks.attempt(id);
  const retryAfterErrorMs = deps.retryDelaysMs[0] ?? 30_000;
  const queue = nats
    ? await createJetStreamWorkQueue({
        connection: nats,
        stream: 'MF_WEBHOOKS',
        subject: 'mf.webhooks.attempt',
        consumer: 'mf_webhook_senders',
        work,
        retryAfterErrorMs,
        // The longest a delivery can be pending: every retry delay and every attempt's time-out.
        itemLifetimeMs:
          deps.retryDelaysMs.reduce((sum, delay) => sum + delay, 0) +
          (deps.retryDelaysMs.length + 1) * deps.timeoutMs,
        maxPending: MAX_PENDING_WEBHOOKS,
        replicas: natsReplicas,
        ackWaitMs: Math.max(MIN_ACK_WAIT_MS, 2 * deps.timeoutMs),
        concurrency: WEBHOOK_ATTEMPTS_PER_NODE,
        logger: deps.logger,
      })
    : createInProcessScheduler({ work, retryAfterErrorMs, label: 'webhook attempt', logger: deps.logger });
  return { webhooks, close: async () => queue.close() };
}
