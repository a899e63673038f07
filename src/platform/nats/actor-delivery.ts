import type { Logger } from 'pino';
import type { NatsConnection } from '@nats-io/transport-node';
import type { JsMsg } from '@nats-io/jetstream';
import { AppError } from '../core/errors.ts';
import { ActorUnavailableError } from '../core/actor-errors.ts';
import { decode, encode, errorReply } from '../core/actor-envelope.ts';
import type { ActorMessage, ActorReply, Dispatch, TransportKind } from '../core/actor-transport.ts';

/** The header naming the core-NATS subject the handler's reply goes to (absent for `tell`). */
export const REPLY_HEADER = 'Mf-Reply';

/** What travels on the actor stream: the actor's key and its message. */
export interface Envelope {
  key: string;
  message: ActorMessage;
}

/** What handling a delivered message works with. */
export interface DeliveryDeps {
  /** Where replies are published (core NATS). */
  connection: NatsConnection;
  logger: Logger;
  /** A message delivered more often than this is answered with an error and dropped (a poison pill). */
  maxDeliveries: number;
}

/**
 * Handles one delivered actor message: decoded (a malformed one is dropped), dispatched while a heartbeat
 * keeps it ours, acknowledged, and only then answered. A failed handler's message is terminated (never
 * redelivered) and answered with its error.
 */
export async function handleActorMessage(
  deps: DeliveryDeps,
  { kind, ackWaitMs }: TransportKind,
  msg: JsMsg,
  dispatch: Dispatch,
): Promise<void> {
  const { connection, logger, maxDeliveries } = deps;
  const replyTo = msg.headers?.get(REPLY_HEADER) || undefined;
  const answer = (reply: ActorReply) => {
    if (replyTo) connection.publish(replyTo, encode(reply));
  };
  let envelope: Envelope;
  try {
    envelope = decode<Envelope>(msg.data);
    if (typeof envelope.key !== 'string' || typeof envelope.message !== 'object' || !envelope.message) {
      throw new Error('malformed envelope');
    }
  } catch (error) {
    logger.error({ err: error, actor: kind, subject: msg.subject }, 'undecodable actor message dropped');
    msg.term();
    return answer(errorReply(new AppError('bad_request', 'Malformed actor message')));
  }
  if (msg.info.deliveryCount > maxDeliveries) {
    logger.error(
      { actor: kind, actor_key: envelope.key, deliveries: msg.info.deliveryCount },
      'poison actor message dropped',
    );
    msg.term();
    return answer(errorReply(new ActorUnavailableError()));
  }
  if (msg.info.redelivered) {
    // A node died or stalled holding it; handling it again is safe (op_id) and worth knowing about.
    logger.warn(
      { actor: kind, actor_key: envelope.key, deliveries: msg.info.deliveryCount },
      'actor message redelivered',
    );
  }
  // Tell JetStream the handler is alive, so a long handler is not taken for a dead node.
  const heartbeat = setInterval(() => msg.working(), Math.max(100, ackWaitMs / 3));
  let reply: ActorReply;
  try {
    reply = await dispatch(kind, envelope.key, envelope.message);
  } finally {
    clearInterval(heartbeat);
  }
  if (!reply.ok) {
    // Failed for good: answered, never redelivered. No reason text: nats-server 2.9 ignores `+TERM <reason>`
    // (2.10.4 added it), which would leave the message pending until ack_wait and stall the partition.
    msg.term();
    return answer(reply);
  }
  const acked = await msg.ackAck().catch(() => false);
  if (!acked) {
    // The message will come again and be answered then (idempotently); a reply now could be contradicted.
    return void logger.warn({ actor: kind, actor_key: envelope.key }, 'actor acknowledgement lost');
  }
  answer(reply);
}
