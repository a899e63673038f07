// What the project page owns for its studio: the playhead time and whether it plays, the selected clip, the
// clip being saved, and the history of the user's direct edits with the sender that makes them REST edits.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { EditHistory, EditRolledBack, type CallSender, type HistoryEntry } from './edit-history.ts';

/** How long a clip says "saved" after its edit went through. */
const SAVED_SHOWN_MS = 1500;

export interface Studio {
  timeSec: number;
  seek: (sec: number) => void;
  playing: boolean;
  setPlaying: (playing: boolean) => void;
  selectedId: string | null;
  select: (clipId: string | null) => void;
  saving: { clipId: string; state: 'saving' | 'saved' } | null;
  canUndo: boolean;
  canRedo: boolean;
  /** Runs a new edit and records it; throws a refused edit's error; false when nothing changed (409). */
  perform: (entry: HistoryEntry, clipId: string | null) => Promise<boolean>;
  undo: () => Promise<boolean>;
  redo: () => Promise<boolean>;
}

/**
 * The studio's state for one video (`videoId`: the history is forgotten when it changes) of `lengthSec`.
 * `send` sends one call with If-Match; `reread` re-reads the project after an edit that stopped part-way and
 * was taken back (docs/dashboard.md "Undo"), whose error then reaches the caller to be said.
 */
export function useStudio(
  videoId: string | null,
  lengthSec: number,
  send: CallSender,
  reread: () => void,
): Studio {
  const [timeSec, setTimeSec] = useState(0);
  const [playing, setPlaying] = useState(false);
  const [selectedId, select] = useState<string | null>(null);
  const [saving, setSaving] = useState<Studio['saving']>(null);
  const [, setVersion] = useState(0);
  const history = useRef(new EditHistory()).current;
  // Edits run one after the other, in the order they were asked for: each needs the revision the one before
  // it made (an Undo pressed while a split is still on its way waits for it).
  const queue = useRef<Promise<unknown>>(Promise.resolve());

  useEffect(() => {
    history.clear();
    select(null);
    setTimeSec(0);
    setPlaying(false);
    setVersion((v) => v + 1);
  }, [videoId, history]);

  const run = useCallback(
    (clipId: string | null, action: () => Promise<boolean>): Promise<boolean> => {
      const turn = queue.current.then(async () => {
        if (clipId) setSaving({ clipId, state: 'saving' });
        let ok = false;
        try {
          ok = await action();
          return ok;
        } catch (err) {
          if (err instanceof EditRolledBack) reread();
          throw err;
        } finally {
          setVersion((v) => v + 1);
          // A clip its undo removed and added again (a null length restored) stays the selected one.
          const readded = history.readdedIds;
          select((id) => (id === null ? null : (readded.get(id) ?? id)));
          if (clipId && ok) {
            setSaving({ clipId, state: 'saved' });
            setTimeout(
              () => setSaving((s) => (s?.clipId === clipId && s.state === 'saved' ? null : s)),
              SAVED_SHOWN_MS,
            );
          } else if (clipId) setSaving(null);
        }
      });
      // The queue goes on after a refused edit; the refusal reaches the caller of that edit alone.
      queue.current = turn.catch(() => false);
      return turn;
    },
    [reread, history],
  );

  return {
    timeSec,
    seek: (sec) => setTimeSec(Math.max(0, Math.min(lengthSec, sec))),
    playing,
    setPlaying: (on) => {
      if (on && timeSec >= lengthSec) setTimeSec(0);
      setPlaying(on);
    },
    selectedId,
    select,
    saving,
    canUndo: history.canUndo,
    canRedo: history.canRedo,
    perform: (entry, clipId) => run(clipId, () => history.perform(entry, send)),
    undo: () => run(null, () => history.undo(send)),
    redo: () => run(null, () => history.redo(send)),
  };
}
