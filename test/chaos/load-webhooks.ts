// The chaos load's webhook receiver: it records every delivery request it saw (delivery id, job,
// event, whether the signature verifies, what it answered), and can answer 500 first to keep deliveries in
// their retry delay.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  startWebhookReceiver,
  type ReceivedRequest,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.ts';

/** One webhook request as the load's receiver saw it. */
export interface DeliverySeen {
  deliveryId: string;
  jobId: string;
  event: string;
  /** Date.now() at arrival. */
  at: number;
  /** The status we answered (after `answerDelayMs`), or null when the sender went away first. */
  answered: number | null;
  signatureOk: boolean;
  /** The sender's TCP port (which process sent it: `senderOf`). */
  remotePort: number;
}

/**
 * The webhook receiver of a load: answers 500 to the first request of every delivery id when `failFirst`
 * (so deliveries sit in their retry delay), 200 (after `answerDelayMs`, so attempts are in flight a while)
 * to everything else. Records every request by delivery id.
 */
export class LoadWebhooks {
  readonly seen: DeliverySeen[] = [];
  readonly secrets = new Map<string, string>();
  failFirst = false;

  private constructor(
    readonly receiver: WebhookReceiver,
    public answerDelayMs: number,
  ) {}

  /** The answer delay can change while running (longer: attempts stay in flight longer). */
  static async start(answerDelayMs = 150): Promise<LoadWebhooks> {
    const holder: { self?: LoadWebhooks } = {};
    const receiver = await startWebhookReceiver(
      (req) => (_raw, res: ServerResponse) => holder.self!.answer(req, res),
    );
    holder.self = new LoadWebhooks(receiver, answerDelayMs);
    return holder.self;
  }

  get url(): string {
    return this.receiver.url;
  }

  private answer(req: ReceivedRequest, res: ServerResponse): void {
    const deliveryId = String(req.headers['x-svc-delivery-id'] ?? '');
    let jobId = '';
    try {
      jobId = String((JSON.parse(req.body.toString('utf8')) as { job_id?: string }).job_id ?? '');
    } catch {
      /* recorded with an empty job id: the invariant reports it */
    }
    const earlier = this.seen.some((one) => one.deliveryId === deliveryId);
    const seen: DeliverySeen = {
      deliveryId,
      jobId,
      event: String(req.headers['x-svc-event'] ?? ''),
      at: req.wallAt,
      answered: null,
      signatureOk: [...this.secrets.values()].some((secret) => signed(req, secret)),
      remotePort: res.socket?.remotePort ?? 0,
    };
    this.seen.push(seen);
    const status = this.failFirst && !earlier ? 500 : 200;
    // A sender killed mid-attempt shows as the end (FIN) or close of its connection: not answered then.
    const socket = res.socket;
    let gone = false;
    const leave = () => (gone = true);
    socket?.once('end', leave);
    socket?.once('close', leave);
    setTimeout(() => {
      socket?.off('end', leave);
      socket?.off('close', leave);
      if (gone || res.destroyed || res.writableEnded) return;
      seen.answered = status;
      res.writeHead(status, { 'content-length': '0' });
      res.end();
    }, this.answerDelayMs);
  }

  close(): Promise<void> {
    return this.receiver.close();
  }
}

/** Our own check of the signature (docs/webhooks.md, Signature) from the raw body bytes. */
function signed(req: ReceivedRequest, secret: string): boolean {
  const timestamp = String(req.headers['x-svc-timestamp'] ?? '');
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(req.headers['x-svc-signature'] ?? ''));
  if (!match || match[1] !== timestamp) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(req.body).digest();
  const given = Buffer.from(match[2]!, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
