import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, describeError, v1 } from '../api.ts';
import { coalescedRead } from '../coalesce.ts';
import { Chat, type LiveTurn } from '../editor/chat.tsx';
import { ExportPanel, type ExportRun } from '../editor/export-panel.tsx';
import { Library } from '../editor/library.tsx';
import { openProjectEvents } from '../editor/socket.ts';
import { Timeline, type TimelineActions } from '../editor/timeline.tsx';
import type {
  AddClipRequest,
  Asset,
  Clip,
  ExportFit,
  ExportRequest,
  InstructRequest,
  Message,
  MessagePage,
  PatchClipRequest,
  ProjectEvent,
  ProjectEventType,
  ProjectState,
  Track,
  Video,
  VideoCreated,
} from '../api-types.ts';
import { exportedFromVideo } from '../asset-metadata.ts';
import { ErrorText, Link, Notice, useTitle } from '../ui.tsx';

/**
 * Events of one burst (asset.created, clip.created, …) share one re-read of the project, and so do the turn's
 * end and the instruction's answer for the thread (docs/dashboard.md "Rate limits"): a new clip still shows
 * within a few frames.
 */
const RELOAD_COALESCE_MS = 50;
const THREAD_PAGES = 10;
const CHANGED = 'The project changed; reloaded';

// Events after which the page re-reads the project (simpler than applying each one, and always right).
const STATE_EVENTS: ReadonlySet<string> = new Set<ProjectEventType>([
  'asset.created',
  'clip.created',
  'clip.updated',
  'clip.removed',
  'context.appended',
  'aspect_ratio.changed',
  'project.updated',
  'media.completed',
  'sync.reset',
]);

function latestExport(assets: Asset[], videoId: string | null): Asset | undefined {
  return assets
    .filter((a) => a.source === 'export' && a.kind === 'video' && exportedFromVideo(a) === videoId)
    .sort((a, b) => b.created_at.localeCompare(a.created_at))[0];
}

async function loadThread(projectId: string, videoId: string): Promise<Message[]> {
  const out: Message[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < THREAD_PAGES; page++) {
    const q = new URLSearchParams({ limit: '100' });
    if (cursor) q.set('cursor', cursor);
    const answer: MessagePage = await v1(
      'GET',
      `/media-studio/projects/${encodeURIComponent(projectId)}/videos/${encodeURIComponent(videoId)}/messages?${q.toString()}`,
    );
    out.push(...answer.messages);
    cursor = answer.next_cursor;
    if (!cursor) break;
  }
  return out;
}

function VideoTabs(props: {
  videos: Video[];
  selected: string | null;
  onSelect: (id: string) => void;
  onAdd: () => void;
}) {
  return (
    <div class="tabs-row">
      <div role="tablist" aria-label="Videos" class="tabs">
        {props.videos.map((v) => (
          <button
            key={v.id}
            type="button"
            role="tab"
            id={'tab-' + v.id}
            aria-selected={v.id === props.selected}
            aria-controls="video-panel"
            tabIndex={v.id === props.selected ? 0 : -1}
            onClick={() => props.onSelect(v.id)}
            onKeyDown={(e) => {
              if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
              const i = props.videos.findIndex((x) => x.id === props.selected);
              const next =
                props.videos[
                  (i + (e.key === 'ArrowRight' ? 1 : -1) + props.videos.length) % props.videos.length
                ];
              if (next) {
                props.onSelect(next.id);
                document.getElementById('tab-' + next.id)?.focus();
              }
            }}
          >
            {v.name} <span class="hint">{v.aspect_ratio}</span>
          </button>
        ))}
      </div>
      <button type="button" class="secondary" onClick={props.onAdd}>
        New video
      </button>
    </div>
  );
}

