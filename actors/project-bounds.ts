import {
  clipNumberProblem,
  overlongTransitions,
  timelineChangeAllowed,
  timelineEndSec,
  timelineTooLongMessage,
  type ClipNumbers,
  type ClipSource,
} from '../schemas/clip-bounds.ts';
import { TRANSITION_TOO_LONG_MESSAGE } from '../schemas/clip-effect-fields.ts';
import type { Track } from '../schemas/editor-terms.ts';
import { AppError } from '../src/platform/core/index.ts';
import type { AssetRecord } from './ports/assets-repository.ts';
import type { ClipRecord } from './ports/projects-repository.ts';
import type { ProjectContext } from './project-commit.ts';

// The project actor's share of the bounds (docs/editor.md#bounds): whatever path a change came by (a route, an
// agent's tool, a scene being placed), the actor checks it against the whole timeline before committing it.

/** 400 with the first clip number of `numbers` out of its bound on `track`. */
export function checkClipNumbers(track: Track, numbers: ClipNumbers): void {
  const problem = clipNumberProblem(track, numbers);
  if (problem !== null) throw new AppError('bad_request', problem);
}

function clipSource(asset: AssetRecord): ClipSource {
  const duration = asset.metadata.duration_sec;
  return { kind: asset.kind, durationSec: typeof duration === 'number' ? duration : null };
}

/**
 * Checks what a change does to `videoId`'s whole timeline, going from `before` to `after` (the project's
 * clips), and answers 400 before anything is committed:
 * - `transition_in is longer than half of a clip it joins` when a video-track clip's transition would be longer
 *   than half of itself or of the clip before it — whatever the change: a new or longer transition, a trim, a
 *   shorter clip, a reorder or a removal that gives a transition a new neighbour. Transitions that were already
 *   too long before the change (an asset re-measured) do not block it;
 * - `timeline would be longer than <TIMELINE_MAX_SEC> seconds` (clip-bounds.ts, transitions overlapping).
 */
export async function checkTimeline(
  context: ProjectContext,
  videoId: string,
  before: readonly ClipRecord[],
  after: readonly ClipRecord[],
  /** The clip whose `transition_in` the change sets: judged even when it was too long before. */
  setsTransitionOf?: string,
): Promise<void> {
  const assets = await context.ports.assets.listByProject(context.key);
  const sources = new Map(assets.map((asset) => [asset.id, clipSource(asset)]));
  const sourceOf = (assetId: string) => sources.get(assetId);
  const own = (clips: readonly ClipRecord[]) => clips.filter((clip) => clip.video_id === videoId);
  const wasOverlong = overlongTransitions(own(before), sourceOf);
  for (const id of overlongTransitions(own(after), sourceOf)) {
    if (!wasOverlong.has(id) || id === setsTransitionOf)
      throw new AppError('bad_request', TRANSITION_TOO_LONG_MESSAGE);
  }
  const maxSec = context.ports.timelineMaxSec;
  const lengthOf = (clips: readonly ClipRecord[]) => timelineEndSec(own(clips), sourceOf);
  if (!timelineChangeAllowed(lengthOf(before), lengthOf(after), maxSec)) {
    throw new AppError('bad_request', timelineTooLongMessage(maxSec));
  }
}
