/** A POST through the egress guard (the platform's guardedPost): any status comes back; refusals throw. */
export type WebhookPost = (
  url: string,
  body: string,
  headers: Record<string, string>,
  options: { allowPrivate: boolean; timeoutMs: number; maxBytes: number; userAgent: string },
) => Promise<{ status: number }>;
