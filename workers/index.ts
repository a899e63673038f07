// The Piscina export pool (DESIGN.md §1): pure ffmpeg-graph builders and a thin runner arrive with the export
// issue. Nothing runs here yet.
export {};
