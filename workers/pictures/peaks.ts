// Reads the peaks of a waveform back from what `waveformArgs` (picture-args.ts) has ffmpeg write: for every
// slice of the sound a `frame:` line, then its peak level in dBFS (`-inf` for a silent slice):
//
//   frame:0    pts:0       pts_time:0
//   lavfi.astats.Overall.Peak_level=-6.020600
//
// A peak is the largest absolute sample of its slice as a share of full scale: 0 (silence) to 1.
import { PEAK_KEY } from './picture-args.ts';

/** What a waveform file holds (docs/editor.md, Pictures of assets). */
export interface Waveform {
  peaks_per_second: number;
  peaks: number[];
}

/** Digits a peak keeps: 1/10 000 of full scale is far below what a waveform can draw. */
const PEAK_DECIMALS = 4;

/** A level in dBFS as a share of full scale, clamped to 0..1 (a decoder's float samples may pass 1). */
export function peakFromDecibels(decibels: number): number {
  if (Number.isNaN(decibels) || decibels === -Infinity) return 0;
  const linear = Math.min(1, 10 ** (decibels / 20));
  return Number(linear.toFixed(PEAK_DECIMALS));
}

/** ffmpeg's spelling of a level: a decimal, or `-inf`/`inf`/`nan` as C's printf writes them. */
function decibelsOf(text: string): number {
  const value = text.trim().toLowerCase();
  if (value === '-inf') return -Infinity;
  if (value === 'inf') return Infinity;
  return Number(value); // `nan` and anything unreadable: NaN, a silent slice
}

/**
 * The peaks of every slice, in order, from the printed metadata. A slice whose level line is missing counts
 * as silent, so the peaks stay aligned with time however the text was cut.
 */
export function parsePeaks(text: string): number[] {
  const peaks: number[] = [];
  const prefix = `${PEAK_KEY}=`;
  for (const line of text.split('\n')) {
    if (line.startsWith('frame:')) peaks.push(0);
    else if (line.startsWith(prefix) && peaks.length > 0) {
      peaks[peaks.length - 1] = peakFromDecibels(decibelsOf(line.slice(prefix.length)));
    }
  }
  return peaks;
}
