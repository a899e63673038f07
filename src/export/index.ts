export type { ExportService } from './export-service.ts';
export { exportFeature } from './feature.ts';
export { videoExporter } from './video-exporter.ts';
