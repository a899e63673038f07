import { resolveFfmpeg, type Config, type Feature, type Platform } from '../platform/index.ts';
import type { AssetsRepository, ProjectCommands } from '../../actors/index.ts';
import { createAssetPictures, type AssetPictures } from './asset-pictures.ts';

/**
 * The pictures of assets (docs/editor.md, Pictures of assets) as a feature of their own, wired before the
 * slices that create assets (the export, the editor), which take its `pictures.commands`, and stopped after
 * them: its running ffmpeg children are killed and awaited last.
 */
export function assetPicturesFeature(
  config: Pick<Config, 'ffmpegPath' | 'ffprobePath'>,
  platform: Platform & { projects: ProjectCommands; repositories: { assets: AssetsRepository } },
): Feature & { pictures: AssetPictures } {
  const ffmpeg = resolveFfmpeg({ ffmpegPath: config.ffmpegPath, ffprobePath: config.ffprobePath });
  const pictures = createAssetPictures({
    commands: platform.projects,
    assets: platform.repositories.assets,
    store: platform.store,
    mediaUrl: platform.mediaUrl,
    ffmpegPath: ffmpeg.ffmpeg,
    ffprobePath: ffmpeg.ffprobe,
    log: platform.log,
  });
  return {
    pictures,
    routes: [],
    async start() {},
    stop: () => pictures.stop(),
  };
}
