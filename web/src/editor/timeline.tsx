import { useEffect, useState } from 'preact/hooks';
import { formatSeconds } from '../format.ts';
import {
  CLIP_VOLUME_MAX,
  TRACKS,
  type Asset,
  type Clip,
  type PatchClipRequest,
  type Track,
} from '../api-types.ts';
import { formValue } from '../ui.tsx';
import { assetName } from './library.tsx';

/** The actions the timeline asks the page to run (each with If-Match). */
export interface TimelineActions {
  update: (clip: Clip, patch: PatchClipRequest) => Promise<void>;
  remove: (clip: Clip) => Promise<void>;
}

const TRACK_NAMES: Record<Track, string> = {
  video: 'Video',
  voice: 'Voice',
  sfx: 'Sound effects',
  music: 'Music',
};

function numberOrNull(text: string): number | null | undefined {
  const t = text.trim();
  if (t === '') return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : undefined;
}

function ClipRow(props: { clip: Clip; asset: Asset | undefined; count: number; actions: TimelineActions }) {
  const { clip, count, actions } = props;
  const [start, setStart] = useState('');
  const [trim, setTrim] = useState('');
  const [duration, setDuration] = useState('');
  const [volume, setVolume] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setStart(clip.start_sec === null ? '' : String(clip.start_sec));
    setTrim(String(clip.trim_start_sec));
    setDuration(clip.duration_sec === null ? '' : String(clip.duration_sec));
    setVolume(String(clip.volume));
  }, [clip.start_sec, clip.trim_start_sec, clip.duration_sec, clip.volume]);
  const run = async (action: () => Promise<void>): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (err) {
      setError(err instanceof Error ? err.message : 'The change failed');
    } finally {
      setBusy(false);
    }
  };
  const apply = (event: Event): void => {
    event.preventDefault();
    const patch: PatchClipRequest = {};
    const t = numberOrNull(formValue(event, 'trim'));
    const d = numberOrNull(formValue(event, 'duration'));
    const v = numberOrNull(formValue(event, 'volume'));
    const s0 = clip.track === 'video' ? null : numberOrNull(formValue(event, 'start'));
    if (t === undefined || d === undefined || v === undefined || s0 === undefined) {
      setError('Enter numbers only.');
      return;
    }
    // Only what changed is sent; a blank field keeps the clip's value (null cannot be sent back).
    if (t !== null && t !== clip.trim_start_sec) patch.trim_start_sec = t;
    if (d !== null && d !== clip.duration_sec) patch.duration_sec = d;
    if (v !== null && v !== clip.volume) patch.volume = v;
    if (s0 !== null && s0 !== clip.start_sec) patch.start_sec = s0;
    if (Object.keys(patch).length === 0) {
      setError(null);
      return;
    }
    void run(() => actions.update(clip, patch));
  };
  const label = `${TRACK_NAMES[clip.track]} clip ${clip.idx + 1}`;
  const id = 'clip-' + clip.id;
  return (
    <li class="clip">
      <div class="clip-head">
        <span class="clip-no">{clip.idx + 1}</span>
        <strong>{assetName(props.asset)}</strong>
        <span class="hint">
          {props.asset?.kind ?? '?'}
          {clip.duration_sec !== null ? ` · ${formatSeconds(clip.duration_sec)}` : ''}
        </span>
      </div>
      <form class="clip-form" onSubmit={apply} aria-label={label}>
        {clip.track !== 'video' && (
          <div class="field small">
            <label for={id + '-start'}>Start (s)</label>
            <input
              id={id + '-start'}
              name="start"
              type="number"
              min={0}
              step="any"
              placeholder="after previous"
              value={start}
              onInput={(e) => setStart(e.currentTarget.value)}
            />
          </div>
        )}
        <div class="field small">
          <label for={id + '-trim'}>Trim start (s)</label>
          <input
            id={id + '-trim'}
            name="trim"
            type="number"
            min={0}
            step="any"
            value={trim}
            onInput={(e) => setTrim(e.currentTarget.value)}
          />
        </div>
        <div class="field small">
          <label for={id + '-duration'}>Duration (s)</label>
          <input
            id={id + '-duration'}
            name="duration"
            type="number"
            min={0}
            step="any"
            placeholder="to the end"
            value={duration}
            onInput={(e) => setDuration(e.currentTarget.value)}
          />
        </div>
        <div class="field small">
          <label for={id + '-volume'}>Volume</label>
          <input
            id={id + '-volume'}
            name="volume"
            type="number"
            min={0}
            max={CLIP_VOLUME_MAX}
            step={0.05}
            value={volume}
            onInput={(e) => setVolume(e.currentTarget.value)}
          />
        </div>
        <div class="actions">
          <button type="submit" disabled={busy}>
            Apply
          </button>
          <button
            type="button"
            class="secondary"
            disabled={busy || clip.idx === 0}
            aria-label={`Move ${label} up`}
            onClick={() => void run(() => actions.update(clip, { idx: clip.idx - 1 }))}
          >
            Up
          </button>
          <button
            type="button"
            class="secondary"
            disabled={busy || clip.idx >= count - 1}
            aria-label={`Move ${label} down`}
            onClick={() => void run(() => actions.update(clip, { idx: clip.idx + 1 }))}
          >
            Down
          </button>
          <button
            type="button"
            class="danger"
            disabled={busy}
            aria-label={`Remove ${label}`}
            onClick={() => void run(() => actions.remove(clip))}
          >
            Remove
          </button>
        </div>
      </form>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </li>
  );
}

/** The four tracks of one video, each clip with reorder, trim, duration, volume and remove. */
export function Timeline(props: { clips: Clip[]; assets: Asset[]; actions: TimelineActions }) {
  const byId = new Map(props.assets.map((a) => [a.id, a]));
  return (
    <section class="timeline" aria-labelledby="timeline-title">
      <h2 id="timeline-title">Timeline</h2>
      {TRACKS.map((track) => {
        const clips = props.clips.filter((c) => c.track === track).sort((a, b) => a.idx - b.idx);
        return (
          <section class={'track track-' + track} key={track} aria-label={`${TRACK_NAMES[track]} track`}>
            <h3>
              {TRACK_NAMES[track]} <span class="hint">({clips.length})</span>
            </h3>
            {clips.length === 0 ? (
              <p class="hint">Empty. Add an asset from the library.</p>
            ) : (
              <ol class="clips">
                {clips.map((c) => (
                  <ClipRow
                    key={c.id}
                    clip={c}
                    asset={byId.get(c.asset_id)}
                    count={clips.length}
                    actions={props.actions}
                  />
                ))}
              </ol>
            )}
          </section>
        );
      })}
    </section>
  );
}
