export * from './ffmpeg-path.ts';
