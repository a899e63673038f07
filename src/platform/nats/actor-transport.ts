import type { Logger } from 'pino';
import { createInbox, headers, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type ConsumerMessages } from '@nats-io/jetstream';
import { AskTimeoutError } from '../core/actor-ask-timeout.ts';
import { ActorUnavailableError } from '../core/actor-errors.ts';
import { decode, encode, errorReply } from '../core/actor-envelope.ts';
import { partitionOf } from '../core/actor-partition.ts';
import {
  type ActorMessage,
  type ActorReply,
  type ActorTransport,
  type Dispatch,
  type TransportKind,
} from '../core/actor-transport.ts';
import { ensureDurableConsumer, ensureWorkQueueStream } from './streams.ts';
import { handleActorMessage, REPLY_HEADER, type Envelope } from './actor-delivery.ts';

export const ACTOR_STREAM = 'MF_ACTORS';
const PULL_EXPIRES_MS = 5000;
const DEFAULT_START_CONCURRENCY = 64;

/** `mf.actor.<kind>.<partition>`: every message of one key lands on one subject, so on one consumer. */
export const actorSubject = (kind: string, partition: number) => `mf.actor.${kind}.${partition}`;
const consumerName = (kind: string, partition: number) => `mf_actor_${kind}_${partition}`;

export interface JetStreamTransportOptions {
  connection: NatsConnection;
  /** `ACTOR_PARTITIONS`: must be the same on every node (it fixes where each key's messages go). */
  partitions: number;
  /** `NATS_REPLICAS` of the stream. */
  replicas: number;
  logger: Logger;
  /** A message delivered more often than this is answered with an error and dropped (a poison pill). */
  maxDeliveries?: number;
  /** How many partitions' consumers are created and started at once (JetStream API requests in flight). */
  startConcurrency?: number;
}

/**
 * Actors over JetStream (docs/architecture.md, "Actors"): stream `MF_ACTORS`, one durable pull consumer per
 * kind and partition with `max_ack_pending: 1` and the kind's `ack_wait` (its `ackWaitMs` setting), so each
 * partition is handled strictly in order by exactly one node at a time, whichever nodes are running. Replies
 * travel on core NATS to the subject in the `Mf-Reply` header.
 *
 * Acknowledgement comes before the reply: a caller that got an answer knows the message will not be handled
 * again; a node that dies between handling and acknowledging leaves the message to be redelivered after
 * `ack_wait`, and handlers are idempotent by `op_id`. Failing handlers are retried inside the dispatcher,
 * never with a delayed `nak`, which would stall every key of the partition.
 */
export function createJetStreamTransport(options: JetStreamTransportOptions): ActorTransport {
  const { connection, partitions, logger } = options;
  const maxDeliveries = options.maxDeliveries ?? 10;
  const startConcurrency = options.startConcurrency ?? DEFAULT_START_CONCURRENCY;
  const js = jetstream(connection);
  const inbox = createInbox();
  const pending = new Map<string, { resolve(reply: ActorReply): void }>();
  let replies: Subscription | undefined;
  let sequence = 0;
  const consumers: ConsumerMessages[] = [];
  const loops: Promise<void>[] = [];

  function listenForReplies() {
    replies ??= connection.subscribe(`${inbox}.*`, {
      callback: (error, msg) => {
        if (error) return void logger.error({ err: error }, 'actor reply subscription failed');
        const waiter = pending.get(msg.subject.slice(inbox.length + 1));
        if (!waiter) return; // the caller gave up (time-out) — the handler's work stands regardless
        try {
          waiter.resolve(decode<ActorReply>(msg.data));
        } catch (decodeError) {
          waiter.resolve(errorReply(decodeError));
        }
      },
    });
  }

  async function publish(kind: string, key: string, message: ActorMessage, replyTo?: string) {
    const partition = partitionOf(key, partitions);
    const hdrs = headers();
    if (replyTo) hdrs.set(REPLY_HEADER, replyTo);
    try {
      // The message id lets JetStream drop a duplicate if the client re-sends after a lost acknowledgement.
      await js.publish(actorSubject(kind, partition), encode({ key, message } satisfies Envelope), {
        headers: hdrs,
        msgID: replyTo ?? `${inbox}.t${++sequence}`,
      });
    } catch (error) {
      logger.error({ err: error, actor: kind, actor_key: key }, 'could not publish actor message');
      throw new ActorUnavailableError();
    }
  }

  /** Pulls one partition's messages, one at a time, for as long as the transport runs. */
  async function consume(kind: TransportKind, partition: number, dispatch: Dispatch) {
    const consumer = await js.consumers.get(ACTOR_STREAM, consumerName(kind.kind, partition));
    // Short pull expiry: nats-server 2.9 keeps a dead node's waiting pulls until they expire and may hand a
    // redelivered message to one of them, costing another ack_wait.
    const messages = await consumer.consume({ max_messages: 1, expires: PULL_EXPIRES_MS });
    consumers.push(messages);
    loops.push(
      (async () => {
        for await (const msg of messages) {
          try {
            await handleActorMessage({ connection, logger, maxDeliveries }, kind, msg, dispatch);
          } catch (error) {
            logger.error({ err: error, actor: kind.kind, partition }, 'actor message handling failed');
          }
        }
      })(),
    );
  }

  return {
    async start(kinds, dispatch) {
      const jsm = await jetstreamManager(connection);
      await ensureWorkQueueStream(
        jsm,
        {
          name: ACTOR_STREAM,
          subjects: ['mf.actor.>'],
          replicas: options.replicas,
          duplicateWindowMs: 120_000,
        },
        logger,
      );
      // Every kind × partition at once (bounded): each is a few JetStream API round trips of its own.
      const tasks = kinds.flatMap((kind) =>
        Array.from({ length: partitions }, (_, partition) => async () => {
          await ensureDurableConsumer(jsm, ACTOR_STREAM, {
            name: consumerName(kind.kind, partition),
            filterSubject: actorSubject(kind.kind, partition),
            maxAckPending: 1, // strict order per partition across every node
            ackWaitMs: kind.ackWaitMs,
          });
          await consume(kind, partition, dispatch);
        }),
      );
      await inParallel(tasks, startConcurrency);
    },
    ask(kind, key, message, timeoutMs) {
      listenForReplies();
      const id = `${++sequence}`;
      return new Promise<ActorReply>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new AskTimeoutError(kind, key, timeoutMs));
        }, timeoutMs);
        pending.set(id, {
          resolve: (reply) => {
            clearTimeout(timer);
            pending.delete(id);
            resolve(reply);
          },
        });
        publish(kind, key, message, `${inbox}.${id}`).catch((error: unknown) => {
          clearTimeout(timer);
          pending.delete(id);
          reject(error);
        });
      });
    },
    tell: (kind, key, message) => publish(kind, key, message),
    async close() {
      for (const messages of consumers) await messages.close();
      await Promise.allSettled(loops);
      replies?.unsubscribe();
    },
  };
}

/** Runs the tasks with at most `limit` at a time; rejects with the first failure once the running ones end. */
async function inParallel(tasks: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (!failure && next < tasks.length) {
      const task = tasks[next++]!;
      try {
        await task();
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, tasks.length)) }, worker));
  if (failure) throw failure.error;
}
