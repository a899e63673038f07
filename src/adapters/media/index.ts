export * from './completeness.ts';
export * from './export-probe.ts';
export * from './ffmpeg-path.ts';
export * from './header-limits.ts';
export * from './media-intake.ts';
export * from './probe-pool.ts';
export * from './probe.ts';
export * from './sniff.ts';
