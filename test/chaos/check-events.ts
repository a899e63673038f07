// The events check of a chaos run: each WebSocket client, across its reconnections with `since=`,
// received every event of its project once and in seq order, the same as a fresh replay from seq 0.
import type { MongoClient } from 'mongodb';
import type { ChaosLoad } from './chaos-load.ts';
import { headSeqs } from './check-reads.ts';
import { EventsClient } from './events-client.ts';
import type { Figure } from './figures.ts';

/**
 * Events: each client's events, over all its connections, are the project's full list (seq 1..head) in seq
 * order without a gap or a duplicate, equal to what a fresh socket with `since=0` replays at the end.
 */
export async function checkEvents(load: ChaosLoad, mongo: MongoClient): Promise<Figure> {
  const problems: string[] = [];
  const notes: string[] = [];
  const heads = await headSeqs(load, mongo);
  let clients = 0;
  let events = 0;
  let reconnections = 0;
  const closeCodes = new Map<number, number>();
  let replayed = 0;
  for (const project of load.allProjects()) {
    const head = heads.get(project.id) ?? 0;
    const reference = new EventsClient(
      `${project.id}/reference`,
      project.id,
      project.user.token,
      load.traffic,
    );
    await reference.open(load.traffic.pick(), 0);
    await reference.caughtUp(head, 15_000);
    await reference.close();
    const list = reference.events;
    replayed += list.length;
    const refSeqs = list.map((event) => event.seq);
    if (list.length !== head || refSeqs.some((seq, i) => seq !== i + 1))
      problems.push(
        `${project.id}: the since=0 replay has ${list.length} events for head ${head} (${gapOf(refSeqs)})`,
      );
    for (const failed of list.filter((event) => event.type === 'turn.failed')) {
      const ts = Date.parse(failed.ts);
      const kill = load.traffic.disruptions.filter((d) => d.at <= ts).at(-1);
      notes.push(
        `turn.failed (${JSON.stringify(failed.data)}) in ${project.id}` +
          (kill ? `, ${ts - kill.at} ms after ${kill.kind} ${kill.target}` : ''),
      );
    }
    const bySeq = new Map(list.map((event) => [event.seq, JSON.stringify(event)]));
    for (const client of project.clients) {
      clients++;
      const got = client.events;
      events += got.length;
      reconnections += client.reconnections;
      for (const connection of client.connections) {
        if (connection.closeCode !== undefined)
          closeCodes.set(connection.closeCode, (closeCodes.get(connection.closeCode) ?? 0) + 1);
      }
      const seqs = got.map((event) => event.seq);
      if (got.some((event) => event.type === 'sync.reset')) problems.push(`${client.label}: got sync.reset`);
      if (seqs.length !== head || seqs.some((seq, i) => seq !== i + 1)) {
        problems.push(
          `${client.label}: ${seqs.length} events for head ${head}: ${gapOf(seqs)}; ${connectionsOf(client)}`,
        );
        continue;
      }
      const differing = got.filter((event) => bySeq.get(event.seq) !== JSON.stringify(event));
      if (differing.length > 0)
        problems.push(
          `${client.label}: ${differing.length} events differ from the replay, first ${JSON.stringify(differing[0])}`,
        );
    }
  }
  const codes = [...closeCodes].map(([code, n]) => `${n}×${code}`).join(', ') || 'none';
  return {
    name: 'events',
    line:
      `events: ${clients} clients on ${load.allProjects().length} projects received ${events} events ` +
      `(the since=0 replays: ${replayed}); ${reconnections} reconnections with since= (closes: ${codes}); ` +
      `${problems.length === 0 ? 'every client has every event once, in seq order' : `${problems.length} clients with a gap, duplicate or difference`}`,
    problems,
    notes,
  };
}

/** Where a seq list first departs from 1, 2, 3, … */
function gapOf(seqs: number[]): string {
  const at = seqs.findIndex((seq, i) => seq !== i + 1);
  if (at < 0) return 'in order';
  return `at index ${at}: …${seqs.slice(Math.max(0, at - 3), at + 3).join(',')}…`;
}

function connectionsOf(client: EventsClient): string {
  return client.connections
    .map(
      (c) =>
        `${c.node}#${c.incarnation} since=${c.since} got ${c.events.length} [${c.events[0]?.seq ?? '-'}..${c.events.at(-1)?.seq ?? '-'}] close ${c.closeCode ?? 'open'}`,
    )
    .join(' | ');
}
