// The corpus of the public API's families: generation jobs, the editor (projects, videos, clips with hostile
// numbers, turns), exports of the timelines the corpus itself fuzzed, and uploads and imports of real, broken
// and hostile media.
import { ImageGenerateBody, VideoGenerateBody } from '../../schemas/jobs.ts';
import {
  plausibleJobValues,
  BROKEN_ENCODINGS,
  oddIds,
  oddValue,
  randomBody,
  randomQuery,
  type Random,
} from '../helpers/fuzz-values.ts';
import { UPLOAD_CONTENT_TYPES } from '../../schemas/vocabulary.ts';
import type { FuzzCase } from './harness.ts';
import type { FuzzProject, World } from './world.ts';

const STUDIO = '/api/v1/media-studio/projects';
/** Real work (an export, a turn behind others in its project's queue) gets a longer deadline. */
export const WORK_TIMEOUT_MS = 120_000;

const json = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Numbers a clip field may be given: in bounds, at them, past them, and not numbers at all. */
const CLIP_NUMBERS = [
  '0',
  '0.5',
  '1',
  '2.5',
  '-1',
  '-0',
  '600',
  '601',
  '3600',
  '3601',
  '86400',
  '86401',
  '1e30',
  '1e309',
  '-1e309',
  '1e-7',
  '"2"',
  'null',
  'true',
  '[]',
];

function plausibleJobField(random: Random, world: World, field: string, privateOnly: boolean): string {
  const urls = privateOnly
    ? [
        'https://localhost/a.png',
        'https://printer.local/a.png',
        'https://127.0.0.1/a.png',
        `${world.baseUrl}/media/${random.pick(BROKEN_ENCODINGS)}`,
      ]
    : ['https://example.com/a.png', world.ownImageUrl];
  const values = plausibleJobValues(random, urls);
  return JSON.stringify(random.pick(values[field] ?? ['x']));
}

/** Generation requests (the poor user's end in 402, the rich user's hang and are cancelled later), job reads. */
export function jobsCase(random: Random, world: World, index: number): FuzzCase {
  const roll = random.int(100);
  if (roll < 60) {
    const rich = random.chance(0.2);
    const video = random.chance(0.5);
    const fields = Object.keys((video ? VideoGenerateBody : ImageGenerateBody).properties);
    const token = rich ? world.rich.token : world.poor.token;
    return {
      family: 'jobs',
      label: `#${index} ${rich ? 'rich' : 'poor'} ${video ? 'video' : 'image'}`,
      method: 'POST',
      path: video ? '/api/v1/video/vidmodel-2/generate' : '/api/v1/image/nano-banana/generate',
      headers: json(token),
      body: randomBody(random, fields, {
        plausible: (field) => plausibleJobField(random, world, field, rich),
        odd: () => oddValue(random, rich ? undefined : { ownBase: world.baseUrl }),
        fixed: rich
          ? [['prompt', JSON.stringify(`[sandbox:hang] ${random.pick(['p', '\ud800', 'é'])}`)]]
          : [],
      }),
    };
  }
  const token = random.pick([world.poor.token, world.rich.token, world.editor.token]);
  if (roll < 80) {
    return {
      family: 'jobs',
      label: `#${index} list jobs`,
      method: 'GET',
      path: `/api/v1/jobs?${randomQuery(random, ['limit', 'status', 'cursor'])}`,
      headers: bearer(token),
    };
  }
  return {
    family: 'jobs',
    label: `#${index} job by odd id`,
    method: random.pick(['GET', 'DELETE']),
    path: `/api/v1/jobs/${random.pick(oddIds(random))}`,
    headers: bearer(token),
    ...(random.chance(0.1)
      ? { headers: { ...bearer(token), 'idempotency-key': random.pick(['k', '', 'x'.repeat(300)]) } }
      : {}),
  };
}

function clipBody(random: Random, project: FuzzProject, numbersOnly: boolean): Buffer {
  const fields = numbersOnly
    ? ['duration_sec', 'trim_start_sec', 'start_sec', 'volume', 'idx']
    : ['video_id', 'track', 'asset_id', 'idx', 'start_sec', 'trim_start_sec', 'duration_sec', 'volume'];
  return randomBody(random, fields, {
    plausible: (field) => {
      if (field === 'track')
        return JSON.stringify(random.pick(['video', 'voice', 'sfx', 'music', 'text', 'VIDEO']));
      if (field === 'asset_id')
        return JSON.stringify(random.pick([...Object.values(project.assets), 'ast_nope']));
      if (field === 'video_id') return JSON.stringify(random.pick([project.videoId, 'vid_nope']));
      if (field === 'volume') return random.pick(['0', '1', '2', '2.5', '-1', '1e309']);
      if (field === 'idx') return random.pick(['0', '1', '3', '-1', '1000000', '1.5']);
      return random.pick(CLIP_NUMBERS);
    },
  });
}

