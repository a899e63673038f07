// Chaos on a local cluster (docs/deploy.md): 3 NATS nodes with JetStream, one jongodb
// and 3 service nodes from deploy/local/cluster.sh, under a steady, bounded mixed load (chaos-load.ts: jobs with
// signed webhooks, admin credit grants, agent turns with events WebSocket clients, exports, reads):
//   (a) `kill -9` of a service node during a turn, during an export, and during webhook retries, each started
//       again;
//   (b) one NATS node killed and started again;
//   (c) a rolling restart (SIGTERM, graceful, then start) of the three service nodes one after the other.
// After each, the invariants (check-*.ts) run and print their figures: the ledger holds every
// acknowledged credit operation once and balances add up; every job is terminal with one delivery id (a
// repeated attempt only where a node died mid-attempt); every events client has every event once, in order;
// requests failed only on a killed node's connections or as 503 `unavailable` ≤ 10 s while a NATS node was
// down; no ffmpeg child and no turn lease is left behind. "503 for at most 10 s" is read as: no request sent
// more than 10 s after the NATS node went down is answered 503 (a request already waiting may be answered a
// little later; the figures show when).
//
// jongodb, the test MongoDB server, does not apply conditional updates atomically across connections (here:
// across nodes), so the guards that make the ledger's commit and the job and delivery moves happen once on
// MongoDB prove nothing here; check-ledger.ts and check-jobs.ts check instead that the actors serialised them
// (each user's ledger one unbroken chain of seqs and balances, one charge and at most one refund per job, one
// 2xx delivery per job but for kill-explained repeats).
//
//   npm run test:chaos   (or: node --import tsx --test --test-timeout=600000 test/chaos/chaos.test.ts)
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import http from 'node:http';
import type { MongoClient } from 'mongodb';
import { startLocalCluster, type LocalCluster } from '../helpers/local-cluster.ts';
import { skipWithoutNats } from '../helpers/nats.ts';
import { sleep } from '../helpers/wait.ts';
import { ChaosLoad } from './chaos-load.ts';
import { checkEvents } from './check-events.ts';
import { checkFailures } from './check-failures.ts';
import { checkJobsAndWebhooks } from './check-jobs.ts';
import { checkLedger } from './check-ledger.ts';
import { checkLeftovers, clusterFfmpeg } from './check-leftovers.ts';
import { connectMongo } from './check-reads.ts';
import { latencies, report, type Figure } from './figures.ts';
import { settle } from './settle.ts';
import type { ClusterTraffic, RequestRecord } from './traffic.ts';

const TURN_LEASE_MS = 3000;
const SHUTDOWN_GRACE_MS = 10_000;
/** Settling may wait out one JetStream ack_wait of a job poll or a webhook attempt a killed node held (30 s). */
const SETTLE_LIMIT_MS = 90_000;

const ENV: Record<string, string> = {
  LOG_LEVEL: 'warn',
  SANDBOX_VIDEO_MS: '300',
  SANDBOX_IMAGE_MS: '150',
  PROVIDER_POLL_INTERVAL_MS: '200',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_DELAYS_MS: '1000,2000,3000',
  WEBHOOK_TIMEOUT_MS: '3000',
  TURN_LEASE_MS: String(TURN_LEASE_MS),
  // Below the lease: an actor partition a killed node held resumes before the lease of its turn ends.
  ACTOR_ACK_WAIT_MS: '2000',
  SHUTDOWN_GRACE_MS: String(SHUTDOWN_GRACE_MS),
  RATE_LIMIT_PER_MINUTE: '100000',
  EXPORT_RATE_PER_MINUTE: '1000',
  AUTH_FAILURES_PER_MINUTE: '100000',
  JOB_SWEEP_INTERVAL_MS: '1000',
  // A submit a killed node left in `submitting` is refunded after this (a live submit takes well under it).
  SUBMIT_ABANDONED_MS: '15000',
};

const t0 = Date.now();
const at = (ms: number) => `+${((ms - t0) / 1000).toFixed(1)}s`;

