import {
  clipNumberProblem,
  timelineChangeAllowed,
  timelineEndSec,
  timelineTooLongMessage,
  type ClipNumbers,
  type ClipSource,
} from '../schemas/clip-bounds.ts';
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
 * 400 `timeline would be longer than <TIMELINE_MAX_SEC> seconds` when going from `before` to `after` (the
 * project's clips) would take `videoId`'s timeline past the bound; nothing is committed then.
 */
export async function checkTimelineLength(
  context: ProjectContext,
  videoId: string,
  before: readonly ClipRecord[],
  after: readonly ClipRecord[],
): Promise<void> {
  const assets = await context.ports.assets.listByProject(context.key);
  const sources = new Map(assets.map((asset) => [asset.id, clipSource(asset)]));
  const lengthOf = (clips: readonly ClipRecord[]) =>
    timelineEndSec(
      clips.filter((clip) => clip.video_id === videoId),
      (assetId) => sources.get(assetId),
    );
  const maxSec = context.ports.timelineMaxSec;
  if (!timelineChangeAllowed(lengthOf(before), lengthOf(after), maxSec)) {
    throw new AppError('bad_request', timelineTooLongMessage(maxSec));
  }
}
