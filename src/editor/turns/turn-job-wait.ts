import type { DomainEvents } from '../../platform/index.ts';
import type { JobEvents, JobRecord, JobsRepository } from '../../jobs/index.ts';
import { TurnLost, type TurnSession } from './turn-session.ts';

/** How a turn hears of its media's job. */
export interface JobWaitDeps {
  jobs: Pick<JobsRepository, 'get'>;
  /** The jobs' announcements: a waiting turn hears its job end here. */
  jobEvents: Pick<DomainEvents<JobEvents>, 'subscribe'>;
  /**
   * Cluster mode: how often a waiting turn reads its job again. Its job is polled by whichever node pulls it
   * from `MF_JOBS`, and `job.finished` is told only in the process that ended the job, so a job ended on
   * another node reaches the turn through this read. Unset (single node): every job ends in this process.
   */
  recheckMs?: number;
  /** How often a turn waiting for its job announces `media.progress`. */
  progressIntervalMs: number;
}

/** The turns of this process waiting for their media's jobs. */
export interface JobWaits {
  /**
   * Waits for the job to end, announcing progress; the job itself is bounded by PROVIDER_TIMEOUT_MS. Listens
   * first, then reads the job once (it may have ended before the turn listened); from then on its end is
   * heard as `job.finished`, or read every `recheckMs` when another node may end it. `TurnLost` once the
   * turn is over: the job goes on without it.
   */
  waitFor(session: TurnSession, jobId: string): Promise<JobRecord>;
}

const ENDED = new Set(['completed', 'failed', 'cancelled']);

/** Subscribes to `job.finished` at once, for every wait to come. */
export function createJobWaits(deps: JobWaitDeps): JobWaits {
  /** Turns waiting in this process, by the job they wait for. */
  const waiting = new Map<string, Set<Listener>>();
  deps.jobEvents.subscribe('job.finished', (job) => {
    for (const listener of waiting.get(job.id) ?? []) listener.hear(job);
  });

  /** Listens for the job's `job.finished` in this process from now on, until `stop`. */
  function listen(jobId: string): Listener & { stop(): void } {
    const listener: Listener = {
      heard: undefined,
      wake: () => undefined,
      hear(job) {
        listener.heard = job;
        listener.wake();
      },
    };
    let set = waiting.get(jobId);
    if (!set) waiting.set(jobId, (set = new Set()));
    set.add(listener);
    return Object.assign(listener, {
      stop() {
        set.delete(listener);
        if (set.size === 0 && waiting.get(jobId) === set) waiting.delete(jobId);
      },
    });
  }

  return {
    async waitFor(session, jobId) {
      const listener = listen(jobId);
      try {
        const started = Date.now();
        let nextProgress = started + deps.progressIntervalMs;
        let nextRecheck = deps.recheckMs === undefined ? Infinity : started + deps.recheckMs;
        let job = await deps.jobs.get(jobId);
        for (;;) {
          job = listener.heard ?? job;
          // The job goes on without the turn (its media still join the project when delivered).
          if (session.isLost || session.signal.aborted) throw new TurnLost();
          if (job && ENDED.has(job.status)) return job;
          if (Date.now() >= nextProgress) {
            nextProgress = Date.now() + deps.progressIntervalMs;
            await session.emit({
              type: 'media.progress',
              video_id: session.videoId,
              data: { job_id: jobId, status: 'processing', elapsed_ms: Date.now() - started },
            });
          } else if (Date.now() >= nextRecheck) {
            nextRecheck = Date.now() + deps.recheckMs!;
            job = await deps.jobs.get(jobId);
          } else {
            await sleepUntil(Math.min(nextProgress, nextRecheck), session.signal, listener);
          }
        }
      } finally {
        listener.stop();
      }
    },
  };
}

/** A waiting turn's ear for its job's `job.finished`. */
interface Listener {
  heard: JobRecord | undefined;
  /** Ends the wait in progress, if any. */
  wake(): void;
  hear(job: JobRecord): void;
}

/** Resolves at `at`, when the turn is aborted, or when the listener hears its job end, whichever is first. */
function sleepUntil(at: number, signal: AbortSignal, listener: Listener): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      listener.wake = () => undefined;
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, at - Date.now()));
    signal.addEventListener('abort', done, { once: true });
    listener.wake = done;
    if (signal.aborted || listener.heard) done();
  });
}
