// Integrated loudness (LUFS) as ITU-R BS.1770-4 measures it, which EBU R 128 and the export's `loudnorm` use
// (docs/dashboard.md, the preview player): each channel K-weighted (a high shelf of about +4 dB above 1.5 kHz,
// then a high-pass at about 38 Hz), its mean square taken over 400 ms blocks that start every 100 ms (75 %
// overlap), the channels' powers summed (every channel weighted 1: mono, or left and right), and the blocks
// gated twice — quieter than −70 LUFS, then quieter than 10 LU under the loudness of the blocks left — before
// their mean power is read as −0.691 + 10·log10(power). Pure and streaming: sound is added in pieces (the
// preview renders its mix a piece at a time), each piece carrying on the filters' state and the blocks. And
// the one gain the export's two passes would apply to a programme measured so (workers/export/loudness.ts).
import { LOUDNESS_SILENCE_LUFS, LOUDNESS_TARGET_LUFS } from '../api-types.ts';

/** One second-order section: y = b0·x + b1·x₁ + b2·x₂ − a1·y₁ − a2·y₂. */
export interface Biquad {
  b0: number;
  b1: number;
  b2: number;
  a1: number;
  a2: number;
}

/**
 * The K-weighting filters at `sampleRate`: the standard gives their coefficients at 48 kHz; at another rate
 * they are designed again from the same analogue parameters (as libebur128 does), so that 48 kHz gives the
 * standard's table and other rates the same response.
 */
export function kWeighting(sampleRate: number): [Biquad, Biquad] {
  // The high shelf (the head's acoustic effect).
  const shelfK = Math.tan((Math.PI * 1681.974450955533) / sampleRate);
  const shelfQ = 0.7071752369554196;
  const vh = 10 ** (3.999843853973347 / 20);
  const vb = vh ** 0.4996667741545416;
  const shelfA0 = 1 + shelfK / shelfQ + shelfK * shelfK;
  const shelf: Biquad = {
    b0: (vh + (vb * shelfK) / shelfQ + shelfK * shelfK) / shelfA0,
    b1: (2 * (shelfK * shelfK - vh)) / shelfA0,
    b2: (vh - (vb * shelfK) / shelfQ + shelfK * shelfK) / shelfA0,
    a1: (2 * (shelfK * shelfK - 1)) / shelfA0,
    a2: (1 - shelfK / shelfQ + shelfK * shelfK) / shelfA0,
  };
  // The high-pass (the RLB curve).
  const passK = Math.tan((Math.PI * 38.13547087602444) / sampleRate);
  const passQ = 0.5003270373238773;
  const passA0 = 1 + passK / passQ + passK * passK;
  const highPass: Biquad = {
    b0: 1,
    b1: -2,
    b2: 1,
    a1: (2 * (passK * passK - 1)) / passA0,
    a2: (1 - passK / passQ + passK * passK) / passA0,
  };
  return [shelf, highPass];
}

/** Blocks quieter than this are left out before anything else (BS.1770's absolute gate). */
export const ABSOLUTE_GATE_LUFS = -70;
/** Then blocks more than this far under the loudness of the blocks kept are left out (the relative gate). */
export const RELATIVE_GATE_LU = 10;
/** A block's length and the step between blocks, in seconds. */
const BLOCK_SEC = 0.4;
const STEP_SEC = 0.1;
const STEPS_PER_BLOCK = Math.round(BLOCK_SEC / STEP_SEC);

/** Loudness of a mean power (the −0.691 makes a 997 Hz sine read its level in dB). */
const lufsOf = (power: number): number => -0.691 + 10 * Math.log10(power);

/** Measures the integrated loudness of sound added piece by piece (every piece with the same channels). */
export class LoudnessMeter {
  private readonly filters: [Biquad, Biquad];
  /** Per channel: the two filters' last inputs and outputs (x₁, x₂, y₁, y₂ of each). */
  private readonly state: Float64Array[];
  /** Samples per 100 ms step. */
  private readonly stepLength: number;
  /** The summed power of each finished 100 ms step (its channels' squares added, not yet averaged). */
  private readonly steps: number[] = [];
  private stepSum = 0;
  private stepFilled = 0;

