// The Piscina export pool (DESIGN.md §1): so far the pure ffmpeg-argument builders of `export/`; the runner
// and the pool arrive with the rest of the export issue.
export * from './export/index.ts';