/** Projects, videos, clips with hostile numbers, messages, state reads, and turns of the builtin director. */
export function editorCase(random: Random, world: World, index: number): FuzzCase {
  const project = random.chance(0.7) ? world.scratch : world.exported;
  const headers = json(world.editor.token);
  const projectId = random.chance(0.9) ? project.id : random.pick(oddIds(random));
  const clipId = random.chance(0.85) ? random.pick(project.clipIds) : random.pick(oddIds(random));
  const ifMatch: Record<string, string> = random.chance(0.2)
    ? { 'if-match': random.pick(['0', '"1"', '999999', 'x', '-1', '1e309']) }
    : {};
  const base = { family: 'editor' as const };
  const roll = random.int(100);
  if (project === world.exported) {
    // Its timeline only changes in its numbers, so the exports render what the corpus made of it.
    if (roll < 70) {
      return {
        ...base,
        label: `#${index} exported: patch clip numbers`,
        method: 'PATCH',
        path: `${STUDIO}/${project.id}/clips/${random.pick(project.clipIds)}`,
        headers: { ...headers, ...ifMatch },
        body: clipBody(random, project, true),
      };
    }
    return {
      ...base,
      label: `#${index} exported: state`,
      method: 'GET',
      path: `${STUDIO}/${project.id}?${randomQuery(random, ['video_id'], [project.videoId])}`,
      headers,
    };
  }
  if (roll < 25)
    return {
      ...base,
      label: `#${index} add clip`,
      method: 'POST',
      path: `${STUDIO}/${projectId}/clips`,
      headers: { ...headers, ...ifMatch },
      body: clipBody(random, project, false),
    };
  if (roll < 50)
    return {
      ...base,
      label: `#${index} patch clip`,
      method: 'PATCH',
      path: `${STUDIO}/${projectId}/clips/${clipId}`,
      headers: { ...headers, ...ifMatch },
      body: clipBody(random, project, random.chance(0.5)),
    };
  if (roll < 54)
    return {
      ...base,
      label: `#${index} delete clip`,
      method: 'DELETE',
      path: `${STUDIO}/${projectId}/clips/${clipId}`,
      headers: { ...headers, ...ifMatch },
    };
  if (roll < 62) {
    return {
      ...base,
      label: `#${index} patch project`,
      method: 'PATCH',
      path: `${STUDIO}/${projectId}`,
      headers: { ...headers, ...ifMatch },
      body: randomBody(random, ['name', 'description', 'context_md'], {
        plausible: (field) =>
          JSON.stringify(
            field === 'context_md'
              ? random.pick(['# ctx', 'x'.repeat(100_001)])
              : random.pick(['n', '', 'x'.repeat(121), 'é\ud800']),
          ),
      }),
    };
  }
  if (roll < 68) {
    const video = random.chance(0.5);
    return {
      ...base,
      label: `#${index} ${video ? 'patch' : 'add'} video`,
      method: video ? 'PATCH' : 'POST',
      path: video
        ? `${STUDIO}/${projectId}/videos/${random.chance(0.8) ? project.videoId : random.pick(oddIds(random))}`
        : `${STUDIO}/${projectId}/videos`,
      headers: { ...headers, ...ifMatch },
      body: randomBody(random, ['name', 'aspect_ratio'], {
        plausible: (field) => JSON.stringify(field === 'name' ? 'v' : random.pick(['16:9', '4:5', '21:9'])),
      }),
    };
  }
  if (roll < 76) {
    return {
      ...base,
      label: `#${index} messages`,
      method: 'GET',
      path: `${STUDIO}/${projectId}/videos/${project.videoId}/messages?${randomQuery(random, ['limit', 'cursor'])}`,
      headers,
    };
  }
  if (roll < 84) {
    return {
      ...base,
      label: `#${index} state`,
      method: 'GET',
      path: `${STUDIO}/${projectId}?${randomQuery(random, ['video_id'], [project.videoId])}`,
      headers,
    };
  }
  if (roll < 88) {
    return {
      ...base,
      label: `#${index} create project`,
      method: 'POST',
      path: STUDIO,
      headers,
      body: randomBody(random, ['name', 'description', 'aspect_ratio'], {
        plausible: (field) =>
          JSON.stringify(field === 'aspect_ratio' ? random.pick(['16:9', '9:16', '2:1']) : 'p'),
      }),
    };
  }
  return {
    ...base,
    label: `#${index} instruct`,
    method: 'POST',
    path: `${STUDIO}/${projectId}/instruct`,
    headers,
    timeoutMs: WORK_TIMEOUT_MS,
    body: randomBody(random, ['instruction', 'image_urls', 'video_id'], {
      plausible: (field) => {
        if (field === 'instruction')
          return JSON.stringify(
            random.pick([
              'continue',
              'a 2-scene video about a fox',
              'remove clip 9',
              'move clip 2 to the start',
              'make it 9:16',
              'export it',
              'next!',
              'x'.repeat(8001),
              '',
            ]),
          );
        if (field === 'image_urls')
          return JSON.stringify(
            random.pick([
              [],
              [world.ownImageUrl],
              ['https://printer.local/a.png'],
              ['https://127.0.0.1/a.png'],
            ]),
          );
        return JSON.stringify(random.pick([project.videoId, 'vid_nope']));
      },
      odd: () => oddValue(random, { ownBase: world.baseUrl }),
    }),
  };
}

