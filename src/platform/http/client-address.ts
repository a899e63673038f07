import type { IncomingRequest } from './wire.ts';

/**
 * The client's address: the socket peer, or with TRUST_PROXY the right-most `X-Forwarded-For` entry — the
 * address our own proxy saw, which a client cannot forge by sending its own header.
 */
export function clientAddress(request: IncomingRequest, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = request.headers['x-forwarded-for'];
    const last = forwarded?.split(',').at(-1)?.trim();
    if (last) return last;
  }
  return request.remoteAddress;
}
