import { useState } from 'preact/hooks';
import { describeError, v1 } from '../api.ts';
import { formatDate } from '../format.ts';
import { navigate } from '../router.ts';
import type { Project, ProjectSummary } from '../types.ts';
import { ErrorText, formValue, Link, useLoad, useTitle } from '../ui.tsx';

const RATIOS = ['9:16', '1:1', '4:5', '16:9', '4:3'] as const;

/** The editor's start: create a project, list the projects (last changed first). */
export function ProjectsPage() {
  useTitle('Editor');
  const projects = useLoad(
    () => v1<{ projects: ProjectSummary[] }>('GET', '/media-studio/projects').then((a) => a.projects),
    [],
  );
  const [name, setName] = useState('');
  const [ratio, setRatio] = useState<string>('9:16');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const create = async (event: Event): Promise<void> => {
    event.preventDefault();
    const typed = formValue(event, 'name').trim();
    const body: Record<string, string> = { aspect_ratio: formValue(event, 'aspect_ratio') || ratio };
    if (typed) body.name = typed;
    setBusy(true);
    setError(null);
    try {
      const { project } = await v1<{ project: Project }>('POST', '/media-studio/projects', { json: body });
      navigate('/editor/' + encodeURIComponent(project.id));
    } catch (err) {
      setError(describeError(err));
      setBusy(false);
    }
  };
  return (
    <section>
      <h1>Editor</h1>
      <form class="panel" onSubmit={create} aria-labelledby="new-project-title">
        <h2 id="new-project-title">Start a project</h2>
        <div class="grid2">
          <div class="field">
            <label for="project-name">Project name</label>
            <input
              id="project-name"
              name="name"
              type="text"
              maxLength={120}
              placeholder="Untitled project"
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          </div>
          <div class="field">
            <label for="project-ratio">Aspect ratio</label>
            <select
              id="project-ratio"
              name="aspect_ratio"
              value={ratio}
              onChange={(e) => setRatio(e.currentTarget.value)}
            >
              {RATIOS.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
          </div>
        </div>
        <ErrorText error={error} />
        <button type="submit" disabled={busy}>
          New project
        </button>
      </form>
      <h2>Your projects</h2>
      <ErrorText error={projects.error} />
      {projects.loading && !projects.data && <p>Loading…</p>}
      {projects.data && projects.data.length === 0 && <p>No projects yet.</p>}
      {projects.data && projects.data.length > 0 && (
        <ul class="cards">
          {projects.data.map((p) => (
            <li class="card" key={p.id}>
              <div class="card-head">
                <Link href={'/editor/' + encodeURIComponent(p.id)}>{p.name}</Link>
                <span class="badge">{p.aspect_ratio}</span>
              </div>
              <p class="hint">Changed {formatDate(p.updated_at)}</p>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
