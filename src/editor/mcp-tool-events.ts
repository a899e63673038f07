import type { EventBus } from '../platform/index.ts';
import type { ProjectEvent } from '../../actors/index.ts';

/** Listens to a project's events while `work` runs (nothing without a bus). */
export function listening<T>(
  events: Pick<EventBus, 'subscribe'> | undefined,
  projectId: string,
  onEvent: (event: ProjectEvent) => void,
  work: () => Promise<T>,
): Promise<T> {
  const unsubscribe = events?.subscribe(`project.${projectId}`, (event) => {
    if (event && typeof event === 'object') onEvent(event as ProjectEvent);
  });
  return work().finally(() => unsubscribe?.());
}

/** A short account of an event, as a progress message. */
export function eventMessage(event: ProjectEvent): string {
  const data = event.data;
  if (event.type === 'tool.started' || event.type === 'tool.finished')
    return `${event.type}: ${String(data.name)}`;
  if (event.type === 'media.progress')
    return `media ${String(data.status)} (${Math.round(Number(data.elapsed_ms) / 1000)} s)`;
  return event.type;
}
