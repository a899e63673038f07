// The editor page's data, kept live: the project as last read, the selected video and its chat thread, the
// turn being answered, the export's progress, and the events WebSocket that re-reads them after every change
// (docs/dashboard.md "Live updates between tabs"). Edits and requests act on it through the setters it hands out.
import type { RefObject } from 'preact';
import {
  useCallback,
  useEffect,
  useMemo,
  useRef,
  useState,
  type Dispatch,
  type StateUpdater,
} from 'preact/hooks';
import { ApiError, describeError, v1 } from '../api.ts';
import { coalescedRead, type CoalescedRead } from '../coalesce.ts';
import type { LiveTurn } from '../editor/chat.tsx';
import type { ExportRun } from '../editor/export-panel.tsx';
import { openProjectEvents } from '../editor/socket.ts';
import type { Message, MessagePage, ProjectEvent, ProjectEventType, ProjectState } from '../api-types.ts';
import { useTurnSteps } from './turn-log.tsx';

/**
 * Events of one burst (asset.created, clip.created, …) share one re-read of the project, and so do the turn's
 * end and the instruction's answer for the thread (docs/dashboard.md "Rate limits"): a new clip still shows
 * within a few frames.
 */
const RELOAD_COALESCE_MS = 50;
const THREAD_PAGES = 10;
const NO_EXPORT: ExportRun = { running: false, fraction: null, error: null };

// Events after which the page re-reads the project (simpler than applying each one, and always right);
// `asset.updated` brings an asset's pictures (docs/editor.md "Pictures of assets").
const STATE_EVENTS: ReadonlySet<string> = new Set<ProjectEventType>([
  'asset.created',
  'asset.updated',
  'clip.created',
  'clip.updated',
  'clip.removed',
  'context.appended',
  'aspect_ratio.changed',
  'project.updated',
  'media.completed',
  'sync.reset',
]);

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

/** What the page shows of its project, and the ways to re-read it. */
export interface ProjectLive {
  projectId: string;
  /** The project's path below the API (`/media-studio/projects/<id>`). */
  base: string;
  state: ProjectState | null;
  /** The newest state read, before the page renders it: the next edit's If-Match needs its revision. */
  stateRef: RefObject<ProjectState | null>;
  loadError: string | null;
  videoId: string | null;
  setVideoId: Dispatch<StateUpdater<string | null>>;
  messages: Message[] | null;
  live: LiveTurn | null;
  setLive: Dispatch<StateUpdater<LiveTurn | null>>;
  chatError: string | null;
  setChatError: Dispatch<StateUpdater<string | null>>;
  exportRun: ExportRun;
  setExportRun: Dispatch<StateUpdater<ExportRun>>;
  socketStatus: string;
  deleted: boolean;
  turnSteps: ReturnType<typeof useTurnSteps>['steps'];
  /** Reads the project now (its answer, or null when the read failed and says so). */
  reloadState: () => Promise<ProjectState | null>;
  /** The coalesced re-read of the project, shared by an event burst and the edit that caused it. */
  stateReads: CoalescedRead;
  scheduleReload: () => void;
  /** The coalesced re-read of the selected video's thread. */
  threadReads: CoalescedRead;
  /** When this video's last turn ended (its event), so the instruction's answer can share that re-read. */
  turnEndedAt: RefObject<number | null>;
}

/** One project's data, read at once and after every event of its WebSocket. */
export function useProjectLive(projectId: string): ProjectLive {
  const base = '/media-studio/projects/' + encodeURIComponent(projectId);
  const [state, setState] = useState<ProjectState | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [videoId, setVideoId] = useState<string | null>(null);
  const [messages, setMessages] = useState<Message[] | null>(null);
  const [live, setLive] = useState<LiveTurn | null>(null);
  const [chatError, setChatError] = useState<string | null>(null);
  const [exportRun, setExportRun] = useState<ExportRun>(NO_EXPORT);
  const [socketStatus, setSocketStatus] = useState('connecting');
  const [deleted, setDeleted] = useState(false);
  const [missing, setMissing] = useState(false);
  const turnSteps = useTurnSteps();
  const noteTurnEvent = turnSteps.note;

  const videoRef = useRef<string | null>(null);
  videoRef.current = videoId;
  const stateRef = useRef<ProjectState | null>(null);
  stateRef.current = state;

  const reloadState = useCallback(async (): Promise<ProjectState | null> => {
    try {
      const next = await v1<ProjectState>('GET', base);
      // Re-reads may overlap: an older answer never replaces a newer one.
      setState((current) => (current && current.project.revision > next.project.revision ? current : next));
      // The next edit's If-Match needs this revision before the page renders it (the studio's edits follow
      // one another at once: a split is a patch, then an add).
      if (!stateRef.current || stateRef.current.project.revision <= next.project.revision)
        stateRef.current = next;
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
  const turnEndedAt = useRef<number | null>(null);

  useEffect(() => {
    void stateReads.after();
    return () => stateReads.cancel();
  }, [stateReads]);

  useEffect(() => {
    setMessages(null);
    setLive(null);
    setChatError(null);
    setExportRun(NO_EXPORT);
    void threadReads.after();
  }, [videoId, threadReads]);
  useEffect(() => () => threadReads.cancel(), [threadReads]);

  // The events WebSocket: live reply text, export progress, and a re-read after every change.
  useEffect(() => {
    if (missing) return;
    const onEvent = (event: ProjectEvent): void => {
      const mine = event.video_id === null || event.video_id === videoRef.current;
      if (STATE_EVENTS.has(event.type)) scheduleReload();
      noteTurnEvent(event); // every video's turns: switching back to a video keeps its steps
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
          setExportRun(NO_EXPORT);
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
  }, [projectId, scheduleReload, threadReads, missing, noteTurnEvent]);

  return {
    projectId,
    base,
    state,
    stateRef,
    loadError,
    videoId,
    setVideoId,
    messages,
    live,
    setLive,
    chatError,
    setChatError,
    exportRun,
    setExportRun,
    socketStatus,
    deleted,
    turnSteps: turnSteps.steps,
    reloadState,
    stateReads,
    scheduleReload,
    threadReads,
    turnEndedAt,
  };
}
