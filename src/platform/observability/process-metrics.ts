import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { MetricsRegistry } from './metrics.ts';

export const SAMPLER_RESOLUTION_MS = 20;

/** What the lag gauge reads of the sampler (Node's IntervalHistogram; tests give their own). */
export type LoopDelaySampler = Pick<
  IntervalHistogram,
  'count' | 'percentile' | 'reset' | 'enable' | 'disable'
>;

/**
 * Process gauges read at scrape time: resident memory, heap in use, and the event-loop delay (p99 over the
 * last scrape interval; the sampler's histogram is reset on every read). Returns a function that stops the
 * sampler.
 */
export function registerProcessMetrics(
  registry: MetricsRegistry,
  loopDelay: LoopDelaySampler = monitorEventLoopDelay({ resolution: SAMPLER_RESOLUTION_MS }),
): () => void {
  loopDelay.enable();
  registry.gauge(
    { name: 'mf_process_resident_memory_bytes', help: 'Resident set size of the process.', labels: [] },
    () => [[[], process.memoryUsage.rss()]],
  );
  registry.gauge({ name: 'mf_nodejs_heap_used_bytes', help: 'V8 heap in use.', labels: [] }, () => [
    [[], process.memoryUsage().heapUsed],
  ]);
  registry.gauge(
    {
      name: 'mf_nodejs_eventloop_lag_seconds',
      help: 'Event-loop delay, 99th percentile since the previous scrape.',
      labels: [],
    },
    () => {
      // Before the first sample the histogram reports NaN percentiles and a huge minimum: report 0.
      // The sampler records the time between its timer's runs, so an idle loop reads its resolution.
      const p99 =
        loopDelay.count > 0 ? Math.max(0, loopDelay.percentile(99) / 1e6 - SAMPLER_RESOLUTION_MS) / 1000 : 0;
      loopDelay.reset();
      return [[[], p99]];
    },
  );
  return () => loopDelay.disable();
}