  constructor(
    readonly sampleRate: number,
    readonly channelCount: number,
  ) {
    if (!(sampleRate > 0) || !Number.isInteger(channelCount) || channelCount < 1)
      throw new RangeError('a loudness meter needs a sample rate and at least one channel');
    this.filters = kWeighting(sampleRate);
    this.state = Array.from({ length: channelCount }, () => new Float64Array(8));
    this.stepLength = Math.max(1, Math.round(sampleRate * STEP_SEC));
  }

  /** Adds the next samples: one array per channel, all of one length. */
  add(channels: readonly Float32Array[]): void {
    if (channels.length !== this.channelCount)
      throw new RangeError(`expected ${this.channelCount} channels, got ${channels.length}`);
    const length = channels[0]!.length;
    if (channels.some((channel) => channel.length !== length))
      throw new RangeError('every channel of a piece must be as long');
    // The samples are taken a step at a time: each channel's filtered squares of the step, then the next step.
    let offset = 0;
    while (offset < length) {
      const take = Math.min(length - offset, this.stepLength - this.stepFilled);
      for (let c = 0; c < channels.length; c++)
        this.stepSum += this.filterSquares(channels[c]!, this.state[c]!, offset, offset + take);
      this.stepFilled += take;
      offset += take;
      if (this.stepFilled === this.stepLength) {
        this.steps.push(this.stepSum);
        this.stepSum = 0;
        this.stepFilled = 0;
      }
    }
  }

  /** K-weights `samples[from, to)` on with `state`, answering the sum of the filtered squares. */
  private filterSquares(samples: Float32Array, state: Float64Array, from: number, to: number): number {
    const [s, h] = this.filters;
    // Locals, not the array, in the loop: it runs for every sample of the programme.
    let sx1 = state[0]!;
    let sx2 = state[1]!;
    let sy1 = state[2]!;
    let sy2 = state[3]!;
    let hx1 = state[4]!;
    let hx2 = state[5]!;
    let hy1 = state[6]!;
    let hy2 = state[7]!;
    let sum = 0;
    for (let i = from; i < to; i++) {
      const x = samples[i]!;
      const shelved = s.b0 * x + s.b1 * sx1 + s.b2 * sx2 - s.a1 * sy1 - s.a2 * sy2;
      sx2 = sx1;
      sx1 = x;
      sy2 = sy1;
      sy1 = shelved;
      const passed = h.b0 * shelved + h.b1 * hx1 + h.b2 * hx2 - h.a1 * hy1 - h.a2 * hy2;
      hx2 = hx1;
      hx1 = shelved;
      hy2 = hy1;
      hy1 = passed;
      sum += passed * passed;
    }
    state.set([sx1, sx2, sy1, sy2, hx1, hx2, hy1, hy2]);
    return sum;
  }

  /** The mean power of every whole 400 ms block so far, in time order. */
  private blockPowers(): number[] {
    const blockLength = this.stepLength * STEPS_PER_BLOCK;
    const powers: number[] = [];
    for (let first = 0; first + STEPS_PER_BLOCK <= this.steps.length; first++) {
      let sum = 0;
      for (let k = 0; k < STEPS_PER_BLOCK; k++) sum += this.steps[first + k]!;
      powers.push(sum / blockLength);
    }
    return powers;
  }

  /**
   * The integrated loudness of everything added, in LUFS: −Infinity when no block passes the gates (silence,
   * or less than 400 ms of sound).
   */
  integrated(): number {
    const mean = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
    const audible = this.blockPowers().filter((power) => power > 0 && lufsOf(power) > ABSOLUTE_GATE_LUFS);
    if (audible.length === 0) return -Infinity;
    const relativeGate = lufsOf(mean(audible)) - RELATIVE_GATE_LU;
    const kept = audible.filter((power) => lufsOf(power) > relativeGate);
    return kept.length === 0 ? -Infinity : lufsOf(mean(kept));
  }
}

/** The integrated loudness of whole channels (one array each) at `sampleRate`, in LUFS. */
export function integratedLoudness(channels: readonly Float32Array[], sampleRate: number): number {
  const meter = new LoudnessMeter(sampleRate, channels.length);
  meter.add(channels);
  return meter.integrated();
}

/**
 * The make-up gain in dB for a mix measured at `lufs`: to the export's −14 LUFS, up or down; none for a mix
 * measured under −50 LUFS (near-silence, which the export only limits) or not measured at all.
 */
export function makeupGainDb(lufs: number): number {
  if (!Number.isFinite(lufs) || lufs < LOUDNESS_SILENCE_LUFS) return 0;
  return LOUDNESS_TARGET_LUFS - lufs;
}
