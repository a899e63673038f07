import type { AssetKind, Track } from './editor-terms.ts';
import { TEXT_MAX_CHARS, TEXT_MIN_CHARS } from './timeline-terms.ts';

// Which clip fields apply to which clips (docs/editor.md, Which field applies to which clip): pure rules,
// shared by the request checks, the agents' tools, the project actor and the clip views. A field that does not
// apply is refused (`<field> does not apply to <kind> clips`) and reads back null.

/** What a clip is, for these rules: its asset's kind, or `text` (a text clip has no asset). */
export type ClipKind = AssetKind | 'text';

/** The fields whose use depends on the clip (the rest — `idx`, `start_sec`, `duration_sec` — apply to every clip). */
/** The second edition's fields: what a clip looks and sounds like (docs/editor.md, Clip). */
export const LOOK_FIELDS = [
  'text',
  'style',
  'position',
  'color',
  'background',
  'transition_in',
  'motion',
  'speed',
  'fade_in_sec',
  'fade_out_sec',
] as const;
export const APPLICABLE_FIELDS = ['asset_id', 'trim_start_sec', 'volume', ...LOOK_FIELDS] as const;
export type ApplicableField = (typeof APPLICABLE_FIELDS)[number];

/** A text clip's own fields. */
export const TEXT_FIELDS = ['text', 'style', 'position', 'color', 'background'] as const;

/** The kind of a clip on `track` whose asset is `assetKind` (undefined: not known here). */
export function clipKind(track: Track, assetKind: AssetKind | undefined): ClipKind | undefined {
  return track === 'text' ? 'text' : assetKind;
}

/**
 * Whether `field` applies to a clip of `kind` on `track`:
 * - `asset_id`, `trim_start_sec`, `volume`: every clip with an asset (not text clips);
 * - `text`, `style`, `position`, `color`, `background`: text clips only;
 * - `transition_in`: every clip of the `video` track;
 * - `motion`: image clips of the `video` track; `speed`: video clips of the `video` track;
 * - `fade_in_sec`, `fade_out_sec`: clips with sound — a video clip (its own sound, on any track; a video without
 *   a sound stream takes them too, and they change nothing), a `voice`, `sfx` or `music` clip — and text clips
 *   (opacity fades). Not image clips.
 */
export function fieldApplies(field: ApplicableField, track: Track, kind: ClipKind): boolean {
  switch (field) {
    case 'asset_id':
    case 'trim_start_sec':
    case 'volume':
      return kind !== 'text';
    case 'text':
    case 'style':
    case 'position':
    case 'color':
    case 'background':
      return kind === 'text';
    case 'transition_in':
      return track === 'video' && kind !== 'text';
    case 'motion':
      return track === 'video' && kind === 'image';
    case 'speed':
      return track === 'video' && kind === 'video';
    case 'fade_in_sec':
    case 'fade_out_sec':
      return kind !== 'image';
  }
}

/** The answer to a field given to a clip it does not apply to. */
export const doesNotApplyMessage = (field: ApplicableField, kind: ClipKind) =>
  `${field} does not apply to ${kind} clips`;
/** The answer to a clip of the video, voice, sfx or music track without an asset. */
export const ASSET_ID_REQUIRED_MESSAGE = 'asset_id is required';
/** The answer to a `text` that is not 1–500 characters, or missing on a new text clip. */
export const TEXT_MESSAGE = `text must be ${TEXT_MIN_CHARS} to ${TEXT_MAX_CHARS} characters`;

/**
 * The problem of one field of a clip's request, beyond its own value's: `asset_id` is required off the text
 * track (`adding`: a new clip) and must be absent or null on it; a new text clip needs `text`; any other field
 * given (present and not null) must apply to the clip. `kind` undefined (the asset is not known here): only
 * what the track decides is judged.
 */
export function fieldProblem(
  field: ApplicableField,
  value: unknown,
  track: Track,
  kind: ClipKind | undefined,
  adding: boolean,
): string | null {
  if (field === 'asset_id') {
    const given = value !== undefined && value !== null;
    if (track === 'text') return given ? doesNotApplyMessage(field, 'text') : null;
    return adding && !given ? ASSET_ID_REQUIRED_MESSAGE : null;
  }
  if (field === 'text' && adding && track === 'text' && value === undefined) return TEXT_MESSAGE;
  if (value === undefined || value === null || kind === undefined) return null;
  return fieldApplies(field, track, kind) ? null : doesNotApplyMessage(field, kind);
}

/**
 * The first problem (`fieldProblem`) of the fields of `given`, in `APPLICABLE_FIELDS` order — the order of the
 * clip request tables — or null.
 */
export function clipFieldsProblem(
  given: Readonly<Partial<Record<ApplicableField, unknown>>>,
  track: Track,
  kind: ClipKind | undefined,
  adding: boolean,
): string | null {
  for (const field of APPLICABLE_FIELDS) {
    const problem = fieldProblem(field, given[field], track, kind, adding);
    if (problem !== null) return problem;
  }
  return null;
}
