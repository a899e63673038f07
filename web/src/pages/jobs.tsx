import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError, v1 } from '../api.ts';
import { formatDate, formatNumber } from '../format.ts';
import { JOB_STATUSES, type Job, type JobList, type JobStatus } from '../api-types.ts';
import { ErrorText, useTitle } from '../ui.tsx';

const PAGE = 20;
const POLL_MS = 10_000;

/** A job's media: the video of a completed video job, the images of a completed image job. */
export function jobMedia(job: Job): { video: string | null; images: string[] } {
  const result = job.result;
  if (!result) return { video: null, images: [] };
  return 'video' in result ? { video: result.video, images: [] } : { video: null, images: result.images };
}

/** The result of a completed job: its images or its video. */
export function JobPreview(props: { job: Job }) {
  if (!props.job.result) return null;
  const { video, images } = jobMedia(props.job);
  return (
    <div class="preview">
      {video && (
        <video src={video} controls preload="metadata" playsInline>
          <a href={video}>Download the video</a>
        </video>
      )}
      {images.map((src, i) => (
        <a key={src} href={src} target="_blank" rel="noopener noreferrer">
          <img src={src} alt={`Image ${i + 1} of job ${props.job.job_id}`} loading="lazy" />
        </a>
      ))}
    </div>
  );
}

function JobCard(props: { job: Job; onChange: (job: Job) => void }) {
  const { job } = props;
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const cancel = async (): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await v1('DELETE', '/jobs/' + encodeURIComponent(job.job_id));
    } catch (err) {
      setError(describeError(err));
    }
    try {
      props.onChange(await v1<Job>('GET', '/jobs/' + encodeURIComponent(job.job_id)));
    } catch {
      // The list keeps the last known state; the error above says what went wrong.
    } finally {
      setBusy(false);
    }
  };
  return (
    <li class="card">
      <div class="card-head">
        <strong>
          {job.type === 'video' ? 'Video' : 'Image'} · {job.model}
        </strong>
        <span class={'badge state-' + job.status}>{job.status}</span>
      </div>
      <dl class="meta">
        <dt>Job</dt>
        <dd>
          <code>{job.job_id}</code>
        </dd>
        <dt>Created</dt>
        <dd>{formatDate(job.created_at)}</dd>
        {job.completed_at && (
          <>
            <dt>Ended</dt>
            <dd>{formatDate(job.completed_at)}</dd>
          </>
        )}
        <dt>Credits</dt>
        <dd>
          {formatNumber(job.credits_consumed)}
          {job.refunded_credits > 0 ? ` (refunded ${formatNumber(job.refunded_credits)})` : ''}
        </dd>
      </dl>
      {job.error && <p class="error">{job.error}</p>}
      <JobPreview job={job} />
      {job.status === 'processing' && (
        <div class="actions">
          <button type="button" class="danger" disabled={busy} onClick={cancel}>
            Cancel
          </button>
        </div>
      )}
      <ErrorText error={error} />
    </li>
  );
}

/** Jobs: the user's jobs with a status filter, paging, previews and cancel. */
export function JobsPage() {
  useTitle('Jobs');
  const [status, setStatus] = useState<JobStatus | ''>('');
  const [jobs, setJobs] = useState<Job[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const generation = useRef(0);

  const load = async (more: boolean): Promise<void> => {
    const mine = more ? generation.current : ++generation.current;
    setLoading(true);
    setError(null);
    try {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (status) q.set('status', status);
      if (more && cursor) q.set('cursor', cursor);
      const page = await v1<JobList>('GET', '/jobs?' + q.toString());
      if (mine !== generation.current) return;
      setJobs((old) =>
        more ? [...old, ...page.jobs.filter((j) => !old.some((o) => o.job_id === j.job_id))] : page.jobs,
      );
      setCursor(page.next_cursor);
    } catch (err) {
      if (mine === generation.current) setError(describeError(err));
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  };

  useEffect(() => {
    void load(false);
  }, [status]);

  const replace = (job: Job): void => setJobs((old) => old.map((j) => (j.job_id === job.job_id ? job : j)));

  // Processing jobs are re-read every few seconds (a handful at most, to stay well inside the rate limit).
  const processing = jobs.filter((j) => j.status === 'processing').slice(0, 5);
  const processingIds = processing.map((j) => j.job_id).join(',');
  useEffect(() => {
    if (!processingIds) return;
    const timer = setInterval(() => {
      for (const id of processingIds.split(',')) {
        v1<Job>('GET', '/jobs/' + encodeURIComponent(id))
          .then(replace)
          .catch(() => undefined);
      }
    }, POLL_MS);
    return () => clearInterval(timer);
  }, [processingIds]);

  return (
    <section>
      <h1>Jobs</h1>
      <div class="toolbar">
        <div class="field">
          <label for="job-status">Status</label>
          <select
            id="job-status"
            value={status}
            onChange={(e) => setStatus(e.currentTarget.value as JobStatus | '')}
          >
            <option value="">All</option>
            {JOB_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <button type="button" class="secondary" onClick={() => void load(false)}>
          Refresh
        </button>
      </div>
      <ErrorText error={error} />
      {!loading && jobs.length === 0 && !error && <p>No jobs{status ? ` with status ${status}` : ''}.</p>}
      <ul class="cards">
        {jobs.map((job) => (
          <JobCard key={job.job_id} job={job} onChange={replace} />
        ))}
      </ul>
      {loading && <p>Loading…</p>}
      {cursor && !loading && (
        <button type="button" class="secondary" onClick={() => void load(true)}>
          Load more
        </button>
      )}
    </section>
  );
}
