import { createHmac } from 'node:crypto';

/**
 * `X-Svc-Signature` (docs/webhooks.md, Signature): `t=<ts>,v1=<hex>`, `<hex>` being the lowercase hex
 * HMAC-SHA256 of `"<ts>.<raw body>"` keyed with the key's signing secret. `timestamp` is Unix seconds; the
 * body is signed as the exact bytes sent.
 */
export function webhookSignature(secret: string, timestamp: number, body: string): string {
  const v1 = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return `t=${timestamp},v1=${v1}`;
}
