export { resolveFfmpeg, fontFile, isRecentFfmpegVersion, type FfmpegBinaries } from './ffmpeg-path.ts';
