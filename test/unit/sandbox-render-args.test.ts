import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  FPS,
  centerCaption,
  bottomCaption,
  filter,
  filterValue,
  imageRenderPlan,
  referenceCells,
  sanitizePrompt,
  seededColor,
  toneFrequency,
  videoRenderPlan,
  wrapText,
} from '../../src/jobs/providers/sandbox/render-args.ts';

/** ffmpeg's av_get_token (libavutil/avstring.c): reads up to a terminator, honouring `\` and '...' quoting. */
function getToken(text: string, terminators: string): { token: string; rest: string } {
  let i = 0;
  while (i < text.length && ' \n\t\r'.includes(text[i]!)) i += 1;
  let out = '';
  let keep = 0; // characters that trailing-whitespace trimming must not remove
  while (i < text.length && !terminators.includes(text[i]!)) {
    const c = text[i++]!;
    if (c === '\\' && i < text.length) {
      out += text[i++];
      keep = out.length;
    } else if (c === "'") {
      while (i < text.length && text[i] !== "'") out += text[i++];
      if (i < text.length) {
        i += 1;
        keep = out.length;
      }
    } else out += c;
  }
  while (out.length > keep && ' \n\t\r'.includes(out[out.length - 1]!)) out = out.slice(0, -1);
  return { token: out, rest: text.slice(i) };
}

/** Reads one filter the way ffmpeg does: graph-level token, then `key=value` pairs split on `:`. */
function parseFilter(description: string): { name: string; options: Record<string, string> } {
  const eq = description.indexOf('=');
  const name = description.slice(0, eq);
  const { token, rest } = getToken(description.slice(eq + 1), '[],;');
  assert.equal(rest, '', 'the graph parser stopped early');
  const options: Record<string, string> = {};
  let remaining = token;
  while (remaining) {
    const key = /^[\w\-/.]+/.exec(remaining)![0];
    assert.equal(remaining[key.length], '=');
    const { token: value, rest: after } = getToken(remaining.slice(key.length + 1), ':');
    options[key] = value;
    remaining = after.startsWith(':') ? after.slice(1) : after;
  }
  return { name, options };
}

const files = {
  textFile: '/tmp/scratch/caption.txt',
  fontFile: '/fonts/DejaVuSans.ttf',
  output: '/tmp/out.mp4',
};

describe('filterValue', () => {
  it('leaves plain values and expressions unquoted', () => {
    assert.equal(filterValue('/tmp/a-b_c.txt'), '/tmp/a-b_c.txt');
    assert.equal(filterValue('(w-text_w)/2'), '(w-text_w)/2');
    assert.equal(filterValue(24), '24');
  });

  it('survives both of ffmpeg parsing levels unchanged, whatever the characters', () => {
    const nasty = [
      "/tmp/it's here/[dir], a;b:c\\d %{pts} =x",
      "'",
      "\\'",
      'trailing space ',
      ' leading space',
      'min(a,b)+sin(2*PI*t)',
      'ünïcödé · 日本',
    ];
    for (const value of nasty) {
      const parsed = parseFilter(filter('drawtext', { textfile: value, x: 1, y: value }));
      assert.deepEqual(parsed, { name: 'drawtext', options: { textfile: value, x: '1', y: value } }, value);
    }
  });
});

describe('sanitizePrompt', () => {
  it('keeps quotes, colons, backslashes and %{...} as typed', () => {
    const prompt = `say "hi": it's C:\\dir %{pts:hms} [a];b,c`;
    assert.equal(sanitizePrompt(prompt), prompt);
  });

  it('turns every line break into \\n, tabs into spaces, and drops control characters', () => {
    assert.equal(sanitizePrompt('a\r\nb\rc\u2028d'), 'a\nb\nc\nd');
    assert.equal(sanitizePrompt('a\tb   c'), 'a b c');
    assert.equal(sanitizePrompt('a\u0000b\u0007c\u202ed\u200be'), 'abcde');
    assert.equal(sanitizePrompt('a\n\n\n\n\nb'), 'a\n\nb');
  });

  it('shows a placeholder for an empty prompt (drawtext cannot load an empty file)', () => {
    assert.equal(sanitizePrompt(' \n\t '), '(no prompt)');
    assert.equal(sanitizePrompt(''), '(no prompt)');
  });
});