/** An export of the timeline the corpus fuzzed (or a hostile body for it). */
export function exportCase(random: Random, world: World, index: number): FuzzCase {
  const project = random.chance(0.8) ? world.exported : world.scratch;
  return {
    family: 'export',
    label: `#${index} export`,
    method: 'POST',
    path: `${STUDIO}/${random.chance(0.95) ? project.id : random.pick(oddIds(random))}/export`,
    headers: json(world.editor.token),
    timeoutMs: WORK_TIMEOUT_MS,
    body: random.chance(0.8)
      ? Buffer.from(
          JSON.stringify(
            random.pick([{}, { fit: 'fit' }, { fit: 'fill' }, { video_id: project.videoId, fit: 'fill' }]),
          ),
        )
      : randomBody(random, ['video_id', 'fit', 'quality'], {
          plausible: (field) =>
            JSON.stringify(
              field === 'video_id'
                ? project.videoId
                : random.pick(['fit', 'fill', 'final', 'preview', 'stretch']),
            ),
        }),
  };
}

/** Uploads of real, cut, corrupted and hostile media, and imports of hostile URLs. */
export function uploadCase(random: Random, world: World, index: number): FuzzCase {
  const path = `${STUDIO}/${world.scratch.id}/assets`;
  const auth = bearer(world.editor.token);
  const roll = random.int(100);
  if (roll < 8) {
    return {
      family: 'uploads',
      label: `#${index} the pixel bomb`,
      method: 'POST',
      path,
      headers: { ...auth, 'content-type': 'image/png' },
      body: world.media.pngBomb,
      expect: 415,
    };
  }
  if (roll < 70) {
    const real = random.pick([world.media.png, world.media.wav, world.media.mp4]);
    const shape = random.int(6);
    const body =
      shape === 0
        ? real
        : shape === 1
          ? real.subarray(0, random.int(real.length))
          : shape === 2
            ? Buffer.concat([
                real.subarray(0, 64),
                Buffer.from(Array.from({ length: 2000 }, () => random.int(256))),
              ])
            : shape === 3
              ? Buffer.from(Array.from({ length: random.int(4000) }, () => random.int(256)))
              : shape === 4
                ? Buffer.from('#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile:///etc/passwd\n')
                : Buffer.alloc(0);
    return {
      family: 'uploads',
      label: `#${index} upload shape ${shape}`,
      method: 'POST',
      path,
      headers: {
        ...auth,
        'content-type': random.chance(0.9)
          ? random.pick(UPLOAD_CONTENT_TYPES)
          : random.pick(['text/plain', 'application/octet-stream', 'image/svg+xml', 'video/mp4; x=1']),
        ...(random.chance(0.2) ? { 'x-asset-name': random.pick(['n', 'x'.repeat(500), '%E0%A4%A']) } : {}),
      },
      body,
    };
  }
  return {
    family: 'uploads',
    label: `#${index} import`,
    method: 'POST',
    path,
    headers: json(world.editor.token),
    body: randomBody(random, ['url', 'name'], {
      plausible: (field) =>
        JSON.stringify(
          field === 'name'
            ? 'n'
            : random.pick([
                world.ownImageUrl,
                'https://printer.local/x.png',
                'https://db.internal/x.png',
                'https://x.home.arpa/a.png',
                'https://abc.onion/a.png',
                'https://localhost./a.png',
                'https://127.0.0.1/a.mp4',
                `${world.baseUrl}/media/${random.pick(BROKEN_ENCODINGS)}`,
              ]),
        ),
      odd: () => oddValue(random, { ownBase: world.baseUrl }),
    }),
  };
}
