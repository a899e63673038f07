// The loudness meter of the preview (web/src/studio/loudness.ts) against ITU-R BS.1770-4 and the EBU's
// test signals for it (EBU Tech 3341, cases 1–5: 1 kHz stereo sines of known level, with quiet passages the
// gates must leave out), and the make-up gain the preview draws from it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  integratedLoudness,
  kWeighting,
  LoudnessMeter,
  makeupGainDb,
} from '../../web/src/studio/loudness.ts';
import { compressorMakeupGain, LIMITER } from '../../web/src/studio/preview-limiter.ts';

/** One passage of a test signal: a sine's peak level in dBFS (0 dBFS: amplitude 1) for some seconds. */
interface Passage {
  dbfs: number;
  sec: number;
}

/**
 * A sine of `frequency` through the passages (its phase running on across them), in `channels` channels: the
 * same sine in each, or in the first only when `onlyFirst`.
 */
function sine(
  passages: Passage[],
  { rate = 48_000, frequency = 1000, channels = 2, onlyFirst = false } = {},
): Float32Array[] {
  const total = passages.reduce((sum, p) => sum + Math.round(p.sec * rate), 0);
  const tone = new Float32Array(total);
  let at = 0;
  for (const passage of passages) {
    const amplitude = 10 ** (passage.dbfs / 20);
    const end = at + Math.round(passage.sec * rate);
    for (; at < end; at++) tone[at] = amplitude * Math.sin((2 * Math.PI * frequency * at) / rate);
  }
  return Array.from({ length: channels }, (_, c) => (c === 0 || !onlyFirst ? tone : new Float32Array(total)));
}

const near = (actual: number, expected: number, within: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= within, `${what}: ${actual.toFixed(3)} LUFS, not ${expected}`);

