export { eventsFeature } from './feature.ts';
