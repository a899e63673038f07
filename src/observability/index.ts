export {
  createMetricsRegistry,
  DEFAULT_BUCKETS,
  type Counter,
  type GaugeSamples,
  type Histogram,
  type HistogramOptions,
  type MetricOptions,
  type MetricsRegistry,
} from './metrics.ts';
export { registerProcessMetrics } from './process-metrics.ts';
export { actorMetrics } from './actor-metrics.ts';