/** Waits until a request matching `match` has been in flight for `minMs`; returns it (or undefined at the limit). */
async function inFlightFor(
  traffic: ClusterTraffic,
  match: (record: RequestRecord) => boolean,
  minMs: number,
  limitMs: number,
): Promise<RequestRecord | undefined> {
  const deadline = Date.now() + limitMs;
  while (Date.now() < deadline) {
    const found = traffic.inFlight((record) => match(record) && Date.now() - record.startedAt >= minMs);
    if (found.length > 0) return found[0];
    await sleep(50);
  }
  return undefined;
}

/** GET `path` of a node: its status, or the error's code when no answer came (refused, reset). */
function probe(url: string, path: string, agent?: http.Agent): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.get(`${url}${path}`, { agent: agent ?? false, timeout: 1500 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error('time-out')));
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/**
 * The service node whose process holds the local TCP port `port` (a webhook attempt's sender): the socket's
 * inode from /proc/net/tcp, then the node whose file descriptors include it (three processes: fast, unlike `ss -p`).
 */
function senderNode(cluster: LocalCluster, port: number, receiverPort: number): string | undefined {
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(4, '0');
  let inode: string | undefined;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // The sender's side of the connection (an ephemeral port is unique per destination only).
      if (
        fields[1]?.endsWith(`:${hex(port)}`) &&
        fields[2]?.endsWith(`:${hex(receiverPort)}`) &&
        fields[9] !== '0'
      )
        inode = fields[9];
    }
    if (inode) break;
  }
  if (!inode || inode === '0') return undefined;
  for (const node of cluster.nodes) {
    try {
      for (const fd of readdirSync(`/proc/${node.pid}/fd`)) {
        try {
          if (readlinkSync(`/proc/${node.pid}/fd/${fd}`) === `socket:[${inode}]`) return node.name;
        } catch {
          /* closed meanwhile */
        }
      }
    } catch {
      /* not running */
    }
  }
  return undefined;
}

/** Each NATS node's client connections, whether it is the JetStream meta leader, and the streams it leads. */
async function natsRoles(
  cluster: LocalCluster,
): Promise<{ name: string; connections: number; metaLeader: boolean; leads: string[] }[]> {
  const get = async (url: string) => {
    try {
      const answer = await fetch(url, { signal: AbortSignal.timeout(2000) });
      return (await answer.json()) as Record<string, unknown>;
    } catch {
      return {};
    }
  };
  const roles = [];
  for (const nats of cluster.nats) {
    const connz = await get(`${nats.monitorUrl}/connz`);
    const jsz = (await get(`${nats.monitorUrl}/jsz?accounts=true&streams=true`)) as {
      meta_cluster?: { leader?: string };
      account_details?: { stream_detail?: { name: string; cluster?: { leader?: string } }[] }[];
    };
    const streams = (jsz.account_details ?? []).flatMap((account) => account.stream_detail ?? []);
    roles.push({
      name: nats.name,
      connections: Number(connz.num_connections ?? 0),
      metaLeader: jsz.meta_cluster?.leader === nats.name,
      leads: streams.filter((stream) => stream.cluster?.leader === nats.name).map((stream) => stream.name),
    });
  }
  return roles;
}

