import { useState } from 'preact/hooks';
import { formatSeconds } from '../format.ts';
import {
  CLIP_VOLUME_MAX,
  FADE_MAX_SEC,
  MOTIONS,
  SPEED_MAX,
  SPEED_MIN,
  TEXT_BACKGROUNDS,
  TEXT_MAX_CHARS,
  TEXT_POSITIONS,
  TEXT_STYLES,
  TRANSITION_MAX_SEC,
  TRANSITION_MIN_SEC,
  TRANSITION_TYPES,
  clipKind,
  fieldApplies,
  type AddClipRequest,
  type ApplicableField,
  type Asset,
  type Clip,
  type PatchClipRequest,
  type Track,
  type TransitionIn,
  TRANSITION_DEFAULT_SEC,
} from '../api-types.ts';
import {
  BACKGROUND_OPTIONS,
  MOTION_OPTIONS,
  POSITION_OPTIONS,
  STYLE_OPTIONS,
  TRANSITION_OPTIONS,
} from './clip-looks.ts';
import {
  ColorField,
  NumberField,
  SelectField,
  TextAreaField,
  numberOrNull,
  oneOf,
  useDraft,
} from './fields.tsx';
import { assetName } from './asset-names.ts';

/** The actions the timeline asks the page to run (each with If-Match); true when the change was made. */
export interface TimelineActions {
  add: (body: AddClipRequest) => Promise<boolean>;
  update: (clip: Clip, patch: PatchClipRequest) => Promise<boolean>;
  remove: (clip: Clip) => Promise<boolean>;
}

export const TRACK_NAMES: Record<Track, string> = {
  video: 'Video',
  text: 'Text',
  voice: 'Voice',
  sfx: 'Sound effects',
  music: 'Music',
};

/** What a clip shows as its name: a text clip its text, any other its asset's name. */
export function clipTitle(clip: Clip, asset: Asset | undefined): string {
  return clip.track === 'text' ? (clip.text ?? '') : assetName(asset);
}

const sameTransition = (a: TransitionIn | null, b: TransitionIn | null): boolean =>
  a === b || (a !== null && b !== null && a.type === b.type && a.duration_sec === b.duration_sec);

/** The form's values of a clip: every field as the text its input holds. */
function clipValues(clip: Clip): Record<string, string> {
  const text = (n: number | null | undefined): string => (n === null || n === undefined ? '' : String(n));
  return {
    start: text(clip.start_sec),
    trim: text(clip.trim_start_sec),
    duration: text(clip.duration_sec),
    volume: text(clip.volume),
    text: clip.text ?? '',
    style: clip.style ?? 'title',
    position: clip.position ?? '',
    color: (clip.color ?? '#ffffff').toLowerCase(),
    background: clip.background ?? '',
    transition: clip.transition_in?.type ?? '',
    transitionSec: text(clip.transition_in?.duration_sec ?? TRANSITION_DEFAULT_SEC),
    motion: clip.motion ?? 'none',
    speed: text(clip.speed),
    fadeIn: text(clip.fade_in_sec),
    fadeOut: text(clip.fade_out_sec),
  };
}

/**
 * The changes between a clip and its form: only what changed is sent. A blank number keeps the clip's value
 * (null cannot be sent back); a select set to "the style's" sends null. A string is a message to show.
 */
function clipPatch(
  clip: Clip,
  draft: Record<string, string>,
  applies: (field: ApplicableField) => boolean,
): PatchClipRequest | string {
  const patch: PatchClipRequest = {};
  const numbers: [string, 'start_sec' | 'trim_start_sec' | 'duration_sec' | 'volume' | 'speed'][] = [
    ['duration', 'duration_sec'],
  ];
  if (clip.track !== 'video') numbers.push(['start', 'start_sec']);
  if (applies('trim_start_sec')) numbers.push(['trim', 'trim_start_sec']);
  if (applies('volume')) numbers.push(['volume', 'volume']);
  if (applies('speed')) numbers.push(['speed', 'speed']);
  for (const [name, field] of numbers) {
    const n = numberOrNull(draft[name] ?? '');
    if (n === undefined) return 'Enter numbers only.';
    if (n !== null && n !== clip[field]) patch[field] = n;
  }
  for (const [name, field] of [
    ['fadeIn', 'fade_in_sec'],
    ['fadeOut', 'fade_out_sec'],
  ] as const) {
    if (!applies(field)) continue;
    const n = numberOrNull(draft[name] ?? '');
    if (n === undefined) return 'Enter numbers only.';
    if (n !== null && n !== clip[field]) patch[field] = n;
  }
  if (applies('text')) {
    const text = draft.text ?? '';
    if (text !== clip.text) patch.text = text;
    const style = oneOf(TEXT_STYLES, draft.style ?? '');
    if (style && style !== clip.style) patch.style = style;
    const position = oneOf(TEXT_POSITIONS, draft.position ?? '') ?? null;
    if (position !== clip.position) patch.position = position;
    const background = oneOf(TEXT_BACKGROUNDS, draft.background ?? '') ?? null;
    if (background !== clip.background) patch.background = background;
    const color = draft.color ?? '';
    if (color.toLowerCase() !== (clip.color ?? '').toLowerCase()) patch.color = color;
  }
  if (applies('transition_in')) {
    const type = oneOf(TRANSITION_TYPES, draft.transition ?? '');
    let transition: TransitionIn | null = null;
    if (type) {
      const seconds = numberOrNull(draft.transitionSec ?? '');
      if (seconds === undefined) return 'Enter numbers only.';
      transition = { type, duration_sec: seconds ?? TRANSITION_DEFAULT_SEC };
    }
    if (!sameTransition(transition, clip.transition_in)) patch.transition_in = transition;
  }
  if (applies('motion')) {
    const motion = oneOf(MOTIONS, draft.motion ?? '');
    if (motion && motion !== clip.motion) patch.motion = motion;
  }
  return patch;
}

