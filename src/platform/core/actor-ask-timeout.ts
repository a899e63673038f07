/** Rejected `ask`: no reply within its time-out. The message may still be handled later (idempotently). */
export class AskTimeoutError extends Error {
  constructor(kind: string, key: string, timeoutMs: number) {
    super(`no reply from actor ${kind}/${key} within ${timeoutMs} ms`);
    this.name = 'AskTimeoutError';
  }
}