describe('chaos on a local cluster', { skip: skipWithoutNats() }, () => {
  let cluster: LocalCluster;
  let mongo: MongoClient;

  before(async () => {
    const started = Date.now();
    cluster = await startLocalCluster({ env: ENV });
    mongo = await connectMongo(cluster);
    console.log(`cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s (${cluster.dir})`);
  });
  after(async () => {
    await mongo?.close();
    await cluster?.down();
  });

  /** Stops the load, settles, runs every invariant, prints the figures; fails with every problem found. */
  async function verify(
    load: ChaosLoad,
    title: string,
    extra: Figure[] | (() => Figure[]) = [],
  ): Promise<void> {
    const stopping = Date.now();
    await load.stop();
    const settled = await settle(load, mongo, SETTLE_LIMIT_MS);
    const figures = [
      ...(typeof extra === 'function' ? extra() : extra),
      settled,
      await checkLedger(load, mongo),
      await checkJobsAndWebhooks(load),
      await checkEvents(load, mongo),
      checkFailures(load, { shutdownGraceMs: SHUTDOWN_GRACE_MS }),
      await checkLeftovers(load, mongo, load.traffic.nodePids),
      latencies(load),
    ];
    const timeline = load.traffic.disruptions
      .map(
        (d) =>
          `${d.kind} ${d.target} ${at(d.at)} (gone ${d.goneAt ? at(d.goneAt) : '-'}, back ${d.backAt ? at(d.backAt) : '-'})`,
      )
      .join('; ');
    console.log(`${title}: load ${at(load.startedAt)}..${at(stopping)}; ${timeline}`);
    const problems = report(title, figures);
    await load.close();
    if (problems.length > 0) {
      for (const node of cluster.nodes) {
        const errors = cluster
          .logs(node.name)
          .split('\n')
          .filter((line) => /"level":(50|60)\b/.test(line))
          .slice(-10)
          .map((line) => line.slice(0, 500));
        if (errors.length) console.log(`${node.name} errors (last 10):\n${errors.join('\n')}`);
      }
    }
    assert.deepEqual(problems, [], `${title}: ${problems.length} invariant violations`);
  }

  it('keeps every invariant when a service node is killed (-9) during a turn, an export and webhook retries', async () => {
    const load = await ChaosLoad.prepare(cluster, { label: 'kill', failFirstWebhook: true });
    const { traffic } = load;
    try {
      // A project no loop drives: the turn killed below is its only one, so it runs on the node it was sent to.
      const victimProject = await load.extraProject(
        'chaos victim',
        'a 6-scene video about a canal [sandbox:delay=8000]',
      );
      load.start();
      await sleep(3000);
      const events: string[] = [];
      /** Kills `name`; notes the ffmpeg children it left (same session) right away and 1.5 s later, then starts it. */
      const killAndRestart = async (name: string, what: string) => {
        const pid = cluster.nodes.find((node) => node.name === name)!.pid;
        await traffic.killNode(name);
        const orphans = clusterFfmpeg(cluster, new Set([pid]), load.startedAt).length;
        await sleep(1500);
        const stillThere = clusterFfmpeg(cluster, new Set([pid]), load.startedAt).length;
        events.push(
          `killed ${name} ${what}; its ffmpeg children: ${orphans} at the kill, ${stillThere} 1.5 s later`,
        );
        await traffic.startNode(name);
      };

      // 1. During a turn: a scene is being generated for the victim project on node-3.
      const turn = load.instruct(victimProject, 'continue', 'victim', 'node-3');
      const turnRecord = await inFlightFor(
        traffic,
        (r) => r.actor === 'victim' && r.op === 'instruct',
        800,
        5000,
      );
      if (!turnRecord)
        assert.fail(`the victim turn ended before the kill: ${JSON.stringify((await turn).body)}`);
      await killAndRestart(
        'node-3',
        `during turn request #${turnRecord.seq} (in flight ${Date.now() - turnRecord.startedAt} ms)`,
      );
      const killedTurn = await turn;
      if (killedTurn.status !== null)
        assert.fail(
          `the killed turn got an answer after ${killedTurn.endedAt - killedTurn.startedAt} ms: ${JSON.stringify(killedTurn.body).slice(0, 1500)}`,
        );
      await sleep(2000);

      // 2. During an export, sent to node-2 (probing and encoding two short clips: about a second here). One
      // that ends before it has run 300 ms (a fast moment) is followed by another, up to five times.
      let exportRecord: RequestRecord | undefined;
      let exported: Promise<RequestRecord> | undefined;
      for (let tries = 0; !exportRecord && tries < 5; tries++) {
        await exported;
        exported = load.exportOn('node-2', 'victim');
        exportRecord = await inFlightFor(
          traffic,
          (r) => r.actor === 'victim' && r.op === 'export',
          300,
          5000,
        );
      }
      if (!exportRecord) assert.fail('no export of the five sent to node-2 was in flight for 300 ms');
      await killAndRestart(
        'node-2',
        `during export request #${exportRecord.seq} (in flight ${Date.now() - exportRecord.startedAt} ms)`,
      );
      await exported;
      await sleep(2000);

      // 3. During webhook retries: deliveries answered 500 first are in their retry delays; an attempt held open
      // by the receiver tells (by its TCP port) which node is sending it: that node is killed mid-attempt.
      // Answers held 2.5 s (under WEBHOOK_TIMEOUT_MS): an attempt that arrived < 300 ms ago is still open
      // when the kill lands.
      load.webhooks.answerDelayMs = 2500;
      const deadline = Date.now() + 20_000;
      let victim: string | undefined;
      let attempt: (typeof load.webhooks.seen)[number] | undefined;
      while (!victim && Date.now() < deadline) {
        attempt = load.webhooks.seen.find((one) => one.answered === null && Date.now() - one.at < 300);
        if (attempt)
          victim = senderNode(cluster, attempt.remotePort, Number(new URL(load.webhooks.url).port));
        if (!victim) await sleep(50);
      }
      const inRetry = new Set(
        load.webhooks.seen.filter((one) => one.answered === 500).map((one) => one.deliveryId),
      );
      for (const one of load.webhooks.seen) if (one.answered === 200) inRetry.delete(one.deliveryId);
      victim ??= traffic.liveNodes()[0]!;
      const restarting = killAndRestart(
        victim,
        `${attempt ? `mid-attempt of ${attempt.deliveryId}` : '(no attempt found in flight)'}, ${inRetry.size} deliveries waiting for a retry`,
      );
      load.webhooks.answerDelayMs = 150;
      await restarting;
      await sleep(4000);
      const webhookKill = traffic.disruptions.at(-1)!;

      // Once settled: whether the attempt held open at the kill was made again (its sender died before
      // recording it, so JetStream handed the delivery to another node after ack_wait).
      await verify(load, '(a) kill -9 of service nodes', () => {
        if (attempt) {
          const again = load.webhooks.seen.filter(
            (one) => one.deliveryId === attempt.deliveryId && one.at > webhookKill.at,
          );
          events.push(
            `the attempt of ${attempt.deliveryId} arrived ${webhookKill.at - attempt.at} ms before the SIGKILL was sent to its sender; ` +
              (again.length
                ? `attempted again ${again[0]!.at - webhookKill.at} ms after the kill (answered ${again.map((one) => one.answered).join(',')})`
                : 'not attempted again (its sender had recorded it)'),
          );
        }
        return [{ name: 'kills', line: `kills: ${events.join('; ')}`, problems: [] }];
      });
    } finally {
      await load.dispose();
    }
  });

  it('keeps every invariant when a NATS node is killed and started again', async () => {
    const load = await ChaosLoad.prepare(cluster, { label: 'nats' });
    const { traffic } = load;
    try {
      load.start();
      await sleep(4000);
      // The node leading the actors' stream (the worst one to lose: every actor call publishes there), else nats-2.
      const roles = await natsRoles(cluster);
      const victim = roles.find((role) => role.leads.includes('MF_ACTORS'))?.name ?? 'nats-2';
      const role = roles.find((one) => one.name === victim);
      await traffic.killNats(victim);
      await sleep(8000);
      await traffic.startNats(victim);
      await sleep(6000);
      const after = await natsRoles(cluster);
      const figure: Figure = {
        name: 'nats',
        line:
          `nats: killed ${victim} for 8 s (before: ${role?.connections ?? '?'} client connections, meta leader: ${role?.metaLeader ?? '?'}, ` +
          `leading ${role?.leads.length ?? '?'} streams ${JSON.stringify(role?.leads ?? [])}); after its restart: ` +
          after.map((one) => `${one.name} ${one.connections} conns, leads ${one.leads.length}`).join(', '),
        problems: [],
      };
      await verify(load, '(b) NATS node killed and restarted', [figure]);
    } finally {
      await load.dispose();
    }
  });

  it('keeps every invariant through a rolling restart (SIGTERM, then start) of the three service nodes', async () => {
    const load = await ChaosLoad.prepare(cluster, { label: 'rolling' });
    const { traffic } = load;
    try {
      // A project no loop drives: at each SIGTERM a turn of it runs on the node being stopped.
      const drain = await load.extraProject(
        'chaos drain',
        'a 6-scene video about a canal [sandbox:delay=2500]',
      );
      load.start();
      await sleep(3000);
      const problems: string[] = [];
      const notes: string[] = [];
      const lines: string[] = [];
      for (const name of traffic.nodeNames) {
        const url = traffic.node(name).url;
        // The probes: one keep-alive connection opened before the SIGTERM, and fresh connections during the drain.
        const probeAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        await probe(url, '/livez', probeAgent);
        // Work the node must finish within its grace: a turn (generating a scene) and an export sent to it.
        const turn = load.instruct(drain, 'continue', 'drain', name);
        const exported = load.exportOn(name, 'drain');
        await inFlightFor(traffic, (r) => r.node === name && r.actor === 'drain', 300, 2000);
        const running = traffic.inFlight((r) => r.node === name && r.actor !== 'check');
        const sockets = load
          .allProjects()
          .flatMap((project) => project.clients)
          .filter((client) => {
            const last = client.connections.at(-1);
            return last && last.node === name && last.closedAt === undefined;
          });
        const stopping = traffic.stopNode(name);
        await sleep(300);
        const kept = {
          healthz: await probe(url, '/healthz', probeAgent),
          livez: await probe(url, '/livez', probeAgent),
        };
        const fresh = { healthz: await probe(url, '/healthz'), livez: await probe(url, '/livez') };
        probeAgent.destroy();
        const stopped = await stopping;
        const stopMs = stopped.goneAt! - stopped.at;
        await Promise.all([turn, exported]);
        await traffic.startNode(name);
        const closes = sockets.map(
          (client) =>
            client.connections.find((c) => c.node === name && c.closedAt && c.closedAt >= stopped.at)
              ?.closeCode,
        );
        const outcomes = running.map(
          (r) => `${r.actor} ${r.op} ${r.status ?? r.error} in ${r.endedAt - r.startedAt} ms`,
        );
        lines.push(
          `${name}: while draining /healthz ${kept.healthz} and /livez ${kept.livez} on a kept connection, ` +
            `${fresh.healthz} and ${fresh.livez} on new ones; SIGTERM→exit ${stopMs} ms; ` +
            `in flight at SIGTERM: ${outcomes.join(', ') || 'none'}; ${sockets.length} sockets closed ${closes.join(',') || '-'}`,
        );
        for (const r of running) {
          const cut = r.endedAt >= stopped.at + SHUTDOWN_GRACE_MS - 500;
          if ((r.op === 'instruct' || r.op === 'export') && r.status !== 200 && !cut)
            problems.push(
              `${r.op} #${r.seq} in flight on ${name} at SIGTERM ended ${r.status ?? r.error} within the grace`,
            );
        }
        if (kept.healthz !== 503)
          problems.push(`${name} /healthz answered ${kept.healthz} while draining (expected 503)`);
        if (kept.livez !== 200)
          problems.push(`${name} /livez answered ${kept.livez} while draining (expected 200)`);
        // docs/operator.md (Health and shutdown) has /livez answer 200 "while the process runs" and /healthz 503 while it drains; the
        // node stops listening at SIGTERM, so a probe on a new connection (as orchestrators make them) is refused.
        if (fresh.livez !== 200 || fresh.healthz !== 503)
          notes.push(
            `${name}: on a new connection while draining /healthz ${fresh.healthz}, /livez ${fresh.livez}`,
          );
        for (const code of closes)
          if (code !== 1012) problems.push(`a socket on ${name} closed with ${code}, not 1012`);
        if (stopMs > SHUTDOWN_GRACE_MS + 5000) problems.push(`${name} took ${stopMs} ms to stop`);
        await sleep(2000);
      }
      const figure: Figure = {
        name: 'rolling restart',
        line: `rolling restart: ${lines.join('; ')}`,
        problems,
        notes,
      };
      await verify(load, '(c) rolling restart', [figure]);
    } finally {
      await load.dispose();
    }
  });
});
