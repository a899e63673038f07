import type { ExportPlan, ExportSource } from '../../workers/index.ts';

// What travels between the nodes of a cluster when one export's segments are encoded wherever a worker is free
// (docs/operator.md, The segment cache: segments across a cluster): one work item per segment on the JetStream
// work queue, and what nodes say back about it and about the export on core NATS. Plain JSON; the plan goes
// without local paths, since every node stages its own copies of the sources out of the shared media store.

/** The work-queue stream of segment items (work-queue retention: an acknowledged item is gone). */
export const SEGMENT_STREAM = 'MF_EXPORT_SEGMENTS';
/** Every export's items: `mf.export.segment.work.<exportId>` (one subject per export, so it can be purged). */
export const SEGMENT_WORK_SUBJECTS = 'mf.export.segment.work.*';
/** The durable consumer every node pulls from. */
export const SEGMENT_CONSUMER = 'mf_segment_encoders';

export const workSubject = (exportId: string) => `mf.export.segment.work.${exportId}`;
/** What nodes tell the requesting node about its items (`SegmentNews`). */
export const newsSubject = (exportId: string) => `mf.export.segment.done.${exportId}`;
/** The requesting node gave up on the export: nodes stop its encodes and drop its items. */
export const abortSubject = (exportId: string) => `mf.export.segment.abort.${exportId}`;
export const ABORT_SUBJECTS = 'mf.export.segment.abort.*';

/** One segment to encode for one export. */
export interface SegmentItem {
  export_id: string;
  user_id: string;
  project_id: string;
  /** The segment's key (segments.ts): the item encodes the plan's segment of this key. */
  key: string;
  /** Epoch ms: past it the export has failed, and the item is dropped or its encode stopped. */
  deadline: number;
  /** The export's plan, every source named by its `contentId` (`<mediaId> <etag>`), no path in it. */
  plan: ExportPlan;
}

/** What a node says of an item: it started encoding, the segment is in the cache, or it failed (no retry). */
export type SegmentNews =
  | { key: string; state: 'started'; node: string }
  | { key: string; state: 'encoded'; node: string }
  | { key: string; state: 'failed'; node: string; code: string; message: string };

/** The abort of an export's items, with the export's deadline (after it, no item of the export is wanted). */
export interface SegmentAbort {
  deadline: number;
}

/**
 * Whether the plan can travel to another node: every picture source has a content id (`portablePlan`), the
 * only name of it that means something there.
 */
export const travels = (plan: ExportPlan): boolean => plan.picture.every((clip) => clip.source.contentId);

/**
 * The plan as an item carries it: sources without their local paths (a node stages its own), no output path,
 * no measured loudness and no `segmented` (the encoding node sets its own). Undefined when a picture source has
 * no content id: then nothing but its local path names it, which means nothing on another node.
 */
export function portablePlan(plan: ExportPlan): ExportPlan | undefined {
  if (!travels(plan)) return undefined;
  const { segmented: _segmented, measuredLoudness: _measured, ...rest } = plan;
  const portable = (source: ExportSource): ExportSource => ({ ...source, path: '' });
  return {
    ...rest,
    picture: plan.picture.map((clip) => ({ ...clip, source: portable(clip.source) })),
    sounds: plan.sounds.map((clip) => ({ ...clip, source: portable(clip.source) })),
    output: { ...plan.output, path: '' },
  };
}

/** The stored media a content id names (`<mediaId> <etag>`: workspace.ts), and the etag it was staged at. */
export function mediaOf(contentId: string): { mediaId: string; etag: string } {
  const at = contentId.indexOf(' ');
  return at < 0
    ? { mediaId: contentId, etag: '' }
    : { mediaId: contentId.slice(0, at), etag: contentId.slice(at + 1) };
}

/** An item as received, or undefined when it is not one (only nodes of the cluster publish on the subject). */
export function parseItem(data: unknown): SegmentItem | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const item = data as Partial<SegmentItem>;
  const text = (value: unknown) => typeof value === 'string' && value.length > 0;
  if (!text(item.export_id) || !text(item.user_id) || !text(item.project_id) || !text(item.key))
    return undefined;
  if (typeof item.deadline !== 'number') return undefined;
  const plan = item.plan;
  if (
    typeof plan !== 'object' ||
    plan === null ||
    !Array.isArray(plan.picture) ||
    !Array.isArray(plan.sounds)
  ) {
    return undefined;
  }
  if (plan.picture.some((clip) => typeof clip?.source?.contentId !== 'string')) return undefined;
  return item as SegmentItem;
}
