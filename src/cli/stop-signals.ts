// What a stop signal does to a running service (docs/operator.md, "Health and shutdown"). The first SIGTERM or
// SIGINT starts the drain. Signals often come in pairs: `npm start` forwards SIGTERM and SIGINT to the service,
// so a signal to the whole process group (`kill -- -<pgid>`, a process manager stopping the group, Ctrl-C in a
// terminal) reaches the service twice. Hence a later SIGTERM never cuts the drain short, and a SIGINT ends the
// process at once only when it is a second press: one that follows the first SIGINT within `echoWindowMs` is
// that same press, forwarded.

export type StopSignal = 'SIGTERM' | 'SIGINT';

/** What to do with a stop signal: start draining, ignore it (a log line says why), or exit at once. */
export type StopDecision = 'drain' | 'ignore' | 'ignore-echo' | 'exit-now';

/** How long after a SIGINT another one is taken for the copy `npm` forwards (measured: under 25 ms). */
export const SIGINT_ECHO_WINDOW_MS = 500;

/** The decisions for one process's stop signals, in the order they arrive. */
export function createStopSignalPolicy(
  options: { echoWindowMs?: number; now?: () => number } = {},
): (signal: StopSignal) => StopDecision {
  const echoWindowMs = options.echoWindowMs ?? SIGINT_ECHO_WINDOW_MS;
  const now = options.now ?? (() => performance.now());
  let draining = false;
  let firstInterruptAt: number | undefined;
  return (signal) => {
    const at = now();
    if (!draining) {
      draining = true;
      if (signal === 'SIGINT') firstInterruptAt = at;
      return 'drain';
    }
    if (signal === 'SIGTERM') return 'ignore';
    const echo = firstInterruptAt !== undefined && at - firstInterruptAt < echoWindowMs;
    return echo ? 'ignore-echo' : 'exit-now';
  };
}