describe('the loudness meter (BS.1770)', () => {
  it("has the standard's K-weighting coefficients at 48 kHz", () => {
    const [shelf, highPass] = kWeighting(48_000);
    const expected = {
      shelf: [1.53512485958697, -2.69169618940638, 1.19839281085285, -1.69065929318241, 0.73248077421585],
      highPass: [1, -2, 1, -1.99004745483398, 0.99007225036621],
    };
    const actual = {
      shelf: [shelf.b0, shelf.b1, shelf.b2, shelf.a1, shelf.a2],
      highPass: [highPass.b0, highPass.b1, highPass.b2, highPass.a1, highPass.a2],
    };
    for (const key of ['shelf', 'highPass'] as const)
      actual[key].forEach((value, i) => near(value, expected[key][i]!, 1e-6, `${key} coefficient ${i}`));
  });

  it('reads a 0 dBFS 997 Hz sine in one channel of two as −3.01 LUFS, and in both as 0', () => {
    const one = sine([{ dbfs: 0, sec: 5 }], { frequency: 997, onlyFirst: true });
    near(integratedLoudness(one, 48_000), -3.01, 0.02, 'one channel');
    const both = sine([{ dbfs: 0, sec: 5 }], { frequency: 997 });
    near(integratedLoudness(both, 48_000), 0, 0.02, 'both channels');
    // Mono is one channel weighted 1, as the left one alone.
    near(integratedLoudness([one[0]!], 48_000), -3.01, 0.02, 'mono');
  });

  it('reads EBU Tech 3341 cases 1 and 2: steady sines at −23 and −33 dBFS', () => {
    near(integratedLoudness(sine([{ dbfs: -23, sec: 20 }]), 48_000), -23, 0.1, 'case 1');
    near(integratedLoudness(sine([{ dbfs: -33, sec: 20 }]), 48_000), -33, 0.1, 'case 2');
  });

  it('gates as case 3 and 4 ask: quiet and near-silent passages around −23 dBFS leave it at −23', () => {
    const case3 = sine([
      { dbfs: -36, sec: 10 },
      { dbfs: -23, sec: 60 },
      { dbfs: -36, sec: 10 },
    ]);
    near(integratedLoudness(case3, 48_000), -23, 0.1, 'case 3 (the relative gate)');
    const case4 = sine([
      { dbfs: -72, sec: 10 },
      { dbfs: -36, sec: 10 },
      { dbfs: -23, sec: 60 },
      { dbfs: -36, sec: 10 },
      { dbfs: -72, sec: 10 },
    ]);
    near(integratedLoudness(case4, 48_000), -23, 0.1, 'case 4 (both gates)');
  });

  it('averages what passes the gates, as case 5: −26, −20, −26 dBFS read −23', () => {
    const passages = [
      { dbfs: -26, sec: 20 },
      { dbfs: -20, sec: 20.1 },
      { dbfs: -26, sec: 20 },
    ];
    near(integratedLoudness(sine(passages), 48_000), -23, 0.1, 'at 48 kHz');
    // The preview measures at a lower rate: the filters designed for it read the same.
    near(integratedLoudness(sine(passages, { rate: 24_000 }), 24_000), -23, 0.1, 'at 24 kHz');
  });

  it('leaves silence out: a tone then as long a silence reads as the tone alone, but for its edge', () => {
    const tone = integratedLoudness(sine([{ dbfs: -20, sec: 5 }]), 48_000);
    near(tone, -20, 0.02, 'the tone');
    const withSilence = integratedLoudness(
      sine([
        { dbfs: -20, sec: 5 },
        { dbfs: -Infinity, sec: 5 },
      ]),
      48_000,
    );
    // The tone's 47 whole blocks, and the 3 blocks over its end (¾, ½ and ¼ tone), which pass both gates;
    // the silent blocks after them are gated out.
    near(withSilence, tone + 10 * Math.log10((47 + 0.75 + 0.5 + 0.25) / 50), 0.005, 'tone then silence');
    assert.equal(integratedLoudness(sine([{ dbfs: -Infinity, sec: 2 }]), 48_000), -Infinity);
    // Under −70 LUFS is gated out whole.
    assert.equal(integratedLoudness(sine([{ dbfs: -75, sec: 2 }]), 48_000), -Infinity);
    // Less than one 400 ms block has no loudness yet.
    assert.equal(integratedLoudness(sine([{ dbfs: -20, sec: 0.3 }]), 48_000), -Infinity);
  });

  it('measures the same whether the sound comes whole or in odd pieces', () => {
    const rate = 24_000;
    const channels = sine(
      [
        { dbfs: -30, sec: 3 },
        { dbfs: -12, sec: 2 },
      ],
      { rate, frequency: 440 },
    );
    const meter = new LoudnessMeter(rate, 2);
    const length = channels[0]!.length;
    for (let at = 0, piece = 1; at < length; at += piece, piece = (piece * 7 + 333) % 9001)
      meter.add(channels.map((channel) => channel.subarray(at, Math.min(length, at + piece))));
    near(meter.integrated(), integratedLoudness(channels, rate), 1e-9, 'in pieces');
    assert.throws(() => meter.add([channels[0]!]), RangeError);
  });
});

describe("the preview's make-up gain", () => {
  it('brings a measured programme to −14 LUFS, up or down', () => {
    assert.equal(makeupGainDb(-30), 16);
    assert.equal(makeupGainDb(-8), -6);
    assert.equal(makeupGainDb(-14), 0);
  });

  it('leaves near-silence and what could not be measured alone, as the export does', () => {
    assert.equal(makeupGainDb(-55), 0);
    assert.equal(makeupGainDb(-Infinity), 0);
    assert.equal(makeupGainDb(Number.NaN), 0);
  });
});

describe("the preview's limiter", () => {
  it("undoes the compressor's own make-up gain: about +0.86 dB at −1.5 dBFS, ratio 20", () => {
    const db = 20 * Math.log10(compressorMakeupGain(LIMITER.thresholdDb, LIMITER.ratio));
    // 0 dBFS comes out at −1.5 + 1.5 / 20 = −1.425 dB; 0.6 × 1.425 = 0.855.
    near(db, 0.855, 1e-9, 'make-up');
    assert.equal(compressorMakeupGain(0, 20), 1);
  });
});
