// The failures check of a chaos run: which of the load's requests failed, and whether each is
// explained by a disruption (a killed node's connection, a NATS node down, the end of a shutdown grace).
import type { ChaosLoad } from './chaos-load.ts';
import type { Figure } from './figures.ts';
import type { Disruption, RequestRecord } from './traffic.ts';

/** The longest 503 `unavailable` answers may go on after a NATS node goes down. */
export const NATS_UNAVAILABLE_LIMIT_MS = 10_000;

/** What a request of the load should be answered with. */
function expectedStatus(record: RequestRecord): boolean {
  switch (record.op) {
    case 'submit image':
    case 'submit video':
      return record.status === 202 || record.status === 201;
    case 'create user':
    case 'create key':
      return record.status === 201;
    default:
      return record.status === 200;
  }
}

/**
 * Failures: a request of the load failed (no answer, or an answer other than its success) only on a connection
 * of a service node incarnation that was killed (in flight when the kill came), or as 503 (the service's
 * `unavailable` code; its body carries a message, docs/errors.md) for a request sent within 10 s of a NATS node
 * going down. Failures on a gracefully stopped node's connections are allowed only for work still running when
 * its shutdown grace ended (docs/deploy.md, How a node stops: that ends as on a crashed node).
 */
export function checkFailures(load: ChaosLoad, options: { shutdownGraceMs: number }): Figure {
  const problems: string[] = [];
  const notes: string[] = [];
  const { requests, disruptions } = load.traffic;
  const mine = requests.filter((record) => record.actor !== 'check');
  const failed = mine.filter((record) => !expectedStatus(record));
  let onKilled = 0;
  let onStopped = 0;
  let natsUnavailable = 0;
  /** Per NATS outage: the 503s' send and answer times after the kill. */
  const outages = new Map<Disruption, { lastSent: number; lastAnswered: number; first: number }>();
  const nodeDisruption = (record: RequestRecord, kind: 'kill' | 'stop'): Disruption | undefined =>
    disruptions.find(
      (d) =>
        d.kind === kind &&
        d.target === record.node &&
        d.incarnation === record.incarnation &&
        record.endedAt >= d.at - 50,
    );
  for (const record of failed) {
    const killed = nodeDisruption(record, 'kill');
    if (killed) {
      onKilled++;
      notes.push(`on killed ${killed.target}: ${describe(record)}`);
      continue;
    }
    const natsDown = disruptions.find(
      (d) =>
        d.kind === 'nats-kill' &&
        record.endedAt >= d.at &&
        record.startedAt <= (d.backAt ?? Infinity) + NATS_UNAVAILABLE_LIMIT_MS,
    );
    if (record.status === 503 && natsDown) {
      natsUnavailable++;
      const outage = outages.get(natsDown) ?? { lastSent: 0, lastAnswered: 0, first: Infinity };
      outage.first = Math.min(outage.first, record.endedAt - natsDown.at);
      outage.lastSent = Math.max(outage.lastSent, record.startedAt - natsDown.at);
      outage.lastAnswered = Math.max(outage.lastAnswered, record.endedAt - natsDown.at);
      outages.set(natsDown, outage);
      if (record.startedAt - natsDown.at > NATS_UNAVAILABLE_LIMIT_MS)
        problems.push(
          `503 to a request sent ${record.startedAt - natsDown.at} ms after ${natsDown.target} went down: ${describe(record)}`,
        );
      else if (record.endedAt - natsDown.at > NATS_UNAVAILABLE_LIMIT_MS)
        notes.push(
          `503 answered ${record.endedAt - natsDown.at} ms after ${natsDown.target} went down (sent at ${record.startedAt - natsDown.at} ms): ${describe(record)}`,
        );
      continue;
    }
    const stopped = nodeDisruption(record, 'stop');
    if (stopped) {
      onStopped++;
      // What still runs when the grace is over ends as on a crashed node (docs/deploy.md): allowed then only.
      if (record.endedAt >= stopped.at + options.shutdownGraceMs - 500)
        notes.push(`cut at the end of the shutdown grace on ${stopped.target}: ${describe(record)}`);
      else problems.push(`failed on a gracefully stopped node within its grace: ${describe(record)}`);
      continue;
    }
    problems.push(`failed on a live node: ${describe(record)}`);
  }
  const ops = new Map<string, number>();
  for (const record of mine) ops.set(record.op, (ops.get(record.op) ?? 0) + 1);
  const mix = [...ops].map(([op, n]) => `${n} ${op}`).join(', ');
  const connections = new Set(mine.map((record) => record.connection).filter(Boolean)).size;
  const spans = [...outages]
    .map(
      ([d, o]) =>
        `${d.target} down ${(((d.backAt ?? d.at) - d.at) / 1000).toFixed(1)} s: 503s answered from +${o.first} to +${o.lastAnswered} ms after the kill, the last one sent at +${o.lastSent} ms`,
    )
    .join('; ');
  return {
    name: 'failures',
    line:
      `requests: ${mine.length} (${mix}) over ${connections} connections; ${failed.length} failed: ` +
      `${onKilled} on killed nodes' connections, ${natsUnavailable} 503 while a NATS node was down${spans ? ` (${spans})` : ''}, ` +
      `${onStopped} on gracefully stopped nodes, ${failed.length - onKilled - natsUnavailable - onStopped} elsewhere`,
    problems,
    notes,
  };
}

function describe(record: RequestRecord): string {
  const body =
    typeof record.body === 'string' ? record.body.slice(0, 160) : JSON.stringify(record.body)?.slice(0, 160);
  return `#${record.seq} ${record.actor} ${record.op} ${record.method} ${record.path} on ${record.node}#${record.incarnation} (${record.connection || 'no connection'}) ${new Date(record.startedAt).toISOString().slice(11, 23)}→${new Date(record.endedAt).toISOString().slice(11, 23)}: ${record.status ?? record.error} ${body ?? ''}`;
}
