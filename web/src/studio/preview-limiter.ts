// The preview's limiter (docs/dashboard.md, the preview player): WebAudio's DynamicsCompressorNode set hard
// (no knee, ratio 20, 3 ms attack) to hold the mix under −1.5 dBFS, as the export holds an unnormalised mix
// (workers/export/loudness.ts `LIMITER`). The node also raises everything by a make-up gain of its own —
// (1 / the curve's gain at 0 dBFS)^0.6, by the Web Audio spec — about +0.86 dB with these settings, which
// would lift the peaks over the ceiling and the loudness over the target: the mixer undoes it with a gain after
// it. Pure: the numbers; preview-mixer.ts makes the nodes.

/** The compressor's settings. */
export const LIMITER = {
  thresholdDb: -1.5,
  kneeDb: 0,
  ratio: 20,
  attackSec: 0.003,
  releaseSec: 0.05,
} as const;

/**
 * The make-up gain (linear) a hard-knee DynamicsCompressorNode adds with `thresholdDb` and `ratio`: the curve
 * takes 0 dBFS to threshold + (0 − threshold) / ratio, and the node raises its output by the inverse of that
 * gain to the power 0.6.
 */
export function compressorMakeupGain(thresholdDb: number, ratio: number): number {
  const fullRangeDb = thresholdDb >= 0 ? 0 : thresholdDb - thresholdDb / ratio;
  return 10 ** ((-fullRangeDb * 0.6) / 20);
}
