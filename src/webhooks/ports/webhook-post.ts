/** Sends one webhook attempt through the egress guard (adapter: adapters/net guardedPost). */
/** A POST through the egress guard (adapters/net guardedPost): any status comes back; refusals throw. */
export type WebhookPost = (
  url: string,
  body: string,
  headers: Record<string, string>,
  options: { allowPrivate: boolean; timeoutMs: number; maxBytes: number; userAgent: string },
) => Promise<{ status: number }>;