describe('wrapText', () => {
  it('breaks at spaces, never past the column limit', () => {
    const lines = wrapText('the quick brown fox jumps over the lazy dog', 10, 10);
    assert.deepEqual(lines, ['the quick', 'brown fox', 'jumps over', 'the lazy', 'dog']);
  });

  it('keeps the prompt own line breaks', () => {
    assert.deepEqual(wrapText('one\ntwo three', 20, 5), ['one', 'two three']);
  });

  it('splits a word longer than a line', () => {
    assert.deepEqual(wrapText('abcdefghijkl xy', 5, 10), ['abcde', 'fghij', 'kl xy']);
  });

  it('ends the last allowed line with an ellipsis when the text is longer', () => {
    const lines = wrapText('aaaa bbbb cccc dddd eeee', 9, 2);
    assert.deepEqual(lines, ['aaaa bbbb', 'cccc ddd…']);
    assert.ok(lines.every((line) => line.length <= 9));
  });

  it('counts East Asian wide characters as two columns', () => {
    assert.deepEqual(wrapText('日本語のテキスト', 6, 10), ['日本語', 'のテキ', 'スト']);
  });
});

describe('captions', () => {
  it('wraps a long prompt into a bounded number of lines that fit the frame', () => {
    const prompt = 'a lighthouse at dawn with waves crashing '.repeat(40);
    for (const [width, height] of [
      [1280, 720],
      [720, 1280],
      [854, 480],
      [1024, 1024],
    ] as const) {
      const caption = centerCaption(prompt, width, height);
      const lines = caption.text.split('\n');
      assert.ok(lines.length >= 2 && lines.length <= 10, `${width}x${height}: ${lines.length} lines`);
      const widest = Math.max(...lines.map((line) => line.length)) * caption.fontSize * 0.6;
      assert.ok(widest <= width * 0.9, `${width}x${height}: ${widest}px`);
      assert.ok(lines.length * caption.fontSize * 1.3 <= height * 0.75);
      assert.ok(lines.at(-1)!.endsWith('…'));
    }
  });

  it('keeps the bottom caption over an image to three smaller lines', () => {
    const caption = bottomCaption('word '.repeat(200), 1280, 720);
    assert.equal(caption.text.split('\n').length, 3);
    assert.ok(caption.fontSize < centerCaption('x', 1280, 720).fontSize);
  });
});

describe('seeded variation', () => {
  it('chooses the same dark colour for the same seed and different ones across seeds', () => {
    assert.equal(seededColor(42), seededColor(42));
    const colours = new Set(Array.from({ length: 20 }, (_, seed) => seededColor(seed)));
    assert.ok(colours.size >= 15, `${colours.size} distinct colours`);
    for (const colour of [
      ...colours,
      seededColor(-5),
      seededColor(2 ** 40 + 3),
      seededColor(Number.MAX_SAFE_INTEGER),
    ]) {
      assert.match(colour, /^0x[0-9a-f]{6}$/);
      const [r, g, b] = [1, 3, 5].map((at) => parseInt(colour.slice(1 + at, 3 + at), 16));
      assert.ok(Math.max(r!, g!, b!) < 160, `${colour} is too light for white text`);
    }
    assert.notEqual(seededColor(7, 0), seededColor(7, 1));
  });

  it('picks an audible tone from the seed', () => {
    for (let seed = 0; seed < 50; seed += 1) {
      const hz = toneFrequency(seed);
      assert.ok(hz >= 220 && hz <= 440, `${hz}`);
    }
  });
});

