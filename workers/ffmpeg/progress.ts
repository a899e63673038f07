// ffmpeg's `-progress` output as export progress. ffmpeg writes a block of `key=value` lines per status
// period, ending with `progress=continue`, and a last one with `progress=end`:
//
//   frame=57
//   out_time_us=1900000
//   out_time_ms=1900000      ← microseconds too, a historical misnomer ffmpeg keeps for compatibility
//   out_time=00:00:01.900000
//   progress=continue
//
// A stateful parser rather than a function over all the text so far: stdout arrives in chunks cut anywhere
// (mid-line, mid-number), and keeping only the unfinished last line makes each chunk O(its length) instead of
// re-reading a whole encode's output on every chunk.

/** One step of an export's progress: at each `progress=` line of ffmpeg. */
export interface ProgressUpdate {
  /** Share of the output written, 0..1; never goes back. */
  fraction: number;
  /** ffmpeg said `progress=end` (it has finished writing; its exit code still decides success). */
  done: boolean;
}

/** `HH:MM:SS.ffffff` (ffmpeg's `out_time`) in seconds, or undefined. */
function clockSeconds(value: string): number | undefined {
  const match = /^(-?)(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(value);
  if (!match) return undefined;
  const seconds = Number(match[2]) * 3600 + Number(match[3]) * 60 + Number(match[4]);
  return match[1] ? -seconds : seconds;
}

/** Turns chunks of ffmpeg's `-progress` output into progress updates for an output of `totalSec` seconds. */
export class ProgressParser {
  private partial = '';
  /** Output time of the current block, from its best key: `out_time_us`, then `out_time_ms`, then `out_time`. */
  private blockSec: { value: number; rank: number } | undefined;
  private fraction = 0;
  private readonly totalSec: number;

  constructor(totalSec: number) {
    this.totalSec = totalSec;
  }

  /** Feeds one chunk of stdout; returns an update for each block the chunk completes. */
  push(chunk: string): ProgressUpdate[] {
    const lines = (this.partial + chunk).split('\n');
    this.partial = lines.pop() ?? '';
    const updates: ProgressUpdate[] = [];
    for (const line of lines) {
      const update = this.line(line.trim());
      if (update) updates.push(update);
    }
    return updates;
  }

  private line(line: string): ProgressUpdate | undefined {
    const eq = line.indexOf('=');
    if (eq <= 0) return undefined;
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    if (key === 'progress') return this.finishBlock(value === 'end');
    const rank = ['out_time_us', 'out_time_ms', 'out_time'].indexOf(key);
    if (rank < 0) return undefined;
    // Early blocks say `N/A`, and some builds a negative time before the first packet: neither is progress.
    const seconds =
      key === 'out_time' ? clockSeconds(value) : /^-?\d+$/.test(value) ? Number(value) / 1e6 : NaN;
    if (seconds === undefined || !Number.isFinite(seconds)) return undefined;
    if (!this.blockSec || rank < this.blockSec.rank) this.blockSec = { value: seconds, rank };
    return undefined;
  }

  private finishBlock(done: boolean): ProgressUpdate {
    if (this.blockSec && this.totalSec > 0) {
      const fraction = Math.min(1, Math.max(0, this.blockSec.value / this.totalSec));
      this.fraction = Math.max(this.fraction, fraction);
    }
    this.blockSec = undefined;
    if (done) this.fraction = 1;
    return { fraction: this.fraction, done };
  }
}

/** Progress updates in a complete piece of `-progress` text (an unfinished last line is ignored). */
export function parseProgress(text: string, totalSec: number): ProgressUpdate[] {
  return new ProgressParser(totalSec).push(text);
}
