import { useState } from 'preact/hooks';
import { describeError, v1 } from '../api.ts';
import { formatDate, formatSeconds } from '../format.ts';
import type { Asset, Job, JobList, ProjectList, ProjectState, ProjectSummary } from '../api-types.ts';
import { assetNumber, assetPoster, assetText } from '../asset-metadata.ts';
import { ErrorText, Link, useLoad, useTitle } from '../ui.tsx';
import { jobMedia } from './jobs.tsx';

const PROJECTS_SCANNED = 10;

/** An exported video and the project it was exported from. */
interface ExportedVideo {
  project: ProjectSummary;
  asset: Asset;
}

function GeneratedMedia() {
  const [more, setMore] = useState<{ jobs: Job[]; cursor: string | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const first = useLoad(() => v1<JobList>('GET', '/jobs?status=completed&limit=50'), []);
  const jobs = more?.jobs ?? first.data?.jobs ?? [];
  const cursor = more ? more.cursor : (first.data?.next_cursor ?? null);
  const loadMore = async (): Promise<void> => {
    if (!cursor) return;
    try {
      const page = await v1<JobList>(
        'GET',
        '/jobs?status=completed&limit=50&cursor=' + encodeURIComponent(cursor),
      );
      setMore({ jobs: [...jobs, ...page.jobs], cursor: page.next_cursor });
    } catch (err) {
      setError(describeError(err));
    }
  };
  return (
    <section aria-labelledby="generated-title">
      <h2 id="generated-title">Generated images and videos</h2>
      <ErrorText error={first.error ?? error} />
      {first.loading && !first.data && <p>Loading…</p>}
      {first.data && jobs.length === 0 && <p>No completed jobs yet.</p>}
      <ul class="gallery">
        {jobs.flatMap((job) => {
          const items = [];
          const { video, images } = jobMedia(job);
          if (video)
            items.push(
              <li key={job.job_id + ':v'}>
                <video src={video} controls preload="metadata" playsInline />
                <p class="caption">
                  Video · {job.model} · {formatDate(job.completed_at)}
                </p>
              </li>,
            );
          images.forEach((src, i) =>
            items.push(
              <li key={src}>
                <a href={src} target="_blank" rel="noopener noreferrer">
                  <img src={src} alt={`Image ${i + 1} of job ${job.job_id}`} loading="lazy" />
                </a>
                <p class="caption">
                  Image · {job.model} · {formatDate(job.completed_at)}
                </p>
              </li>,
            ),
          );
          return items;
        })}
      </ul>
      {cursor && (
        <button type="button" class="secondary" onClick={loadMore}>
          Load more
        </button>
      )}
    </section>
  );
}

function Exports() {
  const exports = useLoad(async () => {
    const { projects } = await v1<ProjectList>('GET', '/media-studio/projects');
    const states = await Promise.all(
      projects.slice(0, PROJECTS_SCANNED).map((p) =>
        v1<ProjectState>('GET', '/media-studio/projects/' + encodeURIComponent(p.id))
          .then((s) =>
            s.assets
              .filter((a) => a.source === 'export')
              .map((asset): ExportedVideo => ({ project: p, asset })),
          )
          .catch(() => [] as ExportedVideo[]),
      ),
    );
    return states.flat().sort((a, b) => b.asset.created_at.localeCompare(a.asset.created_at));
  }, []);
  return (
    <section aria-labelledby="exports-title">
      <h2 id="exports-title">Exported videos</h2>
      <ErrorText error={exports.error} />
      {exports.loading && !exports.data && <p>Loading…</p>}
      {exports.data && exports.data.length === 0 && <p>No exports yet.</p>}
      <ul class="gallery">
        {(exports.data ?? []).map(({ project, asset }) => (
          <li key={asset.id}>
            <video
              src={asset.url}
              poster={assetPoster(asset)}
              controls
              preload={assetPoster(asset) ? 'none' : 'metadata'}
              playsInline
            />
            <p class="caption">
              {assetText(asset, 'name') ?? 'Export'} · {formatSeconds(assetNumber(asset, 'duration_sec'))} ·{' '}
              <Link href={'/editor/' + encodeURIComponent(project.id)}>{project.name}</Link>
            </p>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Media: generated images and videos from completed jobs, and the editor projects' exports. */
export function MediaPage() {
  useTitle('Media');
  return (
    <section>
      <h1>Media</h1>
      <GeneratedMedia />
      <Exports />
    </section>
  );
}
