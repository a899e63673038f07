import type { MongoCompat } from '../platform/index.ts';
import { MongoServerError, type Db } from 'mongodb';
import type { WebhookDeliveriesRepository, WebhookDelivery } from './ports/webhook-deliveries-repository.ts';

type DeliveryDoc = Omit<WebhookDelivery, 'id'> & { _id: string; attempt_count: number };

const toDelivery = ({ _id, attempt_count: _count, ...rest }: DeliveryDoc): WebhookDelivery => ({
  id: _id,
  ...rest,
});
const DUPLICATE_KEY = 11000;

/**
 * Deliveries in `webhook_deliveries`: the queue of single-node mode and the record of every mode (the admin
 * deliveries route). An attempt is recorded by a conditional update on the attempt count it saw, so two
 * runs of the same attempt (a redelivery after a node died) record it once: MongoDB applies such an update
 * atomically. jongodb does not across connections; the wiring wraps this repository for it
 * (`webhookDeliveriesOnServer`).
 */
export async function createMongoWebhookDeliveries(db: Db): Promise<WebhookDeliveriesRepository> {
  const deliveries = db.collection<DeliveryDoc>('webhook_deliveries');
  await deliveries.createIndexes([
    { key: { key_id: 1, created_at: -1 }, name: 'by_key_newest' },
    { key: { state: 1, next_attempt_at: 1 }, name: 'by_state_due' },
    { key: { created_at: 1 }, name: 'by_age' },
    // One delivery per job and key: the id derived from the job's says so too, the index makes it a rule.
    { key: { job_id: 1, key_id: 1 }, name: 'one_per_job_key', unique: true },
  ]);

  return {
    async insert(delivery) {
      const { id, ...rest } = delivery;
      try {
        await deliveries.insertOne({ _id: id, ...rest, attempt_count: delivery.attempts.length });
        return true;
      } catch (error) {
        if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) return false;
        throw error;
      }
    },
    async get(id) {
      const doc = await deliveries.findOne({ _id: id });
      return doc ? toDelivery(doc) : null;
    },
    async recordAttempt(delivery, attempt, state, nextAttemptAt) {
      const updated = await deliveries.updateOne(
        { _id: delivery.id, state: 'pending', attempt_count: delivery.attempts.length },
        {
          $set: {
            state,
            attempts: [...delivery.attempts, attempt],
            attempt_count: delivery.attempts.length + 1,
            next_attempt_at: nextAttemptAt,
            updated_at: attempt.at,
          },
        },
      );
      return updated.modifiedCount === 1;
    },
    async dropPending(keyId, now) {
      const dropped = await deliveries.updateMany(
        { key_id: keyId, state: 'pending' },
        { $set: { state: 'dropped', next_attempt_at: null, updated_at: now } },
      );
      return dropped.modifiedCount;
    },
    async listForKey(keyId, limit) {
      const docs = await deliveries
        .find({ key_id: keyId })
        .sort({ created_at: -1, _id: -1 })
        .limit(limit)
        .toArray();
      return docs.map(toDelivery);
    },
    async pendingDueBefore(before, limit) {
      const docs = await deliveries
        .find({ state: 'pending', next_attempt_at: { $lt: before } })
        .sort({ next_attempt_at: 1 })
        .limit(limit)
        .toArray();
      return docs.map(toDelivery);
    },
    async deleteCreatedBefore(before) {
      const removed = await deliveries.deleteMany({ created_at: { $lt: before } });
      return removed.deletedCount;
    },
  };
}

/** The webhook deliveries repository as the service wires it: attempts made safe per delivery where needed. */
export const webhookDeliveriesOnServer = (
  compat: MongoCompat,
  deliveries: WebhookDeliveriesRepository,
): WebhookDeliveriesRepository => compat.serialised(deliveries, ['recordAttempt'], (delivery) => delivery.id);
