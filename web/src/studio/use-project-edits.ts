// The user's direct edits of a project: each a REST edit with If-Match on the revision last read, where a 409
// re-reads the project and says so (docs/dashboard.md "The timeline"); and the page's line that says so.
import { useCallback, useState } from 'preact/hooks';
import { ApiError, describeError, v1 } from '../api.ts';
import type { AddClipRequest, Asset, Clip, PatchClipRequest, Track, VideoCreated } from '../api-types.ts';
import type { TimelineActions } from '../editor/timeline.tsx';
import type { CallSender } from './edit-history.ts';
import type { PlacedClip } from './placements.ts';
import { clipPatchEntry, deleteClipEntry } from './timeline-gestures.ts';
import type { ProjectLive } from './use-project-live.ts';
import type { Studio } from './use-studio.ts';

const CHANGED = 'The project changed; reloaded';

/** The page's edits and the notice line they write to. */
export interface ProjectEdits {
  notice: string | null;
  setNotice: (text: string | null) => void;
  /** One edit: false when nothing was changed (a 409: re-read and said so); throws a refused edit's error. */
  edit: (method: string, path: string, json?: unknown) => Promise<boolean>;
  /** The studio's calls: a POST answers its new clip's id (`{ clip }`), so the history can follow it. */
  sendCall: CallSender;
  /** An asset placed from the library at the end of a track. */
  place: (asset: Asset, track: Track) => Promise<void>;
  /** A new video, then shown. */
  addVideo: () => Promise<void>;
}

export function useProjectEdits(live: ProjectLive): ProjectEdits {
  const { base, stateRef, reloadState, stateReads, videoId, setVideoId } = live;
  const [notice, setNotice] = useState<string | null>(null);

  /**
   * A direct edit with If-Match: its answer, or false when nothing was changed (a 409 re-reads the project and
   * says so).
   */
  const editAnswer = useCallback(
    async (method: string, path: string, json?: unknown): Promise<unknown> => {
      const revision = stateRef.current?.project.revision;
      const headers: Record<string, string> = {};
      if (revision !== undefined) headers['if-match'] = `"${revision}"`;
      setNotice(null);
      let answer: unknown;
      try {
        answer = await v1(method, base + path, { json, headers });
      } catch (err) {
        if (err instanceof ApiError && err.status === 409) {
          await reloadState();
          setNotice(CHANGED);
          return false;
        }
        throw err;
      }
      await stateReads.after(); // shared with the re-read the edit's own event asks for
      return answer ?? true;
    },
    [base, reloadState, stateReads, stateRef],
  );
  const edit = useCallback(
    async (method: string, path: string, json?: unknown): Promise<boolean> =>
      (await editAnswer(method, path, json)) !== false,
    [editAnswer],
  );
  const sendCall: CallSender = useCallback(
    async (call) => {
      const answer = await editAnswer(call.method, call.path, call.body);
      if (answer === false) return false;
      const clip = (answer as { clip?: Clip }).clip;
      return call.method === 'POST' && clip ? clip.id : true;
    },
    [editAnswer],
  );

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

  return { notice, setNotice, edit, sendCall, place, addVideo };
}

/** The inspector's forms: they edit through the studio's history too, so Undo takes back what they changed. */
export function clipActions(
  edits: ProjectEdits,
  studio: Studio,
  placed: readonly PlacedClip[],
  videoId: string | null,
): TimelineActions {
  const { edit } = edits;
  const placedOf = (clip: Clip) => placed.find((p) => p.clip.id === clip.id);
  return {
    add: (body: AddClipRequest) => edit('POST', '/clips', videoId ? { ...body, video_id: videoId } : body),
    update: (clip: Clip, patch: PatchClipRequest) => {
      const one = placedOf(clip);
      return one
        ? studio.perform(clipPatchEntry('edit', one, patch), clip.id)
        : edit('PATCH', '/clips/' + encodeURIComponent(clip.id), patch);
    },
    remove: (clip: Clip) => {
      const one = placedOf(clip);
      return one
        ? studio.perform(deleteClipEntry(one), null)
        : edit('DELETE', '/clips/' + encodeURIComponent(clip.id));
    },
  };
}
