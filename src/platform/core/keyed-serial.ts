/** Runs tasks one at a time per key, in arrival order; different keys run concurrently. */
export interface KeyedSerial {
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
  /** Keys with queued or running work (idle keys are forgotten). */
  readonly activeKeys: number;
}

/**
 * Per-key promise chains: the in-process way to give each key an ordered mailbox (docs/architecture.md,
 * Actors). A failing task fails only its own caller; the next task of the key still runs.
 */
export function createKeyedSerial(): KeyedSerial {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run(key, task) {
      const previous = tails.get(key) ?? Promise.resolve();
      const result = previous.then(task, task);
      const tail = result.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
    get activeKeys() {
      return tails.size;
    },
  };
}
