import { useState } from 'preact/hooks';
import { describeError, v1 } from '../api.ts';
import { formatDate } from '../format.ts';
import { navigate } from '../router.ts';
import {
  DEFAULT_ASPECT_RATIO,
  DEFAULT_PROJECT_NAME,
  PROJECT_ASPECT_RATIOS,
  PROJECT_NAME_MAX,
  type CreateProjectRequest,
  type ProjectAspectRatio,
  type ProjectCreated,
  type ProjectList,
} from '../api-types.ts';
import { ErrorText, formValue, Link, useLoad, useTitle } from '../ui.tsx';

function isRatio(text: string): text is ProjectAspectRatio {
  return (PROJECT_ASPECT_RATIOS as readonly string[]).includes(text);
}

/** The editor's start: create a project, list the projects (last changed first). */
export function ProjectsPage() {
  useTitle('Editor');
  const projects = useLoad(
    () => v1<ProjectList>('GET', '/media-studio/projects').then((a) => a.projects),
    [],
  );
  const [name, setName] = useState('');
  const [ratio, setRatio] = useState<ProjectAspectRatio>(DEFAULT_ASPECT_RATIO);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const create = async (event: Event): Promise<void> => {
    event.preventDefault();
    const typed = formValue(event, 'name').trim();
    const chosen = formValue(event, 'aspect_ratio');
    const body: CreateProjectRequest = { aspect_ratio: isRatio(chosen) ? chosen : ratio };
    if (typed) body.name = typed;
    setBusy(true);
    setError(null);
    try {
      const { project } = await v1<ProjectCreated>('POST', '/media-studio/projects', { json: body });
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
              maxLength={PROJECT_NAME_MAX}
              placeholder={DEFAULT_PROJECT_NAME}
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
              onChange={(e) => {
                const chosen = e.currentTarget.value;
                if (isRatio(chosen)) setRatio(chosen);
              }}
            >
              {PROJECT_ASPECT_RATIOS.map((r) => (
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
