import {
  CLIP_DURATION_MAX_SEC,
  CLIP_OFFSET_MAX_SEC,
  atMostMessage,
  type ClipNumbers,
} from './clip-bounds.ts';
import type { Track } from './editor-terms.ts';
import type { FieldRule } from './validate.ts';

// The upper bounds of a clip's numbers as request rules (docs/editor.md#bounds), shared by the clip routes and
// the agents' `add_clip` / `update_clip`. They answer first, in the order of the fields; the project actor
// checks the same bounds again (clip-bounds.ts) whatever the path. A value too large for a double (JSON's
// `1e400`) reaches these rules as Infinity and is refused like any number above its bound.

/** How long a clip may be, in words (schema descriptions: the OpenAPI document, the agents' tools). */
export const DURATION_BOUNDS = `at most ${CLIP_DURATION_MAX_SEC.video} on the video track, ${CLIP_DURATION_MAX_SEC.music} on audio tracks`;

type Numbers = Pick<ClipNumbers, 'start_sec' | 'trim_start_sec' | 'duration_sec'>;

/** The clip a change applies to: its track sets the `duration_sec` bound (undefined: not known here). */
export interface ClipTarget {
  track: Track | undefined;
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
  return bounds.map((max) => ({
    field: 'duration_sec',
    check: (body, context) => {
      const track = trackOf(body, context);
      // A clip whose track is unknown here (an id that names no clip) is held to the largest bound; the
      // actor answers the rest.
      const bound = track === undefined ? largest : CLIP_DURATION_MAX_SEC[track];
      return bound !== max || within(body.duration_sec, max);
    },
    message: atMostMessage('duration_sec', max),
    judgesNonFinite: true,
  }));
};

/** `POST .../clips` and `add_clip`: the body names the track. */
export const addClipRules = <T extends Numbers & { track: Track }>(): FieldRule<T>[] => [
  ...offsetRules<T, unknown>(),
  ...durationRules<T, unknown>((body) => body.track),
];

/** `PATCH .../clips/<id>` and `update_clip`: the track is the clip's, given as the check's context. */
export const patchClipRules = <T extends Numbers>(): FieldRule<T, ClipTarget>[] => [
  ...offsetRules<T, ClipTarget>(),
  ...durationRules<T, ClipTarget>((_body, context) => context?.track),
];
