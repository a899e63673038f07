import {
  AppError,
  newId,
  MediaOverLimit,
  type IntakeResult,
  type MediaIntake,
  type MediaStore,
} from '../../platform/index.ts';
import type { AssetView } from '../../../actors/index.ts';
import { INBOUND_IMAGE_MAX_BYTES } from '../../jobs/index.ts';
import type { TurnSession } from './turn-session.ts';

/** A turn's reference image (`image_urls`): fetched and probed before any charge, an asset once the turn runs. */
export interface TurnReference {
  url: string;
  taken: IntakeResult;
  /** Set once it is an asset of the project (its file is then the asset's). */
  placed: boolean;
}

/**
 * The asset metadata a probe gives (docs/editor.md, Asset): `duration_sec`, `width`, `height` as they apply.
 */
export function metadataOf(
  probed: { duration_sec?: number; width?: number; height?: number },
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    ...extra,
    ...(probed.duration_sec !== undefined ? { duration_sec: probed.duration_sec } : {}),
    ...(probed.width !== undefined ? { width: probed.width } : {}),
    ...(probed.height !== undefined ? { height: probed.height } : {}),
  };
}

/** A turn's reference images, from their URLs to the project's library. */
export interface TurnReferences {
  /** Fetches and probes every URL; on any failure nothing is kept. */
  fetch(urls: readonly string[]): Promise<TurnReference[]>;
  /** Adds them to the library as the running turn's assets. */
  place(session: TurnSession, references: readonly TurnReference[]): Promise<AssetView[]>;
  /** Removes the files of the references that did not become assets. */
  discard(references: readonly TurnReference[]): Promise<void>;
}

/**
 * A turn's reference images (docs/editor.md, Agent turns): fetched through the guarded fetch and probed
 * before anything is charged, added to the library (`source: import`) once the turn runs, and their files
 * removed whenever the turn ends before they became assets (refused, dropped, failed).
 */
export function createTurnReferences(deps: { intake: MediaIntake; store: MediaStore }): TurnReferences {
  /** Removes the files of the references that did not become assets. */
  async function discard(references: readonly TurnReference[]): Promise<void> {
    const loose = references.filter((reference) => !reference.placed);
    await Promise.all(loose.map((one) => deps.store.delete(one.taken.media.id).catch(() => undefined)));
  }

  return {
    discard,

    async fetch(urls: readonly string[]): Promise<TurnReference[]> {
      const taken: TurnReference[] = [];
      try {
        for (const [index, url] of urls.entries()) {
          const field = `image_urls[${index}]`;
          const result = await deps.intake
            .fromUrl(url, { maxBytes: INBOUND_IMAGE_MAX_BYTES, field })
            .catch((error: unknown) => {
              // Over a limit is a fault of this field, a 400 like the others (docs/editor.md "Media limits").
              throw error instanceof MediaOverLimit ? error.forField(field) : error;
            });
          taken.push({ url, taken: result, placed: false });
          if (result.probed.kind !== 'image') throw new AppError('bad_request', `${field} is not an image`);
        }
        return taken;
      } catch (error) {
        await discard(taken);
        throw error;
      }
    },

    async place(session: TurnSession, references: readonly TurnReference[]): Promise<AssetView[]> {
      const added: AssetView[] = [];
      for (const reference of references) {
        const { url, taken } = reference;
        const answer = await session.run((before) =>
          session.commands.add_asset(session.projectId, {
            op_id: session.nextOpId('reference'),
            turn_id: session.turnId,
            before_events: before,
            asset: {
              id: newId('va', 16),
              user_id: session.principal.userId,
              kind: taken.probed.kind,
              source: 'import',
              media_id: taken.media.id,
              content_type: taken.probed.contentType,
              metadata: metadataOf(taken.probed, { source_url: url }),
            },
          }),
        );
        reference.placed = true;
        added.push(answer.asset);
      }
      return added;
    },
  };
}
