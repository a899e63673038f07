/** The open event streams (GET) of each session on this node. */
export interface SessionStreams {
  /**
   * A session's event stream, kept until it ends: the session's end or the node's drain closes it, so a
   * stopping node does not wait on streams that never end by themselves.
   */
  track(sessionId: string, response: Response, close: () => Promise<void>): Response;
  /** Closes the session's streams (it ended). */
  closeSession(sessionId: string): void;
  /** Closes every stream (the node is draining). */
  closeAll(): void;
}

/** Tracks each session's event streams by their closers. */
export function createSessionStreams(): SessionStreams {
  const streams = new Map<string, Set<() => Promise<void>>>();

  function closeSession(sessionId: string): void {
    for (const close of streams.get(sessionId) ?? []) void close().catch(() => undefined);
    streams.delete(sessionId);
  }

  return {
    track(sessionId, response, close) {
      if (response.status !== 200 || !response.body) return response;
      const open = streams.get(sessionId) ?? new Set();
      streams.set(sessionId, open);
      open.add(close);
      const forget = () => {
        open.delete(close);
        if (open.size === 0 && streams.get(sessionId) === open) streams.delete(sessionId);
      };
      const reader = response.body.getReader();
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await reader.read();
          if (done) {
            forget();
            controller.close();
          } else controller.enqueue(value);
        },
        cancel(reason) {
          forget();
          return reader.cancel(reason);
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    },

    closeSession,

    closeAll() {
      for (const sessionId of [...streams.keys()]) closeSession(sessionId);
    },
  };
}
