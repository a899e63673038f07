// The media of a finished fal request: its result names a `video` or `images`, each by URL (and content type,
// when fal knows it); each output is downloaded only when the jobs service opens it.
import type { ProviderOutput } from '../ports/media-provider.ts';
import { openDownload, type DownloadLimits } from './fal-download.ts';
import { isRecord } from './fal-http.ts';

/** The outputs a fal result body names (its video, then its images), each downloaded within `limits`. */
export function falOutputs(body: Record<string, unknown>, limits: DownloadLimits): ProviderOutput[] {
  const output = (url: unknown, contentType: unknown, fallbackType: string): ProviderOutput | undefined => {
    if (typeof url !== 'string' || !url) return undefined;
    return {
      contentType: typeof contentType === 'string' && contentType ? contentType : fallbackType,
      open: () => openDownload(url, limits),
    };
  };
  const outputs: ProviderOutput[] = [];
  if (isRecord(body.video)) {
    const video = output(body.video.url, body.video.content_type, 'video/mp4');
    if (video) outputs.push(video);
  }
  if (Array.isArray(body.images)) {
    for (const image of body.images) {
      if (!isRecord(image)) continue;
      const produced = output(image.url, image.content_type, imageTypeOf(image.url));
      if (produced) outputs.push(produced);
    }
  }
  return outputs;
}

/** An image's type from its URL's extension, when fal gave none; PNG unless it says otherwise. */
function imageTypeOf(url: unknown): string {
  const path = typeof url === 'string' ? url.split(/[?#]/)[0]!.toLowerCase() : '';
  if (path.endsWith('.jpg') || path.endsWith('.jpeg')) return 'image/jpeg';
  if (path.endsWith('.webp')) return 'image/webp';
  return 'image/png';
}
