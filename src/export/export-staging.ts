import type { AssetRecord, ClipRecord, ProjectRecord, VideoRecord } from '../../actors/index.ts';
import type { ExportSource, ExportWorkspace } from '../../workers/index.ts';

/** Sources copied and probed at once. */
const STAGING_CONCURRENCY = 3;

/** The sources of one export being staged into its work folder. */
export interface Staging {
  /** Each staged source by asset id. */
  sources: Promise<Map<string, ExportSource>>;
  /** Whether staging has ended (a staging cut short by the deadline still writes into the folder). */
  readonly settled: boolean;
}

/** Starts staging every source the video's clips use; clips whose asset is gone are left out by the plan. */
export function startStaging(
  workspace: ExportWorkspace,
  project: ProjectRecord,
  video: VideoRecord,
  library: AssetRecord[],
): Staging {
  const sources = stageSources(workspace, project, video, library);
  const staging = { sources, settled: false };
  void sources.then(
    () => (staging.settled = true),
    () => (staging.settled = true),
  );
  return staging;
}

async function stageSources(
  workspace: ExportWorkspace,
  project: ProjectRecord,
  video: VideoRecord,
  library: AssetRecord[],
): Promise<Map<string, ExportSource>> {
  const assets = new Map(library.map((asset) => [asset.id, asset]));
  // Text clips have no asset (null): nothing to stage for them.
  const assetIdOf = (clip: ClipRecord): string[] => {
    const assetId: string | null = clip.asset_id;
    return assetId === null ? [] : [assetId];
  };
  const assetIds = [
    ...new Set(project.clips.filter((clip) => clip.video_id === video.id).flatMap(assetIdOf)),
  ];
  const sources = new Map<string, ExportSource>();
  // A few at a time: each is a copy and an ffprobe, mostly waiting, and a timeline holds a few dozen at most.
  const queue = [...assetIds];
  const stageNext = async (): Promise<void> => {
    for (let assetId = queue.shift(); assetId !== undefined; assetId = queue.shift()) {
      const asset = assets.get(assetId);
      if (!asset) continue;
      sources.set(assetId, await workspace.stage(asset.media_id));
    }
  };
  await Promise.all(Array.from({ length: STAGING_CONCURRENCY }, stageNext));
  return sources;
}