/** One clip's fields (docs/dashboard.md "The timeline"): the studio's inspector shows the selected clip's. */
export function ClipRow(props: {
  clip: Clip;
  asset: Asset | undefined;
  count: number;
  actions: TimelineActions;
}) {
  const { clip, asset, count, actions } = props;
  const [draft, set] = useDraft(clipValues(clip));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const kind = clipKind(clip.track, asset?.kind);
  /** Whether a field applies to this clip; when its asset is not in the library, whether it reads back. */
  const applies = (field: ApplicableField): boolean =>
    kind !== undefined
      ? fieldApplies(field, clip.track, kind)
      : field === 'transition_in'
        ? clip.track === 'video'
        : clip[field] !== null;
  const run = async (action: () => Promise<unknown>): Promise<void> => {
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
    const patch = clipPatch(clip, draft, applies);
    if (typeof patch === 'string') {
      setError(patch);
      return;
    }
    setError(null);
    if (Object.keys(patch).length === 0) return;
    void run(() => actions.update(clip, patch));
  };
  const label = `${TRACK_NAMES[clip.track]} clip ${clip.idx + 1}`;
  const id = 'clip-' + clip.id;
  const field = (name: string, text: string) => ({
    id: `${id}-${name}`,
    label: text,
    value: draft[name] ?? '',
    onInput: (value: string) => set(name, value),
  });
  const fade = { min: 0, max: FADE_MAX_SEC } as const;
  return (
    <li class="clip">
      <div class="clip-head">
        <span class="clip-no">{clip.idx + 1}</span>
        <strong class={clip.track === 'text' ? 'clip-text' : undefined}>{clipTitle(clip, asset)}</strong>
        <span class="hint">
          {kind ?? '?'}
          {clip.duration_sec !== null ? ` · ${formatSeconds(clip.duration_sec)}` : ''}
          {clip.transition_in
            ? ` · ${clip.transition_in.type} ${formatSeconds(clip.transition_in.duration_sec)} in`
            : ''}
        </span>
      </div>
      <form class="clip-form" onSubmit={apply} aria-label={label}>
        {applies('text') && (
          <>
            <TextAreaField {...field('text', 'Text')} maxLength={TEXT_MAX_CHARS} required />
            <SelectField {...field('style', 'Style')} options={STYLE_OPTIONS} />
            <SelectField {...field('position', 'Position')} options={POSITION_OPTIONS} />
            <ColorField {...field('color', 'Color')} />
            <SelectField {...field('background', 'Background')} options={BACKGROUND_OPTIONS} />
          </>
        )}
        {clip.track !== 'video' && (
          <NumberField {...field('start', 'Start (s)')} min={0} placeholder="after previous" />
        )}
        {applies('trim_start_sec') && <NumberField {...field('trim', 'Trim start (s)')} min={0} />}
        <NumberField {...field('duration', 'Duration (s)')} min={0} placeholder="to the end" />
        {applies('volume') && (
          <NumberField {...field('volume', 'Volume')} min={0} max={CLIP_VOLUME_MAX} step={0.05} />
        )}
        {applies('transition_in') && (
          <>
            <SelectField {...field('transition', 'Transition')} options={TRANSITION_OPTIONS} />
            <NumberField
              {...field('transitionSec', 'Transition length (s)')}
              min={TRANSITION_MIN_SEC}
              max={TRANSITION_MAX_SEC}
              disabled={!draft.transition}
            />
          </>
        )}
        {applies('motion') && <SelectField {...field('motion', 'Motion')} options={MOTION_OPTIONS} />}
        {applies('speed') && <NumberField {...field('speed', 'Speed')} min={SPEED_MIN} max={SPEED_MAX} />}
        {applies('fade_in_sec') && <NumberField {...field('fadeIn', 'Fade in (s)')} {...fade} />}
        {applies('fade_out_sec') && <NumberField {...field('fadeOut', 'Fade out (s)')} {...fade} />}
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