describe('videoRenderPlan', () => {
  const spec = {
    prompt: 'hello "world"',
    durationSeconds: 15,
    width: 1280,
    height: 720,
    audio: false,
    seed: 3,
  };

  function optionAfter(args: string[], flag: string): string | undefined {
    const index = args.indexOf(flag);
    return index >= 0 ? args[index + 1] : undefined;
  }

  it('renders a text video without any audio stream', () => {
    const { args, captionText } = videoRenderPlan(spec, files);
    assert.equal(captionText, 'hello "world"');
    assert.ok(!args.includes('-i'), 'a text video has no input file');
    assert.ok(args.includes('-an'));
    assert.ok(!args.includes('-c:a'));
    assert.equal(optionAfter(args, '-t'), '15');
    assert.equal(optionAfter(args, '-c:v'), 'libx264');
    assert.equal(optionAfter(args, '-pix_fmt'), 'yuv420p');
    assert.equal(optionAfter(args, '-movflags'), '+faststart');
    assert.equal(args.at(-1), 'file:/tmp/out.mp4');
    const graph = optionAfter(args, '-filter_complex')!;
    assert.match(graph, /^color=c=0x[0-9a-f]{6}:s=1280x720:r=24,drawtext=/);
    assert.match(graph, /textfile=\/tmp\/scratch\/caption\.txt/);
    assert.match(graph, /expansion=none/);
    assert.ok(!graph.includes('[a]'));
  });

  it('adds a quiet AAC tone only when audio is asked for', () => {
    const { args } = videoRenderPlan({ ...spec, audio: true }, files);
    const graph = optionAfter(args, '-filter_complex')!;
    assert.match(graph, /;sine=frequency=\d+:sample_rate=48000,volume=volume=0\.08\[a\]$/);
    assert.deepEqual(
      args.filter((arg, i) => args[i - 1] === '-map'),
      ['[v]', '[a]'],
    );
    assert.equal(optionAfter(args, '-c:a'), 'aac');
    assert.ok(!args.includes('-an'));
  });

  it('never puts the prompt itself on the command line', () => {
    const prompt = "x'; rm -rf / ; %{pts} $(reboot)";
    const { args, captionText } = videoRenderPlan({ ...spec, prompt }, files);
    assert.equal(captionText, prompt);
    assert.ok(args.every((arg) => !arg.includes('rm -rf') && !arg.includes('reboot')));
  });

  it('zooms over the input image for the whole duration, with the caption at the bottom', () => {
    const { args } = videoRenderPlan(
      { ...spec, durationSeconds: 5 },
      { ...files, imageFile: '/tmp/scratch/input-0' },
    );
    assert.equal(optionAfter(args, '-i'), 'file:/tmp/scratch/input-0');
    const graph = optionAfter(args, '-filter_complex')!;
    assert.match(graph, /^\[0:v\]scale=w=1280:h=720:force_original_aspect_ratio=increase,crop=w=1280:h=720/);
    assert.match(
      graph,
      new RegExp(`zoompan=z=1\\+0\\.15\\*on/${5 * FPS}:.*:d=${5 * FPS}:s=1280x720:fps=${FPS}`),
    );
    assert.match(graph, /y=h-text_h-43/);
    assert.equal(optionAfter(args, '-t'), '5');
  });
});

describe('imageRenderPlan', () => {
  const spec = { prompt: 'a cat', width: 1024, height: 576, count: 3, seed: 9 };
  const outputs = ['/tmp/o0.png', '/tmp/o1.png', '/tmp/o2.png'];

  it('writes one PNG per image from one ffmpeg run, each on its own seeded colour', () => {
    const { args } = imageRenderPlan(spec, { ...files, referenceFiles: [], outputs });
    assert.ok(!args.includes('-i'));
    for (const [i, output] of outputs.entries()) {
      const at = args.indexOf(`file:${output}`);
      assert.deepEqual(args.slice(at - 10, at + 1), [
        '-map',
        `[o${i}]`,
        '-frames:v',
        '1',
        '-c:v',
        'png',
        '-f',
        'image2',
        '-update',
        '1',
        `file:${output}`,
      ]);
    }
    const graph = args[args.indexOf('-filter_complex') + 1]!;
    const colours = [...graph.matchAll(/color=c=(0x[0-9a-f]{6})/g)].map((m) => m[1]);
    assert.equal(new Set(colours).size, 3);
  });

  it('composites every reference into every image in edit mode', () => {
    const referenceFiles = ['/tmp/scratch/input-0', '/tmp/scratch/input-1'];
    const { args } = imageRenderPlan(spec, { ...files, referenceFiles, outputs });
    assert.deepEqual(
      args.filter((arg, i) => args[i - 1] === '-i'),
      referenceFiles.map((file) => `file:${file}`),
    );
    const graph = args[args.indexOf('-filter_complex') + 1]!;
    assert.equal(graph.match(/overlay=/g)?.length, 2 * 3);
    assert.equal(graph.match(/split=outputs=3/g)?.length, 2);
  });

  it('needs one output path per image', () => {
    assert.throws(
      () => imageRenderPlan(spec, { ...files, referenceFiles: [], outputs: ['/tmp/o0.png'] }),
      RangeError,
    );
  });
});

describe('referenceCells', () => {
  it('lays references out inside the frame, above the caption band, without overlapping', () => {
    for (const [width, height] of [
      [1024, 576],
      [576, 1024],
      [1024, 1024],
    ] as const) {
      for (let total = 1; total <= 9; total += 1) {
        const cells = referenceCells(total, width, height);
        assert.equal(cells.length, total);
        for (const [i, a] of cells.entries()) {
          assert.ok(a.width > 50 && a.height > 50, `${width}x${height}/${total}: cell ${i} too small`);
          assert.ok(a.x >= 0 && a.x + a.width <= width);
          assert.ok(a.y >= 0 && a.y + a.height <= height * 0.8);
          for (const b of cells.slice(i + 1)) {
            const apart =
              a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
            assert.ok(apart, `${width}x${height}/${total}: cells overlap`);
          }
        }
      }
    }
  });
});
