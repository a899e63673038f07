import {
  CLIP_DURATION_MAX_SEC,
  CLIP_DURATION_MIN_SEC,
  CLIP_OFFSET_MAX_SEC,
  atLeastMessage,
  atMostMessage,
  type ClipNumbers,
} from './clip-bounds.ts';
import { APPLICABLE_FIELDS, clipKind, fieldProblem, type ApplicableField } from './clip-applies.ts';
import type { AssetKind, Track } from './editor-terms.ts';
import type { FieldRule } from './validate.ts';

// The upper bounds of a clip's numbers as request rules (docs/editor.md#bounds), shared by the clip routes and
// the agents' `add_clip` / `update_clip`. They answer first, in the order of the fields; the project actor
// checks the same bounds again (clip-bounds.ts) whatever the path. A value too large for a double (JSON's
// `1e400`) reaches these rules as Infinity and is refused like any number above its bound.

/** How long a clip may be, in words (schema descriptions: the OpenAPI document, the agents' tools). */
export const DURATION_BOUNDS = `at most ${CLIP_DURATION_MAX_SEC.video} on the video track, ${CLIP_DURATION_MAX_SEC.music} on audio tracks, ${CLIP_DURATION_MIN_SEC.text} to ${CLIP_DURATION_MAX_SEC.text} on the text track`;

type Numbers = Pick<ClipNumbers, 'start_sec' | 'trim_start_sec' | 'duration_sec'>;

/**
 * The clip a change applies to, as far as the caller knows it (undefined: not known here): its track sets the
 * `duration_sec` bound, its asset's kind which fields apply (clip-applies.ts). A new clip's track is the body's;
 * its `kind` is the kind of the asset the body names.
 */
export interface ClipTarget {
  track: Track | undefined;
  kind?: AssetKind | undefined;
}

const within = (value: number | null | undefined, max: number) =>
  value === undefined || value === null || value <= max;

const offsetRules = <T extends Numbers, Context>(): FieldRule<T, Context>[] =>
  (['start_sec', 'trim_start_sec'] as const).map((field) => ({
    field,
    check: (body) => within(body[field], CLIP_OFFSET_MAX_SEC),
    message: atMostMessage(field, CLIP_OFFSET_MAX_SEC),
    judgesNonFinite: true,
  }));

/** One rule per distinct `duration_sec` bound, for the tracks that have it. */
const durationRules = <T extends Numbers, Context>(
  trackOf: (body: T, context: Context) => Track | undefined,
): FieldRule<T, Context>[] => {
  const bounds = [...new Set(Object.values(CLIP_DURATION_MAX_SEC))];
  const largest = Math.max(...bounds);
  const shortest = Object.entries(CLIP_DURATION_MIN_SEC).map(([track, min]) => ({
    field: 'duration_sec',
    check: (body: T, context: Context) =>
      trackOf(body, context) !== track ||
      body.duration_sec === undefined ||
      body.duration_sec === null ||
      body.duration_sec >= min,
    message: atLeastMessage('duration_sec', min),
  }));
  return [
    ...shortest,
    ...bounds.map((max) => ({
      field: 'duration_sec',
      check: (body: T, context: Context) => {
        const track = trackOf(body, context);
        // A clip whose track is unknown here (an id that names no clip) is held to the largest bound; the
        // actor answers the rest.
        const bound = track === undefined ? largest : CLIP_DURATION_MAX_SEC[track];
        return bound !== max || within(body.duration_sec, max);
      },
      message: atMostMessage('duration_sec', max),
      judgesNonFinite: true,
    })),
  ];
};

/** `POST .../clips` and `add_clip`: the body names the track. */
export const addClipRules = <T extends Numbers & { track: Track }>(): FieldRule<T, ClipTarget>[] => [
  ...offsetRules<T, ClipTarget>(),
  ...durationRules<T, ClipTarget>((body) => body.track),
];

/** `PATCH .../clips/<id>` and `update_clip`: the track is the clip's, given as the check's context. */
export const patchClipRules = <T extends Numbers>(): FieldRule<T, ClipTarget>[] => [
  ...offsetRules<T, ClipTarget>(),
  ...durationRules<T, ClipTarget>((_body, context) => context?.track),
];

type FieldsOf<Fields extends ApplicableField> = Partial<Record<Fields, unknown>>;

/** One rule per field of `fields`: `fieldProblem` of clip-applies.ts answers its message. */
const applicabilityRules = <T, Fields extends ApplicableField>(
  fields: readonly Fields[],
  target: (body: T, context: ClipTarget | undefined) => { track: Track | undefined; kind?: AssetKind },
  adding: boolean,
): FieldRule<T, ClipTarget>[] =>
  fields.map((field) => {
    const problem = (body: T, context: ClipTarget | undefined) => {
      const { track, kind } = target(body, context);
      if (track === undefined) return null;
      const value = (body as FieldsOf<Fields>)[field];
      return fieldProblem(field, value, track, clipKind(track, kind), adding);
    };
    return {
      field,
      check: (body: T, context: ClipTarget) => problem(body, context) === null,
      message: `${field} does not apply to this clip`,
      messageOf: (body: T, context: ClipTarget) => problem(body, context) ?? '',
    };
  });

/** The new-clip fields whose use depends on the clip, in request order (`asset_id` first). */
const ADD_FIELDS = APPLICABLE_FIELDS;
/** A clip's change cannot name another asset. */
const PATCH_FIELDS = APPLICABLE_FIELDS.filter((field) => field !== 'asset_id');

/**
 * `POST .../clips` and `add_clip`: which fields apply to the new clip (clip-applies.ts) — `asset_id` required
 * off the text track and absent on it, `text` required on it, and every other field given only where it
 * applies. The context is the kind of the asset the body names (unknown: only the track is judged).
 */
export const addClipFieldRules = <T extends { track: Track } & FieldsOf<ApplicableField>>(): FieldRule<
  T,
  ClipTarget
>[] =>
  applicabilityRules<T, ApplicableField>(
    ADD_FIELDS,
    (body, context) => ({ track: body.track, kind: context?.kind }),
    true,
  );

/** `PATCH .../clips/<id>` and `update_clip`: which fields apply to the clip (the context: its track and kind). */
export const patchClipFieldRules = <T extends FieldsOf<ApplicableField>>(): FieldRule<T, ClipTarget>[] =>
  applicabilityRules<T, ApplicableField>(
    PATCH_FIELDS,
    (_body, context) => ({ track: context?.track, kind: context?.kind }),
    false,
  );