/** One project in the editor: videos, chat, library, timeline, preview and export, kept live by its events. */
export function ProjectPage(props: { projectId: string }) {
  const { projectId } = props;
  const base = '/media-studio/projects/' + encodeURIComponent(projectId);
  const [state, setState] = useState<ProjectState | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [videoId, setVideoId] = useState<string | null>(null);
  const [messages, setMessages] = useState<Message[] | null>(null);
  const [live, setLive] = useState<LiveTurn | null>(null);
  const [sending, setSending] = useState(false);
  const [chatError, setChatError] = useState<string | null>(null);
  const [exportRun, setExportRun] = useState<ExportRun>({ running: false, fraction: null, error: null });
  const [socketStatus, setSocketStatus] = useState('connecting');
  const [deleted, setDeleted] = useState(false);
  const [missing, setMissing] = useState(false);
  useTitle(state?.project.name ?? 'Editor');

  const videoRef = useRef<string | null>(null);
  videoRef.current = videoId;
  const stateRef = useRef<ProjectState | null>(null);
  stateRef.current = state;

  const reloadState = useCallback(async (): Promise<ProjectState | null> => {
    try {
      const next = await v1<ProjectState>('GET', base);
      // Re-reads may overlap: an older answer never replaces a newer one.
      setState((current) => (current && current.project.revision > next.project.revision ? current : next));
      setLoadError(null);
      setVideoId((current) =>
        current && next.videos.some((v) => v.id === current) ? current : (next.videos[0]?.id ?? null),
      );
      return next;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) setMissing(true);
      setLoadError(describeError(err));
      return null;
    }
  }, [base]);

  const stateReads = useMemo(
    () =>
      coalescedRead(async () => {
        await reloadState();
      }, RELOAD_COALESCE_MS),
    [reloadState],
  );
  const scheduleReload = useCallback(() => void stateReads.after(), [stateReads]);

  const reloadThread = useCallback(async () => {
    const vid = videoRef.current;
    if (!vid) return;
    try {
      const list = await loadThread(projectId, vid);
      if (videoRef.current === vid) setMessages(list);
    } catch (err) {
      setChatError(describeError(err));
    }
  }, [projectId]);
  const threadReads = useMemo(() => coalescedRead(reloadThread, RELOAD_COALESCE_MS), [reloadThread]);
  /** When this video's last turn ended (its event), so the instruction's answer can share that re-read. */
  const turnEndedAt = useRef<number | null>(null);

  useEffect(() => {
    void stateReads.after();
    return () => stateReads.cancel();
  }, [stateReads]);

  useEffect(() => {
    setMessages(null);
    setLive(null);
    setChatError(null);
    setExportRun({ running: false, fraction: null, error: null });
    void threadReads.after();
  }, [videoId, threadReads]);
  useEffect(() => () => threadReads.cancel(), [threadReads]);

  // The events WebSocket: live reply text, export progress, and a re-read after every change.
  useEffect(() => {
    if (missing) return;
    const onEvent = (event: ProjectEvent): void => {
      const mine = event.video_id === null || event.video_id === videoRef.current;
      if (STATE_EVENTS.has(event.type)) scheduleReload();
      if (!mine) return;
      const data = event.data;
      // A type this page does not know is ignored (types may be added, docs/editor.md "Events").
      switch (event.type as ProjectEventType) {
        case 'turn.started':
          setLive({
            turnId: event.turn_id,
            instruction: typeof data.instruction === 'string' ? data.instruction : '',
            text: '',
          });
          break;
        case 'assistant.delta':
          setLive((old) => ({
            turnId: event.turn_id,
            instruction: old?.instruction ?? '',
            text:
              (old && old.turnId === event.turn_id ? old.text : '') +
              (typeof data.text === 'string' ? data.text : ''),
          }));
          break;
        case 'turn.completed':
        case 'turn.failed':
          turnEndedAt.current = performance.now();
          void threadReads
            .after()
            .then(() =>
              setLive((old) => (old && (old.turnId === event.turn_id || old.turnId === null) ? null : old)),
            );
          break;
        case 'export.started':
          setExportRun({ running: true, fraction: 0, error: null });
          break;
        case 'export.progress':
          setExportRun((old) => ({
            running: true,
            fraction:
              typeof data.fraction === 'number' ? Math.max(old.fraction ?? 0, data.fraction) : old.fraction,
            error: null,
          }));
          break;
        case 'export.completed':
          setExportRun({ running: false, fraction: null, error: null });
          scheduleReload();
          break;
        case 'export.failed':
          setExportRun({
            running: false,
            fraction: null,
            error: `The export failed (${String(data.error)})`,
          });
          break;
      }
    };
    return openProjectEvents(projectId, {
      onEvent,
      onConnected: () => {
        scheduleReload();
        void threadReads.after();
      },
      onStatus: setSocketStatus,
      onDeleted: () => setDeleted(true),
    });
  }, [projectId, scheduleReload, threadReads, missing]);

  /** A direct edit with If-Match: a 409 re-reads the project and says so. */
  const edit = useCallback(
    async (method: string, path: string, json?: unknown): Promise<void> => {
      const revision = stateRef.current?.project.revision;
      const headers: Record<string, string> = {};
      if (revision !== undefined) headers['if-match'] = `"${revision}"`;
      setNotice(null);
      try {
        await v1(method, base + path, { json, headers });
      } catch (err) {
        if (err instanceof ApiError && err.status === 409) {
          await reloadState();
          setNotice(CHANGED);
          return;
        }
        throw err;
      }
      await stateReads.after(); // shared with the re-read the edit's own event asks for
    },
    [base, reloadState, stateReads],
  );

  const actions: TimelineActions = {
    update: (clip: Clip, patch: PatchClipRequest) =>
      edit('PATCH', '/clips/' + encodeURIComponent(clip.id), patch),
    remove: (clip: Clip) => edit('DELETE', '/clips/' + encodeURIComponent(clip.id)),
  };

  const place = async (asset: Asset, track: Track): Promise<void> => {
    try {
      const body: AddClipRequest = { track, asset_id: asset.id };
      if (videoId) body.video_id = videoId;
      await edit('POST', '/clips', body);
    } catch (err) {
      setNotice(describeError(err));
    }
  };

  const addVideo = async (): Promise<void> => {
    try {
      const revision = stateRef.current?.project.revision;
      const answer = await v1<VideoCreated>('POST', base + '/videos', {
        json: {},
        headers: revision !== undefined ? { 'if-match': `"${revision}"` } : {},
      });
      await reloadState();
      setVideoId(answer.video.id);
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) {
        await reloadState();
        setNotice(CHANGED);
      } else setNotice(describeError(err));
    }
  };

  const send = async (instruction: string): Promise<boolean> => {
    if (!videoId) return false;
    setSending(true);
    setChatError(null);
    setLive((old) => old ?? { turnId: null, instruction, text: '' });
    turnEndedAt.current = null;
    try {
      const body: InstructRequest = { instruction, video_id: videoId };
      await v1('POST', base + '/instruct', { json: body });
      // The turn's end, when its event came first, asked for the re-read this needs: share it.
      await threadReads.after(turnEndedAt.current ?? undefined);
      setLive(null);
      return true;
    } catch (err) {
      setChatError(describeError(err));
      setLive(null);
      await threadReads.after();
      return false;
    } finally {
      setSending(false);
    }
  };

  const runExport = async (fit: ExportFit): Promise<void> => {
    setExportRun({ running: true, fraction: null, error: null });
    try {
      const body: ExportRequest = { fit };
      if (videoId) body.video_id = videoId;
      await v1('POST', base + '/export', { json: body });
      setExportRun({ running: false, fraction: null, error: null });
      await reloadState();
    } catch (err) {
      setExportRun({ running: false, fraction: null, error: describeError(err) });
    }
  };

  if (deleted) {
    return (
      <section>
        <h1>Project deleted</h1>
        <p>
          This project was deleted. <Link href="/editor">Back to your projects</Link>
        </p>
      </section>
    );
  }
  if (!state) {
    return (
      <section>
        <h1>Editor</h1>
        <ErrorText error={loadError} />
        {!loadError && <p>Loading the project…</p>}
        <p>
          <Link href="/editor">Back to your projects</Link>
        </p>
      </section>
    );
  }

  const clips = state.clips.filter((c) => c.video_id === videoId);
  return (
    <section class="editor">
      <div class="row-head">
        <h1>{state.project.name}</h1>
        <span class={'badge live-' + socketStatus} title="Live updates">
          {socketStatus === 'live' ? 'Live' : socketStatus === 'closed' ? 'Offline' : 'Connecting…'}
        </span>
      </div>
      <p class="hint">
        <Link href="/editor">All projects</Link> · revision {state.project.revision}
      </p>
      <ErrorText error={loadError} />
      <Notice text={notice} />
      <VideoTabs
        videos={state.videos}
        selected={videoId}
        onSelect={setVideoId}
        onAdd={() => void addVideo()}
      />
      <div
        id="video-panel"
        role="tabpanel"
        aria-labelledby={videoId ? 'tab-' + videoId : undefined}
        class="editor-grid"
      >
        <div class="col">
          <Chat messages={messages} live={live} error={chatError} sending={sending} onSend={send} />
          <ExportPanel
            latest={latestExport(state.assets, videoId)}
            run={exportRun}
            canExport={clips.some((c) => c.track === 'video')}
            onExport={(fit) => void runExport(fit)}
          />
          {state.project.context_md && (
            <details class="context">
              <summary>Project context</summary>
              <pre>{state.project.context_md}</pre>
            </details>
          )}
        </div>
        <div class="col">
          <Timeline clips={clips} assets={state.assets} actions={actions} />
          <Library projectId={projectId} assets={state.assets} onChanged={scheduleReload} onPlace={place} />
        </div>
      </div>
    </section>
  );
}
