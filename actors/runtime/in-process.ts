import {
  createKeyedSerial,
  ActorUnavailableError,
  type Dispatch,
  decode,
  encode,
  errorReply,
  type ActorMessage,
  type ActorReply,
  AskTimeoutError,
  type ActorTransport,
} from '../../src/platform/core/index.ts';

/**
 * The single-node transport: one ordered mailbox (a promise chain) per actor key. Messages and replies go
 * through the same JSON encoding as on JetStream, so handlers see, and callers get, exactly the same shapes.
 */
export function createInProcessTransport(): ActorTransport {
  const mailboxes = createKeyedSerial();
  let dispatch: Dispatch | undefined;
  const running = new Set<Promise<unknown>>();
  let closed = false;

  function enqueue(kind: string, key: string, message: ActorMessage): Promise<ActorReply> {
    if (closed) {
      return Promise.resolve(errorReply(new ActorUnavailableError()));
    }
    if (!dispatch) throw new Error(`no handler started for actor kind ${kind}`);
    const handle = dispatch;
    const wire = encode(message);
    const done = mailboxes.run(`${kind}\u0000${key}`, async () =>
      decode<ActorReply>(encode(await handle(kind, key, decode<ActorMessage>(wire)))),
    );
    running.add(done);
    void done.finally(() => running.delete(done));
    return done;
  }

  return {
    async start(_kinds, handler) {
      dispatch = handler;
    },
    ask(kind, key, message, timeoutMs) {
      const reply = enqueue(kind, key, message);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new AskTimeoutError(kind, key, timeoutMs)), timeoutMs);
      });
      return Promise.race([reply, timeout]).finally(() => clearTimeout(timer));
    },
    async tell(kind, key, message) {
      void enqueue(kind, key, message);
    },
    async close() {
      closed = true;
      await Promise.allSettled([...running]);
    },
  };
}
