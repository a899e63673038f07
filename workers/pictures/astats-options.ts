// Whether the resolved ffmpeg's astats can measure the peak level alone (`measure_overall`, ffmpeg 4.4 and
// later). Measuring only that is about half the work of every statistic astats knows, which older builds
// compute whatever is asked: their waveforms take longer and come out the same.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Longest wait for `ffmpeg -h filter=astats` (it answers in milliseconds; a hung binary must not hold pictures). */
const HELP_TIMEOUT_MS = 10_000;

const known = new Map<string, Promise<boolean>>();

/** True when astats takes `measure_overall` and `measure_perchannel`; asked once per binary and process. */
export function astatsMeasuresPeakAlone(ffmpegPath: string): Promise<boolean> {
  let answer = known.get(ffmpegPath);
  if (!answer) {
    answer = run(ffmpegPath, ['-hide_banner', '-h', 'filter=astats'], {
      encoding: 'utf8',
      timeout: HELP_TIMEOUT_MS,
      killSignal: 'SIGKILL',
      maxBuffer: 1024 * 1024,
    }).then(
      ({ stdout }) => /^\s*measure_overall\s/m.test(stdout) && /^\s*measure_perchannel\s/m.test(stdout),
      () => false,
    );
    known.set(ffmpegPath, answer);
  }
  return answer;
}
